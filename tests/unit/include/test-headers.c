/* SPDX-License-Identifier: MIT */
/*
 * A public header compiles alone: built once per header (tests/unit/meson.build),
 * PREALLOC_TEST_HEADER included first and twice (its guard), as C99 with
 * -Wpedantic -Werror, and as C++ where a C++ compiler is found
 * (test-headers.cc). The headers user code included before 0.2 split them
 * by object (ctx, job, clear, records, flows, vfio, warm: commit 2c2a6df)
 * still declare every name they declared then, themselves or through the
 * headers they included then: HEADER_<NAME> lists that header's own names,
 * and <prealloc.h> (HEADER_ALL) declares them all. A name missing fails the
 * build of its header's test.
 */
#include PREALLOC_TEST_HEADER
#include PREALLOC_TEST_HEADER

#include <stddef.h>
#include <stdio.h>

/* The includes of the headers before the split. */
#ifdef HEADER_ALL
#define HEADER_FLOWS
#define HEADER_CLEAR
#define HEADER_VFIO
#define HEADER_WARM
#endif
#ifdef HEADER_FLOWS
#define HEADER_RECORDS
#endif
#if defined(HEADER_RECORDS) || defined(HEADER_CLEAR) || defined(HEADER_VFIO)
#define HEADER_JOB
#endif
#if defined(HEADER_JOB) || defined(HEADER_WARM)
#define HEADER_CTX
#endif

typedef void (*fn)(void);

/* Functions by address, complete types and typedefs by size, constants by value; 0 ends each. */
static const fn fns[] = {
#ifdef HEADER_CTX
	(fn)prealloc_version, (fn)prealloc_ctx_new, (fn)prealloc_ctx_new_opts,
	(fn)prealloc_ctx_free, (fn)prealloc_ctx_set_log, (fn)prealloc_ctx_state_dir,
	(fn)prealloc_ctx_set_holder_check, (fn)prealloc_nodes, (fn)prealloc_node_info,
	(fn)prealloc_default_nodes, (fn)prealloc_node_cpus, (fn)prealloc_cpu_info,
	(fn)prealloc_hugetlbfs_mount,
#endif
#ifdef HEADER_JOB
	(fn)prealloc_region_new, (fn)prealloc_region_free, (fn)prealloc_region_discard,
	(fn)prealloc_region_addr, (fn)prealloc_region_length, (fn)prealloc_region_page_size,
	(fn)prealloc_region_fd, (fn)prealloc_region_created_file, (fn)prealloc_region_extents,
	(fn)prealloc_job_start, (fn)prealloc_job_progress, (fn)prealloc_job_node_progress,
	(fn)prealloc_job_node_count, (fn)prealloc_job_cancel, (fn)prealloc_job_eventfd,
	(fn)prealloc_job_event, (fn)prealloc_job_notify, (fn)prealloc_job_done,
	(fn)prealloc_job_wait, (fn)prealloc_job_report, (fn)prealloc_job_node_report,
	(fn)prealloc_job_free, (fn)prealloc_run, (fn)prealloc_parse_size, (fn)prealloc_format_size,
	(fn)prealloc_format_list,
#endif
#ifdef HEADER_CLEAR
	(fn)prealloc_clear_kernels, (fn)prealloc_clear_choose, (fn)prealloc_clear_range,
	(fn)prealloc_calibration_path, (fn)prealloc_calibration_save,
	(fn)prealloc_calibration_load, (fn)prealloc_calibration_unload, (fn)prealloc_calibrate,
	(fn)prealloc_clear_file_start, (fn)prealloc_clear_file_info, (fn)prealloc_clear_file,
#endif
#ifdef HEADER_RECORDS
	(fn)prealloc_admit, (fn)prealloc_reservation_set_owner, (fn)prealloc_reservation_commit,
	(fn)prealloc_reservation_rollback, (fn)prealloc_reservation_free,
	(fn)prealloc_reservation_abandon, (fn)prealloc_pool_status, (fn)prealloc_ledger_entry,
	(fn)prealloc_pool_gc, (fn)prealloc_record,
#endif
#ifdef HEADER_FLOWS
	(fn)prealloc_page_name, (fn)prealloc_prepare_start, (fn)prealloc_prepare_info,
	(fn)prealloc_prepare, (fn)prealloc_release, (fn)prealloc_release_holder,
#endif
#ifdef HEADER_VFIO
	(fn)prealloc_vfio_open, (fn)prealloc_vfio_info, (fn)prealloc_vfio_container_fd,
	(fn)prealloc_vfio_group_fd, (fn)prealloc_vfio_device_fd, (fn)prealloc_vfio_close,
	(fn)prealloc_vfio_map_start, (fn)prealloc_vfio_map_info, (fn)prealloc_vfio_map,
	(fn)prealloc_vfio_unmap,
#endif
#ifdef HEADER_WARM
	(fn)prealloc_warm_take, (fn)prealloc_warm_give, (fn)prealloc_warm_give_with,
	(fn)prealloc_warm_fill, (fn)prealloc_warm_serve_new, (fn)prealloc_warm_serve_run,
	(fn)prealloc_warm_serve_free, (fn)prealloc_warm_status,
#endif
	NULL,
};

