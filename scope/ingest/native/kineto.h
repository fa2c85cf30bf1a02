/* Kineto (torch.profiler) trace scanner and the per-rank event table it fills.
 *
 * kineto.c is plain C (no Python API), so a whole file is read with the GIL released:
 *   kt_read_file    streams one .json / .json.gz file: inflates it in blocks, finds the traceEvents
 *                   array, scans each event into columns (complete "X" events only become rows),
 *                   salvages a file cut short up to its last complete event;
 *   kt_finish       moves timestamps to the run clock, sorts rows by time, derives device / stream /
 *                   thread, and assigns steps (CPU rows by ProfilerStep window, GPU rows through the
 *                   correlation id of their launch).
 * Classifying names into kinds stays in Python, once per distinct (cat, name) pair.
 * kineto_py.c wraps the table as the Python type RankTable.
 */
#ifndef SCOPE_KINETO_H
#define SCOPE_KINETO_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

/* A growable byte arena; strings inside it are referred to by offset (it moves when it grows). */
typedef struct {
    char *data;
    size_t len, cap;
} kt_bytes;

/* Interned strings: id <-> bytes, open addressing on a power-of-two slot table. */
typedef struct {
    kt_bytes arena;
    int64_t *offset;
    int32_t *length;
    uint64_t *hash;
    int32_t count, cap;
    int32_t *slots; /* -1 = empty */
    size_t nslots;
} kt_intern;

/* Sparse communication metadata of one row (few rows have it). Text fields are (offset, length)
 * into the table's comm arena; length -1 means the key was absent. */
enum { KT_COLLECTIVE, KT_DTYPE, KT_PG_NAME, KT_PG_DESC, KT_PG_RANKS, KT_INPUT_DIMS, KT_INPUT_TYPE, KT_CONCRETE, KT_NTEXT };
typedef struct {
    int64_t text_off[KT_NTEXT];
    int32_t text_len[KT_NTEXT];
    int64_t in_nelems, out_nelems, group_size;
    int64_t src_rank, dst_rank; /* a send's or recv's "Src Rank" / "Dst Rank" (global ranks), -1 absent */
} kt_comm;

/* Per-row columns of complete events; the file order until kt_finish sorts them by time. */
typedef struct {
    int64_t n, cap;
    int64_t *event_id, *ts_ns, *dur_ns, *pid, *tid, *corr, *ext, *stream_arg, *device_arg;
    double *flops;
    int32_t *pair;     /* id of the (cat, name) pair */
    int32_t *comm;     /* index into comms, or -1 */
    /* filled by kt_finish */
    int32_t *device, *step;
    int64_t *stream, *thread;
} kt_rows;

/* The profiler's "[memory]" instant events (profile_memory=True), in file order: an allocation (bytes > 0)
 * or a free (bytes < 0), with the allocator's totals after it where the trace has them (-1 where not). */
typedef struct {
    int64_t n, cap;
    int64_t *ts_ns, *bytes, *total_allocated, *total_reserved, *addr;
    int32_t *device_type, *device_id;
} kt_mem;

typedef struct {
    kt_intern names, cats;
    /* pairs: (cat id, name id) -> pair id; pair_key[i] = cat << 32 | name */
    kt_intern pairs;
    kt_rows rows;
    kt_mem mem;
    kt_comm *comms;
    int64_t ncomms, comms_cap;
    kt_bytes comm_text;
    int finished;
    /* first CPU row per correlation id, sorted by id (built on first kt_launch_row) */
    int64_t *launch_corr, *launch_row;
    int64_t nlaunch;
    int launch_built;
} kt_table;

/* What reading one file found. Offsets are in decompressed bytes. */
#define KT_MAX_REGIONS 8
typedef enum {
    KT_OK = 0,            /* the array closed; tail holds what follows it */
    KT_TRUNCATED = 1,     /* input ended inside the array: rows up to salvage_offset kept */
    KT_INVALID = 2,       /* unused since event-level recovery (kept for the numbering) */
    KT_EMPTY = 3,         /* nothing but whitespace */
    KT_NOT_TRACE = 4,     /* no traceEvents array */
    KT_GZIP_BAD = 5,      /* corrupt gzip before any output */
    KT_IO_ERROR = 6,      /* cannot open or read: message in gzip_msg */
    KT_NO_MEMORY = 7,
} kt_status;

