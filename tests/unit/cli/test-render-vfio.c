/* SPDX-License-Identifier: MIT */
/*
 * `prealloc vfio-map`'s document and lines (docs/json.md, "vfio-map") from
 * the library's vfio and map info with a distinct value in every field,
 * rendered by vfio_map.c's own code, each key held to its field; and the
 * exit status of each step that can fail (docs/prealloc.1.md). vfio_map.c
 * keeps all of it static, so it is included here whole (its cmd_vfio_map
 * with it; the copy in the CLI's library is then never linked in).
 */
#include "cli/vfio_map.c"

#include "json-check.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static const struct vfio_args args = {
	.device = "0000:3b:00.1",
	.file = "/dev/hugepages/vm-ram",
	.hold = true,
};

static void fill(struct prealloc_vfio_info *vi, struct prealloc_vfio_map_info *mi)
{
	*vi = (struct prealloc_vfio_info){ .size = sizeof(*vi), .iommu_type = 3, .group = 42,
					   .group_devices = 2, .driver = "vfio-pci" };
	*mi = (struct prealloc_vfio_map_info){
		.size = sizeof(*mi),
		.bytes = 6 * GiB,
		.seconds = 0.75,
		.mappings = 5,
		.locked_now = 7 * MiB,
		.locked_needed = 9 * GiB,
		.locked_limit = 64 * GiB,
		.nr_segments = 2,
		.segments = { { .iova = 0x200000000, .offset = 0x1000, .length = 0x3000000 },
			      { .iova = 0x400000000, .offset = 0x3001000, .length = 0x5000000 } },
		.nr_nodes = 2,
		.nodes = { { .node = 1, .bytes = 2 * GiB, .seconds = 0.2 },
			   { .node = -1, .bytes = 4 * GiB, .seconds = 0.55 } },
	};
}

static double rate6(uint64_t bytes, double seconds)
{
	return round(bytes / seconds / 1e9 * 1e6) / 1e6;
}

static void test_json(void)
{
	static const char *const keys[] = { "command", "file", "device", "group", "iommu_type",
		"backend", "ioas_id", "map_file", "page_size", "bytes", "seconds", "gb_per_s", "mappings", "locked_limit", "held",
		"segments", "nodes", NULL };
	static const char *const seg_keys[] = { "iova", "offset", "length", NULL };
	static const char *const node_keys[] = { "node", "bytes", "seconds", "gb_per_s", NULL };
	struct prealloc_vfio_map_info mi;
	struct prealloc_vfio_info vi;
	json_object *o, *arr;
	struct capture c;
	const char *w = "vfio-map";
	char *text;

	fill(&vi, &mi);
	capture_begin(&c);
	print_json(&args, &vi, &mi, PREALLOC_PAGE_2M);
	text = capture_end(&c);
	o = text ? json_tokener_parse(text) : NULL;
	free(text);
	if (!tap_ok(o != NULL, "vfio-map: the document parses"))
		return;
	has_keys(o, w, keys);
	is_string(o, w, "command", "vfio-map");
	is_string(o, w, "file", args.file);
	is_string(o, w, "device", args.device);
	is_int(o, w, "group", vi.group);
	is_int(o, w, "iommu_type", vi.iommu_type);
	is_string(o, w, "backend", "type1");
	is_null(o, w, "ioas_id");
	is_bool(o, w, "map_file", false);
	is_u64(o, w, "page_size", PREALLOC_PAGE_2M);
	is_u64(o, w, "bytes", mi.bytes);
	is_double(o, w, "seconds", mi.seconds, 1e-6);
	is_double(o, w, "gb_per_s", rate6(mi.bytes, mi.seconds), 1e-6);
	is_int(o, w, "mappings", mi.mappings);
	is_u64(o, w, "locked_limit", mi.locked_limit);
	is_bool(o, w, "held", true);
	arr = json_object_object_get(o, "segments");
	if (tap_ok(arr && json_object_array_length(arr) == 2, "vfio-map: two segments")) {
		for (unsigned int i = 0; i < 2; i++) {
			json_object *s = json_object_array_get_idx(arr, i);

			has_keys(s, "vfio-map segment", seg_keys);
			is_u64(s, "vfio-map segment", "iova", mi.segments[i].iova);
			is_u64(s, "vfio-map segment", "offset", mi.segments[i].offset);
			is_u64(s, "vfio-map segment", "length", mi.segments[i].length);
		}
	}
	arr = json_object_object_get(o, "nodes");
	if (tap_ok(arr && json_object_array_length(arr) == 2, "vfio-map: two nodes, in order")) {
		for (unsigned int i = 0; i < 2; i++) {
			json_object *n = json_object_array_get_idx(arr, i);

			has_keys(n, "vfio-map node", node_keys);
			is_int(n, "vfio-map node", "node", mi.nodes[i].node);
			is_u64(n, "vfio-map node", "bytes", mi.nodes[i].bytes);
			is_double(n, "vfio-map node", "seconds", mi.nodes[i].seconds, 1e-6);
			is_double(n, "vfio-map node", "gb_per_s",
				  rate6(mi.nodes[i].bytes, mi.nodes[i].seconds), 1e-6);
		}
	}
	json_object_put(o);

	/* Unlimited RLIMIT_MEMLOCK is null; no --hold. */
	struct vfio_args unheld = args;

	unheld.hold = false;
	mi.locked_limit = UINT64_MAX;
	capture_begin(&c);
	print_json(&unheld, &vi, &mi, PREALLOC_PAGE_2M);
	text = capture_end(&c);
	o = text ? json_tokener_parse(text) : NULL;
	free(text);
	is_null(o, "vfio-map unlimited", "locked_limit");
	is_bool(o, "vfio-map unlimited", "held", false);
	json_object_put(o);

	/* iommufd: its IOAS, and whether the file itself was mapped (MAP_FILE). */
	struct vfio_args viaiommufd = args;

	viaiommufd.iommufd = true;
	vi.ioas_id = 7;
	mi.map_file = 1;
	capture_begin(&c);
	print_json(&viaiommufd, &vi, &mi, PREALLOC_PAGE_2M);
	text = capture_end(&c);
	o = text ? json_tokener_parse(text) : NULL;
	free(text);
	is_string(o, "vfio-map iommufd", "backend", "iommufd");
	is_int(o, "vfio-map iommufd", "ioas_id", 7);
	is_bool(o, "vfio-map iommufd", "map_file", true);
	json_object_put(o);
}

