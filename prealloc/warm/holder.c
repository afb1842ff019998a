/* SPDX-License-Identifier: MIT */
/*
 * What a holder may have done to its own file, as the warm pool finds it
 * when the file comes back (docs/warm.md, "Threat model"): grown it past
 * its record (ftruncate, fallocate, a shared mapping past the end, which
 * on hugetlbfs reserves pages and, writable, moves the end), cut at once
 * and counted; linked it elsewhere, QUARANTINED, counted once, logged, and
 * kept recorded (the warm pool's link with it) while another link holds its
 * memory; kept a way to it no lease sees (an O_PATH fd), so that a file
 * the warm pool lets go is emptied first, with a lease, past its end too.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

/* Reserved hugepages of page_size (not yet faulted), system-wide; 0 for 4k or unreadable. */
static uint64_t reserved_pages(struct prealloc_ctx *ctx, uint64_t page_size)
{
	uint64_t free_pages, resv = 0;

	if (page_size == PREALLOC_PAGE_4K || hugetlb_global(ctx, page_size, &free_pages, &resv) < 0)
		return 0;
	return resv;
}

uint64_t warm_trim(struct prealloc_ctx *ctx, const struct record *r, int fd)
{
	uint64_t resv, now, cut, keep;
	struct stat before, after;

	if (fstat(fd, &before) < 0)
		return 0;
	/* A file cut shorter keeps its size (not its record's: fill removes it), nothing past. */
	keep = MIN((uint64_t)before.st_size, r->size);
	resv = reserved_pages(ctx, r->page_size);
	/*
	 * Always, even at its record's size: what a mapping past the end
	 * reserved shows in no size and no block count, and only a truncate
	 * gives a hugetlbfs inode's reservations back (a punched hole keeps
	 * those no page backs).
	 */
	if (ftruncate(fd, (off_t)keep) < 0 || fstat(fd, &after) < 0)
		return 0;
	cut = before.st_blocks > after.st_blocks
		      ? (uint64_t)(before.st_blocks - after.st_blocks) * 512 : 0;
	/* Best effort: others reserve and fault meanwhile. */
	now = reserved_pages(ctx, r->page_size);
	cut += (resv > now ? resv - now : 0) * r->page_size;
	if (cut)
		counter_add(ctx, r->dev, r->warm_node, r->page_size, COUNTER_TRIMMED, cut);
	return cut;
}

void warm_release_if_sole(const struct record *c)
{
	struct statx stx;
	/* As warm_open: never a wait on a lease its holder took. */
	int fd = open_no_lease_wait(AT_FDCWD, c->tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	/*
	 * Truncated, not punched: every page and every reservation goes,
	 * past its end too, so that what an O_PATH descriptor keeps alive
	 * holds no memory at all.
	 */
	if (file_statx(fd, "", AT_EMPTY_PATH, &stx) == 0 && record_is_file(c, &stx) &&
	    stx.stx_nlink == 1 && file_lease_take(fd) == 0) {
		(void)!ftruncate(fd, 0);
		file_lease_drop(fd);
	}
	close(fd);
}

bool warm_linked_elsewhere(const struct record *r)
{
	struct statx stx;

	return file_statx(AT_FDCWD, r->tmp, AT_SYMLINK_NOFOLLOW, &stx) == 0 &&
	       record_is_file(r, &stx) && stx.stx_nlink > 1;
}

uint64_t warm_held_bytes(const struct record *r)
{
	struct statx stx;

	if (!r->has_file || file_statx(AT_FDCWD, r->tmp, AT_SYMLINK_NOFOLLOW, &stx) < 0 ||
	    !record_is_file(r, &stx))
		return 0;
	return stx.stx_blocks * 512;
}

void warm_quarantine(struct prealloc_ctx *ctx, struct store *s, struct record *r, const char *why)
{
	if (r->warm == PREALLOC_WARM_QUARANTINED ||
	    warm_move(NULL, NULL, r, PREALLOC_WARM_QUARANTINED) < 0)
		return;
	counter_add(ctx, r->dev, r->warm_node, r->page_size, COUNTER_QUARANTINES, 1);
	store_note(ctx, s, PREALLOC_LOG_WARNING,
		   "warm file %s quarantined (%s): never handed out again, and kept recorded, "
		   "its memory shown, until no link but the warm pool's is left", r->tmp, why);
}

const char *warm_check_why(int check)
{
	if (check == -EMLINK)
		return "a link besides the warm pool's";
	if (check == -EPERM)
		return "it could not be made root's";
	return strerror(-check);
}