typedef struct {
    kt_status status;
    int64_t events_seen;      /* every event of the array, complete or not */
    int64_t rows_added;       /* complete ("X") events */
    int64_t bytes;            /* decompressed bytes read */
    int64_t salvage_offset;   /* KT_TRUNCATED: end of the last complete event */
    int64_t error_offset;     /* KT_INVALID: where the bad event starts */
    int64_t events_skipped;   /* malformed events skipped, parsing resumed at the next event */
    int64_t events_repaired;  /* events kept after repairing an empty value or a NaN / Infinity */
    int64_t repair_offset;    /* where the first repaired event starts */
    int64_t negative_dur;     /* complete events with a negative dur, read as 0 */
    int sessions;             /* further "traceEvents" arrays read after the first (concatenated sessions) */
    int nregions;             /* skipped regions, the first KT_MAX_REGIONS recorded below */
    int64_t region_start[KT_MAX_REGIONS], region_end[KT_MAX_REGIONS], region_events[KT_MAX_REGIONS];
    int gzip_problem;         /* 0, 1 = corrupt data after some output, 2 = stream ended early */
    char gzip_msg[256];
    kt_bytes head;            /* bytes before the array (the header object's first part) */
    kt_bytes tail;            /* bytes after the array */
} kt_read_result;

/* Id of s in in (added when new), or -1 when out of memory. */
int32_t kt_intern_add(kt_intern *in, const char *s, size_t n);
void kt_intern_free(kt_intern *in);

void kt_table_init(kt_table *t);
void kt_table_free(kt_table *t);
void kt_result_free(kt_read_result *r);

/* Read one file, appending its complete events; event ids start at first_id. */
/* ISA-L for gzip when built with it: kt_set_fast_inflate(0) makes every later read use zlib alone
   (returns the previous setting); kt_has_fast_inflate says whether the core was built with it. */
int kt_set_fast_inflate(int on);
int kt_has_fast_inflate(void);
/* Decompressed bytes each later fill adds (0: the default, FILL_BYTES); the previous setting. For tests:
   a small fill puts a window's end at every byte of a short trace. */
size_t kt_set_fill_bytes(size_t n);
/* ts, dur, pid and tid scanned in one pass where plain (1, the default) or by the general path alone (0);
   the previous setting. For tests that hold the one to the other. */
int kt_set_one_pass_numbers(int on);
/* How many gzip files zlib took over from ISA-L since the module loaded (damaged or cut ones). */
long long kt_inflate_takeovers(void);

void kt_read_file(kt_table *t, const char *path, int64_t first_id, kt_read_result *out);

/* Largest ts_ns of rows [from, n) (INT64_MIN when there are none). */
int64_t kt_max_ts(const kt_table *t, int64_t from);

/* Add offset_ns to ts_ns of rows [from, n): one file's move to the run clock. */
void kt_shift(kt_table *t, int64_t from, int64_t offset_ns);

/* Add offset_ns to ts_ns of memory events [from, n). */
void kt_shift_mem(kt_table *t, int64_t from, int64_t offset_ns);

/* pair_on_gpu / pair_is_step (one byte per pair) come from the
 * Python classifier. Returns 0 or -1 when out of memory. */
int kt_finish(kt_table *t, const uint8_t *pair_on_gpu, const uint8_t *pair_is_step);

/* Row of the first CPU event (device < 0) with this correlation id, in time order; -1 if none.
 * Builds its index on first use. */
int64_t kt_launch_row(kt_table *t, int64_t corr);

/* Adds the RankTable type to the module; 0 on success, -1 with an exception set. */
int kineto_register(PyObject *module);

#endif
