/* SPDX-License-Identifier: MIT */
/*
 * `prealloc vfio-map --device BDF FILE`: DMA-map (pin) a prepared guest
 * memory file for a PCI device bound to vfio-pci, as a VMM would, and
 * report what the pin cost per node; with --hold keep it mapped until
 * SIGINT/SIGTERM (an operator watches VmLck grow), then unmap.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

struct vfio_args {
	const char *device;
	const char *file;
	uint64_t iova;
	bool fixed, hold, json, force, quiet, iommufd;
};

static int parse_args(int argc, char **argv, struct vfio_args *a)
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "iova", required_argument, NULL, 'i' },
		{ "hold", no_argument, NULL, 'H' },
		{ "iommufd", no_argument, NULL, 'I' },
		{ "json", no_argument, NULL, 'j' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "d:i:HIjfqh";
	char *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		switch (c) {
		case 'd': a->device = optarg; break;
		case 'i':
			errno = 0;
			a->iova = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				cli_error("vfio-map: bad --iova '%s' (an address, e.g. 0x100000000)", optarg);
				return -EXIT_USAGE;
			}
			a->fixed = true;
			break;
		case 'H': a->hold = true; break;
		case 'I': a->iommufd = true; break;
		case 'j': a->json = true; break;
		case 'f': a->force = true; break;
		case 'q': a->quiet = true; break;
		case 'h':
			printf("Usage: prealloc vfio-map --device BDF FILE [--iommufd] [--iova ADDR] [--hold] "
			       "[--json] [--force] [-q]\n"
			       "DMA-map (pin) a file prepared by prealloc for a PCI device bound to vfio-pci,\n"
			       "and report the time and GB/s of the map per node. --iova maps at ADDR, else\n"
			       "the lowest usable IOVA; --hold keeps the mapping until SIGINT/SIGTERM.\n"
			       "--iommufd maps through /dev/iommu and the device's VFIO cdev instead of a\n"
			       "type1 container. --force maps a file prealloc did not prepare.\n");
			return 1;
		default:
			return -option_error("vfio-map", argv, short_opts, opts);
		}
	}
	if (!a->device || optind != argc - 1) {
		cli_error("vfio-map: give --device BDF and one FILE");
		return -EXIT_USAGE;
	}
	a->file = argv[optind];
	return 0;
}

/* 1 when the store holds a ready record for the file at path: its path and its inode. */
static int prepared_by_us(struct prealloc_ctx *ctx, const char *path)
{
	struct prealloc_record_info ri = { .size = sizeof(ri) };
	char real[PATH_MAX];
	struct stat st;

	if (!realpath(path, real) || stat(real, &st) < 0)
		return 0;
	for (unsigned int i = 0; prealloc_record(ctx, i, &ri) == 0; i++)
		if (ri.has_file && ri.state == PREALLOC_RECORD_READY && !strcmp(ri.path, real) &&
		    ri.dev == (uint64_t)st.st_dev && ri.ino == (uint64_t)st.st_ino)
			return 1;
	return 0;
}

static int open_failed(const struct vfio_args *a, const struct prealloc_vfio_info *vi)
{
	cli_error("vfio-map: %s", vi->message[0] ? vi->message : strerror(-vi->error));
	if (vi->step == PREALLOC_VFIO_STEP_DEVICE && vi->error == -ENOENT)
		return EXIT_USAGE;
	(void)a;
	return vi->step == PREALLOC_VFIO_STEP_NONE ? EXIT_FAILURE_RUN : EXIT_ENVIRONMENT;
}