static void test_human(void)
{
	struct prealloc_vfio_map_info mi;
	struct prealloc_vfio_info vi;
	struct capture c;
	char *text;

	fill(&vi, &mi);
	capture_begin(&c);
	print_human(&args, &vi, &mi, PREALLOC_PAGE_2M);
	text = capture_end(&c);
	if (!tap_ok(text != NULL, "vfio-map: the lines render"))
		return;
	is_line(text, 0, "mapped /dev/hugepages/vm-ram (6 GiB, 2M pages) for 0000:3b:00.1, IOMMU "
			 "group 42: 0.750000 s, 8.59 GB/s, 5 mappings");
	is_line(text, 1, "  IOVA 0x200000000-0x202ffffff <- file offset 0x1000");
	is_line(text, 2, "  IOVA 0x400000000-0x404ffffff <- file offset 0x3001000");
	is_line(text, 3, "  node 1: 2 GiB in 0.200000 s, 10.74 GB/s");
	is_line(text, 4, "  node -1: 4 GiB in 0.550000 s, 7.81 GB/s");
	is_line(text, 5, "");
	free(text);
}

/* Exit status of each step (docs/prealloc.1.md, vfio-map). */
static void test_exit(void)
{
	static const struct {
		int step, err, want;
		const char *why;
	} open_rows[] = {
		{ PREALLOC_VFIO_STEP_DEVICE, -ENOENT, 2, "a device that does not exist" },
		{ PREALLOC_VFIO_STEP_DEVICE, -ENODEV, 4, "a device with no IOMMU group" },
		{ PREALLOC_VFIO_STEP_BACKEND, -EOPNOTSUPP, 4, "iommufd" },
		{ PREALLOC_VFIO_STEP_DRIVER, -EBUSY, 4, "a device not bound to vfio-pci" },
		{ PREALLOC_VFIO_STEP_GROUP, -EBUSY, 4, "a group another process holds" },
		{ PREALLOC_VFIO_STEP_VIABLE, -EBUSY, 4, "a group that is not viable" },
		{ PREALLOC_VFIO_STEP_CONTAINER, -EINVAL, 4, "no type1 container" },
		{ PREALLOC_VFIO_STEP_INFO, -EINVAL, 4, "the IOMMU's info" },
		{ PREALLOC_VFIO_STEP_NONE, -EIO, 1, "no step named" },
	}, map_rows[] = {
		{ PREALLOC_VFIO_STEP_MEMLOCK, -ENOMEM, 3, "a pin over RLIMIT_MEMLOCK" },
		{ PREALLOC_VFIO_STEP_FIT, -ENOSPC, 4, "no room in the usable IOVA" },
		{ PREALLOC_VFIO_STEP_FIT, -ERANGE, 4, "--iova outside every usable range" },
		{ PREALLOC_VFIO_STEP_INFO, -EINVAL, 4, "the IOMMU's info" },
		{ PREALLOC_VFIO_STEP_MAP, -EFAULT, 1, "a failed map" },
		{ PREALLOC_VFIO_STEP_NONE, -EIO, 1, "no step named" },
	};

	for (size_t i = 0; i < sizeof(open_rows) / sizeof(open_rows[0]); i++) {
		struct prealloc_vfio_info vi = { .size = sizeof(vi), .step = open_rows[i].step,
						 .error = open_rows[i].err };
		int got = open_failed(&args, &vi);

		tap_ok(got == open_rows[i].want, "vfio open exit: %s: %d (got %d)", open_rows[i].why,
		       open_rows[i].want, got);
	}
	for (size_t i = 0; i < sizeof(map_rows) / sizeof(map_rows[0]); i++) {
		struct prealloc_vfio_map_info mi = { .size = sizeof(mi), .step = map_rows[i].step,
						     .error = map_rows[i].err };
		int got = map_failed(&mi, map_rows[i].err);

		tap_ok(got == map_rows[i].want, "vfio map exit: %s: %d (got %d)", map_rows[i].why,
		       map_rows[i].want, got);
	}
}

int main(void)
{
	test_json();
	test_human();
	test_exit();
	return tap_done();
}
