/* read_snapshot: CUDA allocator snapshot pickles read into columns, without trusting them.
 * snapshot_py.c runs the pickle's opcodes; snapshot_intern.c interns frames and stacks. */
#ifndef SCOPE_SNAPSHOT_H
#define SCOPE_SNAPSHOT_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#define SN_N_ACTIONS 9 /* trace entry actions known by name (snapshot_py.c's ACTION_NAMES) */

typedef struct {
    PyObject *obj;
    Py_ssize_t memo; /* the memo slot this object was stored in or read from (-1: none) */
    Py_ssize_t row;  /* 1 + the row of a trace entry already streamed out, read again from the memo (0: none) */
} Slot;

typedef struct {
    PyObject *filename, *name; /* strong references */
    long long line;
    Py_hash_t hash;
} FrameKey;

typedef struct {
    const unsigned char *p, *end;
    Py_ssize_t total;
    Slot *stack;
    Py_ssize_t sp, scap;
    Py_ssize_t *marks;
    Py_ssize_t mp, mcap;
    PyObject **memo;
    Py_ssize_t *memo_row; /* 1 + the row a memo slot's entry became (0: none) */
    Py_ssize_t mcap_memo, mcount;
    long long budget, limit;
    /* rows */
    Py_ssize_t rows, rcap;
    uint8_t *action;
    int64_t *addr, *size, *time_us;
    int32_t *stack_id, *owner;
    PyObject *owners; /* list of the lists entries were appended to */
    PyObject *last_owner;
    Py_ssize_t last_owner_idx;
    /* frames and stacks */
    FrameKey *frames;
    Py_ssize_t nframes, fcap;
    int32_t *fslots; /* open addressing: frame id + 1, 0 empty */
    Py_ssize_t fslot_cap;
    int32_t *stack_frames;
    Py_ssize_t nsf, sfcap;
    int64_t *stack_off; /* nstacks + 1 */
    Py_ssize_t nstacks, socap;
    int32_t *sslots;
    Py_ssize_t sslot_cap;
    int32_t *scratch;
    Py_ssize_t scratch_cap;
    /* frame dicts already interned, by address (the pickle shares them: torch writes each frame once) */
    PyObject **pkeys;
    int32_t *pvals;
    Py_ssize_t pcount, pcap;
    /* keys */
    PyObject *k_frames, *k_action, *k_addr, *k_size, *k_time, *k_filename, *k_line, *k_name;
    PyObject *action_str[SN_N_ACTIONS];
} Reader;

/* snapshot_intern.c */
int sn_fail(const char *msg);
int sn_grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t elem);
int sn_charge(Reader *r, Py_ssize_t n);
PyObject *sn_text_or_unknown(PyObject *v);
long long sn_int_or(PyObject *v, long long dflt);
int sn_stack_id_of(Reader *r, PyObject *list, long *out);

PyObject *scope_read_snapshot(PyObject *self, PyObject *args);

#endif