static void print_json(const struct vfio_args *a, const struct prealloc_vfio_info *vi,
		       const struct prealloc_vfio_map_info *mi, uint64_t page_size)
{
	json_object *o = json_object_new_object(), *segs = json_object_new_array();
	json_object *nodes = json_object_new_array();

	json_object_object_add(o, "command", json_object_new_string("vfio-map"));
	json_object_object_add(o, "file", json_object_new_string(a->file));
	json_object_object_add(o, "device", json_object_new_string(a->device));
	json_object_object_add(o, "group", json_object_new_int(vi->group));
	json_object_object_add(o, "iommu_type", json_object_new_int(vi->iommu_type));
	json_object_object_add(o, "backend", json_object_new_string(a->iommufd ? "iommufd" : "type1"));
	json_object_object_add(o, "ioas_id", a->iommufd ? json_object_new_int64(vi->ioas_id) : NULL);
	json_object_object_add(o, "map_file", json_object_new_boolean(a->iommufd && mi->map_file));
	json_object_object_add(o, "page_size", json_object_new_uint64(page_size));
	json_object_object_add(o, "bytes", json_object_new_uint64(mi->bytes));
	json_object_object_add(o, "seconds", json_double(mi->seconds));
	json_object_object_add(o, "gb_per_s", json_double(gbps(mi->bytes, mi->seconds)));
	json_object_object_add(o, "mappings", json_object_new_int((int)mi->mappings));
	json_object_object_add(o, "locked_limit", mi->locked_limit == UINT64_MAX
				? NULL : json_object_new_uint64(mi->locked_limit));
	json_object_object_add(o, "held", json_object_new_boolean(a->hold));
	for (unsigned int i = 0; i < mi->nr_segments; i++) {
		json_object *s = json_object_new_object();

		json_object_object_add(s, "iova", json_object_new_uint64(mi->segments[i].iova));
		json_object_object_add(s, "offset", json_object_new_uint64(mi->segments[i].offset));
		json_object_object_add(s, "length", json_object_new_uint64(mi->segments[i].length));
		json_object_array_add(segs, s);
	}
	json_object_object_add(o, "segments", segs);
	for (unsigned int i = 0; i < mi->nr_nodes; i++) {
		const struct prealloc_vfio_node_map *n = &mi->nodes[i];
		json_object *j = json_object_new_object();

		json_object_object_add(j, "node", json_object_new_int(n->node));
		json_object_object_add(j, "bytes", json_object_new_uint64(n->bytes));
		json_object_object_add(j, "seconds", json_double(n->seconds));
		json_object_object_add(j, "gb_per_s", json_double(gbps(n->bytes, n->seconds)));
		json_object_array_add(nodes, j);
	}
	json_object_object_add(o, "nodes", nodes);
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static void print_human(const struct vfio_args *a, const struct prealloc_vfio_info *vi,
			const struct prealloc_vfio_map_info *mi, uint64_t page_size)
{
	char sz[32], nb[32];

	printf("mapped %s (%s, %s pages) for %s, IOMMU group %d: %.6f s, %.2f GB/s, "
	       "%u mappings\n", a->file, prealloc_format_size(mi->bytes, sz, sizeof(sz)),
	       page_label(page_size), a->device, vi->group, mi->seconds,
	       gbps(mi->bytes, mi->seconds), mi->mappings);
	if (a->iommufd)
		printf("  through iommufd: IOAS %u, %s, by %s\n", vi->ioas_id, vi->cdev,
		       mi->map_file ? "IOMMU_IOAS_MAP_FILE" : "IOMMU_IOAS_MAP");
	for (unsigned int i = 0; i < mi->nr_segments; i++)
		printf("  IOVA 0x%" PRIx64 "-0x%" PRIx64 " <- file offset 0x%" PRIx64 "\n",
		       mi->segments[i].iova, mi->segments[i].iova + mi->segments[i].length - 1,
		       mi->segments[i].offset);
	for (unsigned int i = 0; i < mi->nr_nodes; i++)
		printf("  node %d: %s in %.6f s, %.2f GB/s\n", mi->nodes[i].node,
		       prealloc_format_size(mi->nodes[i].bytes, nb, sizeof(nb)), mi->nodes[i].seconds,
		       gbps(mi->nodes[i].bytes, mi->nodes[i].seconds));
}

static int map_failed(const struct prealloc_vfio_map_info *mi, int r)
{
	cli_error("vfio-map: %s", mi->message[0] ? mi->message : strerror(-r));
	switch (mi->step) {
	case PREALLOC_VFIO_STEP_MEMLOCK:
		return EXIT_NO_MEMORY;
	case PREALLOC_VFIO_STEP_FIT:
	case PREALLOC_VFIO_STEP_INFO:
		return EXIT_ENVIRONMENT;
	default:
		return EXIT_FAILURE_RUN;
	}
}

/* Until SIGINT/SIGTERM/SIGHUP: the mapping stays. */
static int hold(int sfd)
{
	struct pollfd pfd = { .fd = sfd, .events = POLLIN };
	int sig;

	cli_warn("holding the mapping (pid %d) until SIGINT or SIGTERM", (int)getpid());
	while (!(sig = signal_pending(sfd)))
		poll(&pfd, 1, -1);
	return sig;
}

/* The region is open and the container too: map, report, hold, unmap. */
static int map_and_report(const struct vfio_args *a, struct prealloc_vfio *v,
			  const struct prealloc_vfio_info *vi, struct prealloc_region *reg)
{
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo), .iova = a->iova,
					     .flags = a->fixed ? PREALLOC_VFIO_MAP_FIXED : 0 };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_job *job = NULL;
	struct cli_wait w;
	sigset_t old;
	int sfd, sig, r, ret = EXIT_OK;

	cli_wait_open(&w);
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_NONE,
					.completion = &w.completion };
	sfd = signals_catch(&old);
	r = prealloc_vfio_map_start(v, reg, &jo, &mo, &job, &mi);
	if (r < 0) {
		ret = map_failed(&mi, r);
		goto out;
	}
	sig = job_run(job, &w, sfd, !a->quiet && !a->json);
	r = prealloc_job_wait(job);
	prealloc_vfio_map_info(job, &mi);
	if (r == -ECANCELED && sig) {
		cli_error("vfio-map: interrupted by SIG%s; nothing stays mapped", sigabbrev_np(sig));
		ret = 128 + sig;
		goto out;
	}
	if (r < 0) {
		ret = map_failed(&mi, r);
		goto out;
	}
	if (a->json)
		print_json(a, vi, &mi, prealloc_region_page_size(reg));
	else if (!a->quiet)
		print_human(a, vi, &mi, prealloc_region_page_size(reg));
	fflush(stdout);
	if (a->hold)
		hold(sfd);
	r = prealloc_vfio_unmap(v, reg);
	if (r < 0) {
		cli_error("vfio-map: unmapping failed: %s", strerror(-r));
		ret = EXIT_FAILURE_RUN;
	}
