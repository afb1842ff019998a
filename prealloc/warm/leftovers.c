/* SPDX-License-Identifier: MIT */
/*
 * What the pass (fill.c) finds left over, under the store's lock: a clear
 * whose fill died (CLEARING, DIRTY again), a new file whose run died
 * (POPULATING: its file and growth go), a removal that died part-way
 * (RELEASING: finished), and QUARANTINED files no link of
 * their holders' keeps (removed with their growth). Files back from their
 * holders are give.c's (warm_returns_pass, before it, with the holders'
 * side done outside the lock).
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

/*
 * Under the lock: CLEARING left by a fill that died is DIRTY again; a new
 * file whose run died goes; QUARANTINED files removed with their growth.
 * (Files back from their holders: warm_returns_pass, before it, with the
 * holders' side done outside the lock.)
 */
int warm_returns(struct prealloc_ctx *ctx, struct store *s,
			struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };
	int err = 0;

	for (size_t i = 0; i < s->nr; i++) {
		struct record *r = &s->r[i];

		/*
		 * Only a dead fill's, or this process's own left by a step that
		 * failed (a pass here starts none before this): a live one (another
		 * pass, now) is still clearing it.
		 */
		if (err == 0 && r->warm == PREALLOC_WARM_CLEARING &&
		    (!owner_alive(ctx, &r->owner) || r->owner.pid == getpid())) {
			memset(&r->owner, 0, sizeof(r->owner));
			err = warm_move(ctx, s, r, PREALLOC_WARM_DIRTY);
		}
		/* A new file whose run died (a serve stopped by SIGKILL): its file and growth go. */
		if (err == 0 && r->warm == PREALLOC_WARM_POPULATING && !owner_alive(ctx, &r->owner)) {
			size_t before = s->nr;

			err = record_settle(ctx, s, i, true, &rel);
			if (s->nr < before) {
				i--;
				continue;
			}
		}
		/*
		 * A file whose removal died part-way (a drop killed between its
		 * RELEASING save and the next: its name may be gone already):
		 * removed now, else fill would count it and gc then take it.
		 */
		if (err == 0 && r->warm != WARM_NONE && r->state == PREALLOC_RECORD_RELEASING) {
			size_t before = s->nr;

			err = record_settle(ctx, s, i, true, &rel);
			if (s->nr < before) {
				i--;
				continue;
			}
		}
		/* Kept, and shown, while a link of its holder's holds its memory. */
		if (err == 0 && r->warm == PREALLOC_WARM_QUARANTINED && !warm_linked_elsewhere(r)) {
			size_t before = s->nr;
			uint64_t bytes = r->size;

			warm_release_if_sole(r);	/* nothing left to an O_PATH fd */
			err = record_settle(ctx, s, i, true, &rel);
			/* Else its pages are still someone's: settled again by a later pass. */
			if (s->nr < before) {
				info->dropped++;
				info->dropped_bytes += bytes;
				i--;	/* the record left the store */
			}
		}
		if (err < 0)
			return err;
	}
	return 0;
}