static const size_t types[] = {
#ifdef HEADER_CTX
	sizeof(struct prealloc_ctx_opts), sizeof(struct prealloc_node_info),
	sizeof(struct prealloc_cpu_info), sizeof(enum prealloc_log_level), sizeof(prealloc_log_fn),
	sizeof(prealloc_holder_fn),
#endif
#ifdef HEADER_JOB
	sizeof(struct prealloc_region_opts), sizeof(struct prealloc_extent),
	sizeof(struct prealloc_job_opts), sizeof(struct prealloc_node_report),
	sizeof(struct prealloc_report), sizeof(struct prealloc_completion),
	sizeof(enum prealloc_backing), sizeof(enum prealloc_region_flags),
	sizeof(enum prealloc_op), sizeof(enum prealloc_job_flags), sizeof(enum prealloc_method),
	sizeof(enum prealloc_notify), sizeof(enum prealloc_completion_flags),
#endif
#ifdef HEADER_CLEAR
	sizeof(struct prealloc_calibration_class), sizeof(struct prealloc_calibration),
	sizeof(struct prealloc_calibrate_opts), sizeof(struct prealloc_calibrate_result),
	sizeof(struct prealloc_clear_file_opts), sizeof(struct prealloc_clear_file_info),
	sizeof(enum prealloc_calibrate_flags), sizeof(enum prealloc_clear_file_flags),
	sizeof(enum prealloc_clear_file_step),
#endif
#ifdef HEADER_RECORDS
	sizeof(struct prealloc_admit_opts), sizeof(struct prealloc_admit_result),
	sizeof(struct prealloc_pool_status), sizeof(struct prealloc_ledger_entry),
	sizeof(struct prealloc_record_info), sizeof(enum prealloc_admit_flags),
	sizeof(enum prealloc_admit_reason), sizeof(enum prealloc_ledger_state),
	sizeof(enum prealloc_record_state), sizeof(enum prealloc_record_owner),
#endif
#ifdef HEADER_FLOWS
	sizeof(struct prealloc_prepare_opts), sizeof(struct prealloc_prepare_info),
	sizeof(struct prealloc_release_info), sizeof(enum prealloc_prepare_flags),
	sizeof(enum prealloc_step),
#endif
#ifdef HEADER_VFIO
	sizeof(struct prealloc_vfio_opts), sizeof(struct prealloc_iova_range),
	sizeof(struct prealloc_vfio_info), sizeof(struct prealloc_vfio_map_opts),
	sizeof(struct prealloc_vfio_segment), sizeof(struct prealloc_vfio_node_map),
	sizeof(struct prealloc_vfio_map_info), sizeof(enum prealloc_vfio_backend),
	sizeof(enum prealloc_vfio_flags), sizeof(enum prealloc_vfio_step),
	sizeof(enum prealloc_vfio_map_flags),
#endif
#ifdef HEADER_WARM
	sizeof(struct prealloc_warm_take_opts), sizeof(struct prealloc_warm_take_info),
	sizeof(struct prealloc_warm_give_info), sizeof(struct prealloc_warm_give_opts),
	sizeof(struct prealloc_warm_fill_opts), sizeof(struct prealloc_warm_fill_info),
	sizeof(struct prealloc_warm_serve_opts), sizeof(struct prealloc_warm_serve_info),
	sizeof(struct prealloc_warm_status), sizeof(enum prealloc_warm_state),
	sizeof(enum prealloc_warm_take_flags), sizeof(enum prealloc_warm_hit),
	sizeof(enum prealloc_warm_fill_flags), sizeof(enum prealloc_warm_serve_flags),
#endif
	0,
};