out:
	prealloc_job_free(job);
	signals_release(sfd, &old);
	cli_wait_close(&w);
	return ret;
}

/*
 * As the library's test_pause() (prealloc/util.c, not exported): a test
 * stops the run here with PREALLOC_TEST_PAUSE=point (SIGSTOP) and changes
 * the world under it.
 */
static void pause_point(const char *point)
{
	const char *want = getenv("PREALLOC_TEST_PAUSE");

	if (want && !strcmp(want, point))
		raise(SIGSTOP);
}

static int file_vanished(const char *file)
{
	cli_error("vfio-map: %s vanished after it was checked (removed while vfio-map opened it); "
		  "nothing was mapped", file);
	return EXIT_ENVIRONMENT;
}

static int file_replaced(const char *file)
{
	cli_error("vfio-map: %s was replaced by another file after it was checked; not mapping it",
		  file);
	return EXIT_ENVIRONMENT;
}

/*
 * The file that was checked, and no other: opened by its path, never
 * created, and the same inode (dev/ino) as the check's stat. O_PATH opens
 * nothing a replacement could be (a FIFO, a device) and needs no access;
 * O_NOFOLLOW leaves a symbolic link put at the path a link. The descriptor
 * is held until the region is open: its inode cannot be freed and its
 * number reused meanwhile.
 */