static const double values[] = {
#ifdef HEADER_CTX
	(double)PREALLOC_LOG_ERR, (double)PREALLOC_LOG_WARNING, (double)PREALLOC_LOG_INFO,
	(double)PREALLOC_LOG_DEBUG, (double)PREALLOC_VERSION_MAJOR, (double)PREALLOC_VERSION_MINOR,
	(double)PREALLOC_PAGE_4K, (double)PREALLOC_PAGE_2M, (double)PREALLOC_PAGE_1G,
	(double)PREALLOC_MAX_NODES, (double)PREALLOC_MAX_CPUS, (double)PREALLOC_CPU_SSE2,
	(double)PREALLOC_CPU_ERMS, (double)PREALLOC_CPU_FSRM, (double)PREALLOC_CPU_AVX2,
	(double)PREALLOC_CPU_AVX512F, (double)PREALLOC_CPU_CLZERO, (double)PREALLOC_CPU_MOVDIR64B,
	(double)PREALLOC_CPU_DCZVA, (double)PREALLOC_CPU_MOPS,
#endif
#ifdef HEADER_JOB
	(double)PREALLOC_BACKING_ANON, (double)PREALLOC_BACKING_ANON_THP,
	(double)PREALLOC_BACKING_MEMFD, (double)PREALLOC_BACKING_FILE,
	(double)PREALLOC_BACKING_MAPPED, (double)PREALLOC_REGION_REUSE,
	(double)PREALLOC_REGION_NO_BIND, (double)PREALLOC_REGION_THP,
	(double)PREALLOC_REGION_ADOPT_PLACEMENT, (double)PREALLOC_REGION_EXISTING,
	(double)PREALLOC_OP_POPULATE, (double)PREALLOC_OP_CLEAR, (double)PREALLOC_OP_VERIFY,
	(double)PREALLOC_OP_NONE, (double)PREALLOC_JOB_VERIFY, (double)PREALLOC_JOB_NO_PLACEMENT,
	(double)PREALLOC_JOB_TOUCH, (double)PREALLOC_JOB_NO_PIN, (double)PREALLOC_JOB_IDLE,
	(double)PREALLOC_METHOD_POPULATE_WRITE, (double)PREALLOC_METHOD_TOUCH,
	(double)PREALLOC_METHOD_CLEAR, (double)PREALLOC_METHOD_NONE,
	(double)PREALLOC_NOTIFY_EVENTFD, (double)PREALLOC_NOTIFY_URING_PRIVATE_RING,
	(double)PREALLOC_NOTIFY_URING_REGISTERED, (double)PREALLOC_COMPLETION_NODES,
	(double)PREALLOC_COMPLETION_NO_REGISTERED, (double)PREALLOC_COMPLETION_NO_PRIVATE_RING,
	(double)PREALLOC_COMPLETION_EVENTFD,
#endif
#ifdef HEADER_CLEAR
	(double)PREALLOC_CALIBRATE_SAVE, (double)PREALLOC_CLEAR_VERIFY,
	(double)PREALLOC_CLEAR_FORCE, (double)PREALLOC_CLEAR_STEP_NONE,
	(double)PREALLOC_CLEAR_STEP_KERNEL, (double)PREALLOC_CLEAR_STEP_LOOKUP,
	(double)PREALLOC_CLEAR_STEP_SYMLINK, (double)PREALLOC_CLEAR_STEP_TYPE,
	(double)PREALLOC_CLEAR_STEP_FILESYSTEM, (double)PREALLOC_CLEAR_STEP_MAPPERS,
	(double)PREALLOC_CLEAR_STEP_OPEN, (double)PREALLOC_CLEAR_STEP_MAP,
	(double)PREALLOC_CLEAR_STEP_START, (double)PREALLOC_CLEAR_STEP_CLEAR,
	(double)PREALLOC_CLEAR_STEP_SWAPPED, (double)PREALLOC_CLEAR_STEP_TAIL,
	(double)PREALLOC_CLEAR_STEP_SYNC, (double)PREALLOC_CLEAR_STEP_VERIFY,
	(double)PREALLOC_CALIBRATION_CLASSES, (double)PREALLOC_CALIBRATE_SIZES,
	(double)PREALLOC_CALIBRATE_THREADS, (double)PREALLOC_CALIBRATE_KERNELS,
	(double)PREALLOC_CALIBRATE_REPEAT_MAX, (double)PREALLOC_CALIBRATE_REPEAT_AUTO_MIN,
	(double)PREALLOC_CALIBRATE_REPEAT_AUTO_MAX, (double)PREALLOC_CALIBRATE_PRECISION,
	(double)PREALLOC_CALIBRATE_WRITES_MAX,
#endif
#ifdef HEADER_RECORDS
	(double)PREALLOC_ADMIT_RESERVE, (double)PREALLOC_ADMIT_NO_CHECK,
	(double)PREALLOC_ADMIT_CANCEL_FD, (double)PREALLOC_ADMIT_KEEP_WARM,
	(double)PREALLOC_ADMIT_OK, (double)PREALLOC_ADMIT_POOL, (double)PREALLOC_ADMIT_GLOBAL,
	(double)PREALLOC_ADMIT_CGROUP, (double)PREALLOC_ADMIT_MEMORY, (double)PREALLOC_ADMIT_GROW,
	(double)PREALLOC_ADMIT_LOCK, (double)PREALLOC_ADMIT_ACCESS, (double)PREALLOC_ADMIT_MEMCG,
	(double)PREALLOC_ADMIT_FS, (double)PREALLOC_ADMIT_CAPACITY,
	(double)PREALLOC_ADMIT_CANCELED, (double)PREALLOC_LEDGER_IN_FLIGHT,
	(double)PREALLOC_LEDGER_HELD, (double)PREALLOC_LEDGER_ORPHAN,
	(double)PREALLOC_RECORD_PREPARING, (double)PREALLOC_RECORD_READY,
	(double)PREALLOC_RECORD_RELEASING, (double)PREALLOC_RECORD_ORPHAN,
	(double)PREALLOC_OWNER_NONE, (double)PREALLOC_OWNER_RUN, (double)PREALLOC_OWNER_HOLDER,
#endif
#ifdef HEADER_FLOWS
	(double)PREALLOC_PREPARE_REUSE, (double)PREALLOC_PREPARE_RESERVE,
	(double)PREALLOC_PREPARE_VERIFY, (double)PREALLOC_PREPARE_CHOWN,
	(double)PREALLOC_PREPARE_TOUCH, (double)PREALLOC_PREPARE_NO_CHECK,
	(double)PREALLOC_PREPARE_FORCE, (double)PREALLOC_PREPARE_CANCEL_FD,
	(double)PREALLOC_PREPARE_DIR_FD, (double)PREALLOC_STEP_NONE, (double)PREALLOC_STEP_REQUEST,
	(double)PREALLOC_STEP_LOCATION, (double)PREALLOC_STEP_ADMISSION,
	(double)PREALLOC_STEP_RECORD, (double)PREALLOC_STEP_CREATE, (double)PREALLOC_STEP_POPULATE,
	(double)PREALLOC_STEP_VERIFY, (double)PREALLOC_STEP_COMMIT, (double)PREALLOC_PAGE_AUTO,
	(double)PREALLOC_PAGE_THP,
#endif
#ifdef HEADER_VFIO
	(double)PREALLOC_VFIO_TYPE1, (double)PREALLOC_VFIO_IOMMUFD,
	(double)PREALLOC_VFIO_CALLER_FD, (double)PREALLOC_VFIO_STEP_NONE,
	(double)PREALLOC_VFIO_STEP_BACKEND, (double)PREALLOC_VFIO_STEP_DEVICE,
	(double)PREALLOC_VFIO_STEP_DRIVER, (double)PREALLOC_VFIO_STEP_GROUP,
	(double)PREALLOC_VFIO_STEP_VIABLE, (double)PREALLOC_VFIO_STEP_CONTAINER,
	(double)PREALLOC_VFIO_STEP_INFO, (double)PREALLOC_VFIO_STEP_FIT,
	(double)PREALLOC_VFIO_STEP_MEMLOCK, (double)PREALLOC_VFIO_STEP_MAP,
	(double)PREALLOC_VFIO_STEP_IOMMUFD, (double)PREALLOC_VFIO_MAP_FIXED,
	(double)PREALLOC_VFIO_MAP_READONLY, (double)PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK,
	(double)PREALLOC_VFIO_MAX_RANGES, (double)PREALLOC_VFIO_MAX_SEGMENTS,
	(double)PREALLOC_VFIO_MAX_NODES,
#endif
#ifdef HEADER_WARM
	(double)PREALLOC_WARM_POPULATING, (double)PREALLOC_WARM_READY,
	(double)PREALLOC_WARM_HANDED, (double)PREALLOC_WARM_RETURNING, (double)PREALLOC_WARM_DIRTY,
	(double)PREALLOC_WARM_CLEARING, (double)PREALLOC_WARM_QUARANTINED,
	(double)PREALLOC_WARM_TAKE_CHOWN, (double)PREALLOC_WARM_TAKE_FALLBACK,
	(double)PREALLOC_WARM_TAKE_RESERVE, (double)PREALLOC_WARM_TAKE_RESERVED,
	(double)PREALLOC_WARM_TAKE_DIR_FD, (double)PREALLOC_WARM_TAKE_NO_GROW,
	(double)PREALLOC_WARM_HIT, (double)PREALLOC_WARM_HIT_CUT, (double)PREALLOC_WARM_HIT_GROWN,
	(double)PREALLOC_WARM_COLD, (double)PREALLOC_WARM_FILL_IDLE,
	(double)PREALLOC_WARM_SERVE_STOP_FD, (double)PREALLOC_WARM_SERVE_RELOAD_FD,
#endif
	0,
};

int main(void)
{
	size_t nf = sizeof(fns) / sizeof(fns[0]) - 1, nt = sizeof(types) / sizeof(types[0]) - 1;
	size_t nv = sizeof(values) / sizeof(values[0]) - 1, linked = 0, bytes = 0, i;
	double sum = 0;

	/* The compiler checked the names; the functions' addresses come from the library. */
	for (i = 0; i < nf; i++)
		linked += fns[i] != NULL;
	for (i = 0; i < nt; i++)
		bytes += types[i];
	for (i = 0; i < nv; i++)
		sum += values[i];
	printf("1..2\nok 1 - %s compiles alone\n", PREALLOC_TEST_NAME);
	if (nf + nt + nv == 0)
		printf("ok 2 - new since the split: no names of before to keep\n");
	else
		printf("%sok 2 - it declares the %zu functions (%zu linked), %zu types (%zu bytes) "
		       "and %zu constants (sum %g) it declared before the split\n",
		       linked == nf ? "" : "not ", nf, linked, nt, bytes, nv, sum);
	return linked != nf;
}