static int open_checked(const char *file, const struct stat *checked, int *ret_fd)
{
	struct stat st;
	int fd = open(file, O_PATH | O_NOFOLLOW | O_CLOEXEC), ret;

	if (fd < 0 && errno == ENOENT)
		return file_vanished(file);
	if (fd < 0) {
		cli_error("vfio-map: cannot open %s: %s", file, strerror(errno));
		return EXIT_ENVIRONMENT;
	}
	if (fstat(fd, &st) < 0) {
		cli_error("vfio-map: %s: %s", file, strerror(errno));
		ret = EXIT_ENVIRONMENT;
		goto fail;
	}
	if (S_ISLNK(st.st_mode)) {
		cli_error("vfio-map: %s is a symbolic link; give the file itself", file);
		ret = EXIT_ENVIRONMENT;
		goto fail;
	}
	if (st.st_dev != checked->st_dev || st.st_ino != checked->st_ino) {
		ret = file_replaced(file);
		goto fail;
	}
	*ret_fd = fd;
	return 0;
fail:
	close(fd);
	return ret;
}

static int open_region(struct prealloc_ctx *ctx, const char *file,
		       struct prealloc_region **ret_region)
{
	struct prealloc_region *reg = NULL;
	struct stat st, mine;
	int fd = -1, r, ret;

	if (stat(file, &st) < 0 || !S_ISREG(st.st_mode)) {
		cli_error("vfio-map: %s: %s", file, errno ? strerror(errno) : "not a regular file");
		return EXIT_USAGE;
	}
	pause_point("vfio-map-open");
	ret = open_checked(file, &st, &fd);
	if (ret)
		return ret;
	pause_point("vfio-map-region");
	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_FILE,
		.flags = PREALLOC_REGION_EXISTING | PREALLOC_REGION_ADOPT_PLACEMENT,
		.length = (uint64_t)st.st_size,
		.path = file,
	};
	r = prealloc_region_new(ctx, &ro, &reg);
	if (r == -ENOENT) {
		ret = file_vanished(file);
		goto out;
	}
	if (r < 0) {
		cli_error("vfio-map: cannot map %s: %s", file, strerror(-r));
		ret = EXIT_ENVIRONMENT;
		goto out;
	}
	/* The region opens the file by its path again (never creating it): still the one checked? */
	if (fstat(prealloc_region_fd(reg), &mine) < 0 || mine.st_dev != st.st_dev ||
	    mine.st_ino != st.st_ino) {
		ret = file_replaced(file);
		goto out;
	}
	*ret_region = reg;
	reg = NULL;
out:
	prealloc_region_free(reg);
	close(fd);
	return ret;
}

int cmd_vfio_map(int argc, char **argv)
{
	struct vfio_args a = { 0 };
	struct prealloc_vfio_info vi = { .size = sizeof(vi) };
	struct prealloc_region *reg = NULL;
	struct prealloc_vfio *v = NULL;
	struct prealloc_ctx *ctx;
	int r, ret;

	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? EXIT_OK : -r;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	if (!a.force && !prepared_by_us(ctx, a.file)) {
		cli_error("vfio-map: %s was not prepared by prealloc (no ready record in %s); "
			  "prepare it first, or --force to map it as it is", a.file,
			  prealloc_ctx_state_dir(ctx));
		ret = EXIT_ENVIRONMENT;
		goto out;
	}
	ret = open_region(ctx, a.file, &reg);
	if (ret)
		goto out;
	struct prealloc_vfio_opts vo = { .size = sizeof(vo), .device = a.device,
					 .backend = a.iommufd ? PREALLOC_VFIO_IOMMUFD : PREALLOC_VFIO_TYPE1 };
	r = prealloc_vfio_open(ctx, &vo, &v, &vi);
	ret = r < 0 ? open_failed(&a, &vi) : map_and_report(&a, v, &vi, reg);
out:
	prealloc_vfio_close(v);
	prealloc_region_free(reg);
	prealloc_ctx_free(ctx);
	return ret;
}
