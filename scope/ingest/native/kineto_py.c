/* RankTable: the Python face of the per-rank event table (kineto.c) and its Parquet output.
 *
 * The Python side (scope/ingest/native_rank.py) drives it: read files, classify the distinct
 * (cat, name) pairs, finish, fill communication metadata for the few rows that have it, write.
 * Reading, finishing and writing release the GIL, so ranks ingest in parallel threads.
 */
#include "kineto.h"
#include "pqwrite.h"

#include <string.h>

/* Sparse communication columns set from Python, one value per row (-1 / null elsewhere). */
enum { C_COLL_OP, C_PG, C_DTYPE, C_GROUP_RANKS, C_NSTR };

typedef struct {
    PyObject_HEAD
    kt_table t;
    kt_intern comm_dict[C_NSTR];
    int32_t *comm_code[C_NSTR];
    int64_t *in_nelems, *out_nelems, *nbytes;
    int32_t *group_size, *peer;
    int busy; /* a GIL-free call is running on this table */
} RankTable;

static void free_comm(RankTable *self) {
    for (int i = 0; i < C_NSTR; i++) {
        free(self->comm_code[i]);
        self->comm_code[i] = NULL;
        kt_intern_free(&self->comm_dict[i]);
    }
    free(self->in_nelems);
    free(self->out_nelems);
    free(self->nbytes);
    free(self->group_size);
    free(self->peer);
    self->in_nelems = self->out_nelems = self->nbytes = NULL;
    self->group_size = self->peer = NULL;
}

static void RankTable_dealloc(RankTable *self) {
    kt_table_free(&self->t);
    free_comm(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int RankTable_init(RankTable *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "", kwlist)) return -1;
    kt_table_free(&self->t);
    free_comm(self);
    kt_table_init(&self->t);
    return 0;
}

static int check_idle(RankTable *self) {
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "RankTable is in use by another thread");
        return -1;
    }
    return 0;
}

static const char *status_name(kt_status s) {
    switch (s) {
    case KT_OK: return "ok";
    case KT_TRUNCATED: return "truncated";
    case KT_INVALID: return "invalid";
    case KT_EMPTY: return "empty";
    case KT_NOT_TRACE: return "not_trace";
    case KT_GZIP_BAD: return "gzip_bad";
    case KT_IO_ERROR: return "io_error";
    default: return "no_memory";
    }
}

/* The event-level recovery figures: events skipped (with their byte ranges) and events repaired. */
static int add_recovery(PyObject *out, const kt_read_result *res) {
    int n = res->nregions < KT_MAX_REGIONS ? res->nregions : KT_MAX_REGIONS;
    PyObject *regions = PyList_New(n);
    if (!regions) return -1;
    for (int i = 0; i < n; i++) {
        PyObject *item = Py_BuildValue("(LLL)", (long long)res->region_start[i], (long long)res->region_end[i],
                                       (long long)res->region_events[i]);
        if (!item) {
            Py_DECREF(regions);
            return -1;
        }
        PyList_SET_ITEM(regions, i, item);
    }
    PyObject *extra = Py_BuildValue("{s:L,s:L,s:L,s:i,s:N,s:i,s:L}", "events_skipped", (long long)res->events_skipped,
                                    "events_repaired", (long long)res->events_repaired, "repair_offset",
                                    (long long)res->repair_offset, "nregions", res->nregions, "regions", regions,
                                    "sessions", res->sessions, "negative_dur", (long long)res->negative_dur);
    if (!extra) return -1;
    int rc = PyDict_Update(out, extra);
    Py_DECREF(extra);
    return rc;
}

static PyObject *RankTable_read(RankTable *self, PyObject *args) {
    PyObject *path_obj;
    long long first_id;
    if (!PyArg_ParseTuple(args, "O&L", PyUnicode_FSConverter, &path_obj, &first_id)) return NULL;
    if (check_idle(self) < 0 || self->t.finished) {
        Py_DECREF(path_obj);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "RankTable already finished");
        return NULL;
    }
    kt_read_result res;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    kt_read_file(&self->t, PyBytes_AS_STRING(path_obj), (int64_t)first_id, &res);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    Py_DECREF(path_obj);
    if (res.status == KT_NO_MEMORY) {
        kt_result_free(&res);
        return PyErr_NoMemory();
    }
    PyObject *tail = res.status == KT_OK ? PyBytes_FromStringAndSize(res.tail.data, (Py_ssize_t)res.tail.len)
                                         : (Py_INCREF(Py_None), Py_None);
    PyObject *out = Py_BuildValue(
        "{s:s,s:L,s:L,s:L,s:L,s:L,s:i,s:s,s:y#,s:N}", "status", status_name(res.status), "events_seen",
        (long long)res.events_seen, "rows", (long long)res.rows_added, "bytes", (long long)res.bytes,
        "salvage_offset", (long long)res.salvage_offset, "error_offset", (long long)res.error_offset,
        "gzip_problem", res.gzip_problem, "gzip_msg", res.gzip_msg, "head", res.head.data ? res.head.data : "",
        (Py_ssize_t)res.head.len, "tail", tail);
    kt_result_free(&res);
    if (out && add_recovery(out, &res) < 0) Py_CLEAR(out);
    return out;
}

static PyObject *decode_text(const char *s, size_t n) {
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
}

static PyObject *interned_text(const kt_intern *in, int32_t id) {
    return decode_text(in->arena.data + in->offset[id], (size_t)in->length[id]);
}

static void pair_ids(const kt_table *t, int32_t pair, int32_t *cat, int32_t *name) {
    uint64_t key;
    memcpy(&key, t->pairs.arena.data + t->pairs.offset[pair], sizeof key);
    *cat = (int32_t)(key >> 32);
    *name = (int32_t)(key & 0xffffffffu);
}

static PyObject *RankTable_pairs(RankTable *self, PyObject *unused) {
    PyObject *out = PyList_New(self->t.pairs.count);
    if (!out) return NULL;
    for (int32_t p = 0; p < self->t.pairs.count; p++) {
        int32_t cat, name;
        pair_ids(&self->t, p, &cat, &name);
        PyObject *item = Py_BuildValue("(NN)", interned_text(&self->t.cats, cat), interned_text(&self->t.names, name));
        if (!item) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, p, item);
    }
    return out;
}

static PyObject *RankTable_max_ts(RankTable *self, PyObject *args) {
    long long from = 0;
    if (!PyArg_ParseTuple(args, "|L", &from)) return NULL;
    if (from >= self->t.rows.n) Py_RETURN_NONE;
    return PyLong_FromLongLong((long long)kt_max_ts(&self->t, (int64_t)from));
}

static PyObject *RankTable_shift(RankTable *self, PyObject *args) {
    long long from, offset;
    if (!PyArg_ParseTuple(args, "LL", &from, &offset)) return NULL;
    if (check_idle(self) < 0) return NULL;
    if (self->t.finished) {
        PyErr_SetString(PyExc_RuntimeError, "RankTable already finished");
        return NULL;
    }
    kt_shift(&self->t, (int64_t)from, (int64_t)offset);
    Py_RETURN_NONE;
}

static PyObject *RankTable_memory_len(RankTable *self, PyObject *unused) {
    return PyLong_FromLongLong((long long)self->t.mem.n);
}

static PyObject *RankTable_shift_memory(RankTable *self, PyObject *args) {
    long long from, offset;
    if (!PyArg_ParseTuple(args, "LL", &from, &offset)) return NULL;
    if (check_idle(self) < 0) return NULL;
    kt_shift_mem(&self->t, (int64_t)from, (int64_t)offset);
    Py_RETURN_NONE;
}

static PyObject *raw_bytes(const void *v, int64_t n, size_t itemsize) {
    return PyBytes_FromStringAndSize(n ? (const char *)v : "", (Py_ssize_t)((size_t)n * itemsize));
}

/* The memory events as native-endian bytes of int64 / int32 values (memoryview(b).cast("q") / ("i")),
   in the order of scope.ingest.tables_spec.MEMORY_COLUMNS after rank: 7 copies, no Python int per value. */
static PyObject *RankTable_memory(RankTable *self, PyObject *unused) {
    const kt_mem *m = &self->t.mem;
    if (check_idle(self) < 0) return NULL;
    PyObject *cols[7] = {
        raw_bytes(m->ts_ns, m->n, 8),          raw_bytes(m->bytes, m->n, 8),     raw_bytes(m->total_allocated, m->n, 8),
        raw_bytes(m->total_reserved, m->n, 8), raw_bytes(m->device_type, m->n, 4), raw_bytes(m->device_id, m->n, 4),
        raw_bytes(m->addr, m->n, 8)};
    for (int i = 0; i < 7; i++) {
        if (!cols[i]) {
            for (int j = 0; j < 7; j++) Py_XDECREF(cols[j]);
            return NULL;
        }
    }
    return Py_BuildValue("(NNNNNNN)", cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6]);
}

/* A bytes-like argument with one byte per pair. */
static int pair_bytes(PyObject *obj, Py_buffer *view, const RankTable *self, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return -1;
    if (view->len != self->t.pairs.count) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes for %d pairs", what, view->len, self->t.pairs.count);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static int alloc_comm(RankTable *self) {
    int64_t n = self->t.rows.n ? self->t.rows.n : 1;
    for (int i = 0; i < C_NSTR; i++) {
        self->comm_code[i] = malloc((size_t)n * sizeof(int32_t));
        if (!self->comm_code[i]) return -1;
        memset(self->comm_code[i], 0xff, (size_t)n * sizeof(int32_t));
    }
    self->in_nelems = malloc((size_t)n * sizeof(int64_t));
    self->out_nelems = malloc((size_t)n * sizeof(int64_t));
    self->nbytes = malloc((size_t)n * sizeof(int64_t));
    self->group_size = malloc((size_t)n * sizeof(int32_t));
    self->peer = malloc((size_t)n * sizeof(int32_t));
    if (!self->in_nelems || !self->out_nelems || !self->nbytes || !self->group_size || !self->peer) return -1;
    memset(self->peer, 0xff, (size_t)n * sizeof(int32_t));
    memset(self->in_nelems, 0xff, (size_t)n * sizeof(int64_t));
    memset(self->out_nelems, 0xff, (size_t)n * sizeof(int64_t));
    memset(self->nbytes, 0xff, (size_t)n * sizeof(int64_t));
    memset(self->group_size, 0xff, (size_t)n * sizeof(int32_t));
    return 0;
}

static PyObject *RankTable_finish(RankTable *self, PyObject *args) {
    PyObject *gpu_obj, *step_obj;
    if (!PyArg_ParseTuple(args, "OO", &gpu_obj, &step_obj)) return NULL;
    if (check_idle(self) < 0) return NULL;
    if (self->t.finished) {
        PyErr_SetString(PyExc_RuntimeError, "RankTable already finished");
        return NULL;
    }
    Py_buffer gpu, step;
    if (pair_bytes(gpu_obj, &gpu, self, "pair_on_gpu") < 0) return NULL;
    if (pair_bytes(step_obj, &step, self, "pair_is_step") < 0) {
        PyBuffer_Release(&gpu);
        return NULL;
    }
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = kt_finish(&self->t, gpu.buf, step.buf);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyBuffer_Release(&gpu);
    PyBuffer_Release(&step);
    if (rc < 0 || alloc_comm(self) < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static int check_finished(RankTable *self) {
    if (check_idle(self) < 0) return -1;
    if (!self->t.finished) {
        PyErr_SetString(PyExc_RuntimeError, "RankTable not finished");
        return -1;
    }
    return 0;
}

static PyObject *comm_text(const kt_table *t, const kt_comm *cm, int field, int as_bytes) {
    if (cm == NULL || cm->text_len[field] < 0) Py_RETURN_NONE;
    const char *s = t->comm_text.data + cm->text_off[field];
    if (as_bytes) return PyBytes_FromStringAndSize(s, cm->text_len[field]);
    return decode_text(s, (size_t)cm->text_len[field]);
}

/* Rows whose pair is flagged, or whose args name a collective. */
static PyObject *RankTable_candidates(RankTable *self, PyObject *flag_obj) {
    if (check_finished(self) < 0) return NULL;
    Py_buffer flag;
    if (pair_bytes(flag_obj, &flag, self, "pair_flag") < 0) return NULL;
    const uint8_t *flags = flag.buf;
    const kt_rows *r = &self->t.rows;
    PyObject *out = PyList_New(0);
    for (int64_t i = 0; out && i < r->n; i++) {
        const kt_comm *cm = r->comm[i] >= 0 ? &self->t.comms[r->comm[i]] : NULL;
        int named = cm && cm->text_len[KT_COLLECTIVE] > 0;
        if (!flags[r->pair[i]] && !named) continue;
        PyObject *item = Py_BuildValue(
            "(LLLLiiLLLiNNNNNNNLLLLLN)", (long long)i, (long long)r->event_id[i], (long long)r->ts_ns[i],
            (long long)r->dur_ns[i], r->pair[i], r->device[i], (long long)r->stream[i], (long long)r->thread[i],
            (long long)r->corr[i], r->step[i], comm_text(&self->t, cm, KT_COLLECTIVE, 0),
            comm_text(&self->t, cm, KT_DTYPE, 0), comm_text(&self->t, cm, KT_PG_NAME, 0),
            comm_text(&self->t, cm, KT_PG_DESC, 0), comm_text(&self->t, cm, KT_PG_RANKS, 1),
            comm_text(&self->t, cm, KT_INPUT_DIMS, 1), comm_text(&self->t, cm, KT_INPUT_TYPE, 1),
            (long long)(cm ? cm->in_nelems : -1), (long long)(cm ? cm->out_nelems : -1),
            (long long)(cm ? cm->group_size : -1), (long long)(cm ? cm->src_rank : -1),
            (long long)(cm ? cm->dst_rank : -1), comm_text(&self->t, cm, KT_CONCRETE, 1));
        if (!item || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(item);
    }
    PyBuffer_Release(&flag);
    return out;
}

static PyObject *RankTable_launch_of(RankTable *self, PyObject *corrs) {
    if (check_finished(self) < 0) return NULL;
    PyObject *seq = PySequence_Fast(corrs, "launch_of expects a sequence of ints");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        long long corr = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
        if (corr == -1 && PyErr_Occurred()) {
            Py_CLEAR(out);
            break;
        }
        int64_t row = kt_launch_row(&self->t, (int64_t)corr);
        PyObject *item = row < 0 ? (Py_INCREF(Py_None), Py_None)
                                 : Py_BuildValue("(LL)", (long long)self->t.rows.thread[row],
                                                 (long long)self->t.rows.ts_ns[row]);
        if (!item) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, item);
    }
    Py_DECREF(seq);
    return out;
}

/* Set one sparse string column: codes[row] = id of value (None leaves it null). */
static int set_str_column(RankTable *self, int col, PyObject *rows, PyObject *values) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        long long row = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(rows, i));
        PyObject *v = PySequence_Fast_GET_ITEM(values, i);
        if (row == -1 && PyErr_Occurred()) return -1;
        if (row < 0 || row >= self->t.rows.n) {
            PyErr_Format(PyExc_IndexError, "row %lld out of range", row);
            return -1;
        }
        if (v == Py_None) {
            self->comm_code[col][row] = -1;
            continue;
        }
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(v, &len);
        if (!s) return -1;
        int32_t id = kt_intern_add(&self->comm_dict[col], s, (size_t)len);
        if (id < 0) {
            PyErr_NoMemory();
            return -1;
        }
        self->comm_code[col][row] = id;
    }
    return 0;
}

static int set_int_column(RankTable *self, PyObject *rows, PyObject *values, int64_t *out64, int32_t *out32) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        long long row = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(rows, i));
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(values, i));
        if ((row == -1 || v == -1) && PyErr_Occurred()) return -1;
        if (row < 0 || row >= self->t.rows.n) {
            PyErr_Format(PyExc_IndexError, "row %lld out of range", row);
            return -1;
        }
        if (out64) out64[row] = (int64_t)v;
        else out32[row] = (int32_t)(v < INT32_MIN || v > INT32_MAX ? -1 : v);
    }
    return 0;
}

/* set_comm(rows, coll_op, pg, dtype, group_ranks, in_nelems, out_nelems, bytes, group_size[, peer]) */
static PyObject *RankTable_set_comm(RankTable *self, PyObject *args) {
    if (check_finished(self) < 0) return NULL;
    PyObject *objs[10], *seqs[10] = {NULL};
    objs[9] = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO|O", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &objs[8], &objs[9]))
        return NULL;
    int nseq = objs[9] ? 10 : 9;
    PyObject *result = NULL;
    for (int i = 0; i < nseq; i++) {
        seqs[i] = PySequence_Fast(objs[i], "set_comm expects sequences");
        if (!seqs[i]) goto done;
        if (PySequence_Fast_GET_SIZE(seqs[i]) != PySequence_Fast_GET_SIZE(seqs[0])) {
            PyErr_SetString(PyExc_ValueError, "set_comm: sequences of different lengths");
            goto done;
        }
    }
    for (int c = 0; c < C_NSTR; c++)
        if (set_str_column(self, c, seqs[0], seqs[1 + c]) < 0) goto done;
    if (set_int_column(self, seqs[0], seqs[5], self->in_nelems, NULL) < 0 ||
        set_int_column(self, seqs[0], seqs[6], self->out_nelems, NULL) < 0 ||
        set_int_column(self, seqs[0], seqs[7], self->nbytes, NULL) < 0 ||
        set_int_column(self, seqs[0], seqs[8], NULL, self->group_size) < 0 ||
        (nseq == 10 && set_int_column(self, seqs[0], seqs[9], NULL, self->peer) < 0))
        goto done;
    result = Py_None;
    Py_INCREF(result);
done:
    for (int i = 0; i < 10; i++) Py_XDECREF(seqs[i]);
    return result;
}

/* {(step, kind): count} over rows inside a step; kinds come from pair_kind (one byte per pair). */
/* Rows per (step, kind) counted in a C array while the GIL is free (a Python tuple and int per row held
   it for 3 ms of a rank's 27 ms); the dictionary way for steps numbered too far apart for an array. */
#define STEP_COUNT_CELLS (1 << 20)

static void count_steps(const kt_rows *r, const uint8_t *kinds, int64_t n_kinds, int32_t lo, int64_t *cells) {
    for (int64_t i = 0; i < r->n; i++)
        if (r->step[i] >= 0) cells[(int64_t)(r->step[i] - lo) * n_kinds + kinds[r->pair[i]]]++;
}

static PyObject *step_counts_dict(const kt_rows *r, const uint8_t *kinds) {
    PyObject *out = PyDict_New();
    for (int64_t i = 0; out && i < r->n; i++) {
        if (r->step[i] < 0) continue;
        PyObject *key = Py_BuildValue("(ii)", r->step[i], kinds[r->pair[i]]);
        PyObject *old = key ? PyDict_GetItemWithError(out, key) : NULL;
        long long count = old ? PyLong_AsLongLong(old) + 1 : 1;
        PyObject *val = PyLong_FromLongLong(count);
        if (!key || !val || PyErr_Occurred() || PyDict_SetItem(out, key, val) < 0) Py_CLEAR(out);
        Py_XDECREF(key);
        Py_XDECREF(val);
    }
    return out;
}

static PyObject *step_counts_array(RankTable *self, const uint8_t *kinds, int32_t lo, int64_t span) {
    const int64_t n_kinds = 256;
    const kt_rows *r = &self->t.rows;
    int64_t *cells = calloc((size_t)(span * n_kinds), sizeof *cells);
    if (!cells) return PyErr_NoMemory();
    self->busy = 1; /* another thread's read or finish must not move the rows counted without the GIL */
    Py_BEGIN_ALLOW_THREADS
    count_steps(r, kinds, n_kinds, lo, cells);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyObject *out = PyDict_New();
    for (int64_t c = 0; out && c < span * n_kinds; c++) {
        if (!cells[c]) continue;
        PyObject *key = Py_BuildValue("(ii)", (int)(lo + c / n_kinds), (int)(c % n_kinds));
        PyObject *val = PyLong_FromLongLong(cells[c]);
        if (!key || !val || PyDict_SetItem(out, key, val) < 0) Py_CLEAR(out);
        Py_XDECREF(key);
        Py_XDECREF(val);
    }
    free(cells);
    return out;
}

static PyObject *RankTable_step_counts(RankTable *self, PyObject *kind_obj) {
    if (check_finished(self) < 0) return NULL;
    Py_buffer kind;
    if (pair_bytes(kind_obj, &kind, self, "pair_kind") < 0) return NULL;
    const uint8_t *kinds = kind.buf;
    const kt_rows *r = &self->t.rows;
    int32_t lo = INT32_MAX, hi = -1;
    for (int64_t i = 0; i < r->n; i++) {
        if (r->step[i] < 0) continue;
        if (r->step[i] < lo) lo = r->step[i];
        if (r->step[i] > hi) hi = r->step[i];
    }
    PyObject *out;
    if (hi < 0)
        out = PyDict_New();
    else if ((int64_t)hi - lo + 1 <= STEP_COUNT_CELLS / 256)
        out = step_counts_array(self, kinds, lo, (int64_t)hi - lo + 1);
    else
        out = step_counts_dict(r, kinds);
    PyBuffer_Release(&kind);
    return out;
}

/* ------------------------------------------------------------------ writing */

typedef struct {
    const char **ptr;
    int32_t *len;
} dict_view;

static int view_of(const kt_intern *in, dict_view *v) {
    int32_t n = in->count ? in->count : 1;
    v->ptr = malloc((size_t)n * sizeof *v->ptr);
    v->len = malloc((size_t)n * sizeof *v->len);
    if (!v->ptr || !v->len) return -1;
    for (int32_t i = 0; i < in->count; i++) {
        v->ptr[i] = in->arena.data + in->offset[i];
        v->len[i] = in->length[i];
    }
    return 0;
}

static void view_free(dict_view *v) {
    free(v->ptr);
    free(v->len);
}

typedef struct {
    int32_t *rank, *name, *cat, *kind;
    dict_view names, cats, comm[C_NSTR];
    const char **kind_ptr;
    int32_t *kind_len;
} write_buffers;

static void buffers_free(write_buffers *b) {
    free(b->rank);
    free(b->name);
    free(b->cat);
    free(b->kind);
    view_free(&b->names);
    view_free(&b->cats);
    for (int i = 0; i < C_NSTR; i++) view_free(&b->comm[i]);
    free(b->kind_ptr);
    free(b->kind_len);
}

static int fill_buffers(RankTable *self, int rank, const uint8_t *pair_kind, write_buffers *b) {
    const kt_rows *r = &self->t.rows;
    size_t n = (size_t)(r->n ? r->n : 1);
    b->rank = malloc(n * sizeof(int32_t));
    b->name = malloc(n * sizeof(int32_t));
    b->cat = malloc(n * sizeof(int32_t));
    b->kind = malloc(n * sizeof(int32_t));
    if (!b->rank || !b->name || !b->cat || !b->kind) return -1;
    for (int64_t i = 0; i < r->n; i++) {
        b->rank[i] = rank;
        pair_ids(&self->t, r->pair[i], &b->cat[i], &b->name[i]);
        b->kind[i] = pair_kind[r->pair[i]];
    }
    if (view_of(&self->t.names, &b->names) < 0 || view_of(&self->t.cats, &b->cats) < 0) return -1;
    for (int i = 0; i < C_NSTR; i++)
        if (view_of(&self->comm_dict[i], &b->comm[i]) < 0) return -1;
    return 0;
}

static pq_column num_col(const char *name, pq_kind kind, const void *values) {
    pq_column c = {name, kind, values, NULL, NULL, NULL, 0};
    return c;
}

static pq_column str_col(const char *name, const int32_t *codes, const char **ptr, const int32_t *len, int32_t n) {
    pq_column c = {name, PQ_STRING, codes, NULL, (const char *const *)ptr, len, n};
    return c;
}

/* write_events(path, rank, kind_names, pair_kind, compression="zstd", row_group_size=262144)
 * Columns in the order of scope.ingest.columns.EVENTS_SCHEMA. */
static PyObject *RankTable_write_events(RankTable *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"path", "rank", "kind_names", "pair_kind", "compression", "row_group_size", NULL};
    PyObject *path_obj, *kinds_obj, *pair_kind_obj;
    int rank;
    const char *compression = "zstd";
    long long row_group = 262144;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&iOO|sL", kwlist, PyUnicode_FSConverter, &path_obj, &rank,
                                     &kinds_obj, &pair_kind_obj, &compression, &row_group))
        return NULL;
    PyObject *result = NULL, *kinds = NULL;
    Py_buffer pk = {0};
    write_buffers b;
    memset(&b, 0, sizeof b);
    if (check_finished(self) < 0) goto done;
    if (pair_bytes(pair_kind_obj, &pk, self, "pair_kind") < 0) goto done;
    kinds = PySequence_Fast(kinds_obj, "kind_names must be a sequence of str");
    if (!kinds) goto done;
    Py_ssize_t nk = PySequence_Fast_GET_SIZE(kinds);
    b.kind_ptr = malloc((size_t)(nk ? nk : 1) * sizeof *b.kind_ptr);
    b.kind_len = malloc((size_t)(nk ? nk : 1) * sizeof *b.kind_len);
    if (!b.kind_ptr || !b.kind_len) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nk; i++) {
        Py_ssize_t len;
        b.kind_ptr[i] = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(kinds, i), &len);
        if (!b.kind_ptr[i]) goto done;
        b.kind_len[i] = (int32_t)len;
    }
    const uint8_t *pair_kind = pk.buf;
    for (int32_t p = 0; p < self->t.pairs.count; p++)
        if (pair_kind[p] >= nk) {
            PyErr_Format(PyExc_ValueError, "pair_kind: code %d but %zd kind names", pair_kind[p], nk);
            goto done;
        }
    if (fill_buffers(self, rank, pair_kind, &b) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    const kt_rows *r = &self->t.rows;
    pq_column cols[] = {
        num_col("rank", PQ_INT32, b.rank),
        num_col("event_id", PQ_INT64, r->event_id),
        num_col("ts_ns", PQ_INT64, r->ts_ns),
        num_col("dur_ns", PQ_INT64, r->dur_ns),
        str_col("name", b.name, b.names.ptr, b.names.len, self->t.names.count),
        str_col("cat", b.cat, b.cats.ptr, b.cats.len, self->t.cats.count),
        str_col("kind", b.kind, b.kind_ptr, b.kind_len, (int32_t)nk),
        num_col("device", PQ_INT32, r->device),
        num_col("stream", PQ_INT64, r->stream),
        num_col("thread", PQ_INT64, r->thread),
        num_col("pid", PQ_INT64, r->pid),
        num_col("correlation", PQ_INT64, r->corr),
        num_col("external_id", PQ_INT64, r->ext),
        num_col("step", PQ_INT32, r->step),
        str_col("coll_op", self->comm_code[C_COLL_OP], b.comm[C_COLL_OP].ptr, b.comm[C_COLL_OP].len,
                self->comm_dict[C_COLL_OP].count),
        str_col("pg", self->comm_code[C_PG], b.comm[C_PG].ptr, b.comm[C_PG].len, self->comm_dict[C_PG].count),
        num_col("in_nelems", PQ_INT64, self->in_nelems),
        num_col("out_nelems", PQ_INT64, self->out_nelems),
        num_col("bytes", PQ_INT64, self->nbytes),
        str_col("dtype", self->comm_code[C_DTYPE], b.comm[C_DTYPE].ptr, b.comm[C_DTYPE].len,
                self->comm_dict[C_DTYPE].count),
        num_col("group_size", PQ_INT32, self->group_size),
        str_col("group_ranks", self->comm_code[C_GROUP_RANKS], b.comm[C_GROUP_RANKS].ptr,
                b.comm[C_GROUP_RANKS].len, self->comm_dict[C_GROUP_RANKS].count),
        num_col("flops", PQ_DOUBLE, r->flops),
        num_col("peer", PQ_INT32, self->peer),
    };
    int codec = strcmp(compression, "none") == 0 ? PQ_CODEC_NONE : PQ_CODEC_ZSTD;
    char err[512] = "";
    int rc;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = pq_write(PyBytes_AS_STRING(path_obj), cols, (int)(sizeof cols / sizeof cols[0]), r->n, row_group, codec,
                  NULL, NULL, 0, err, sizeof err);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (rc < 0) {
        PyErr_SetString(PyExc_OSError, err);
        goto done;
    }
    result = PyLong_FromLongLong((long long)r->n);
done:
    buffers_free(&b);
    if (pk.obj) PyBuffer_Release(&pk);
    Py_XDECREF(kinds);
    Py_DECREF(path_obj);
    return result;
}

static Py_ssize_t RankTable_len(RankTable *self) { return (Py_ssize_t)self->t.rows.n; }

static PyMethodDef RankTable_methods[] = {
    {"read", (PyCFunction)RankTable_read, METH_VARARGS,
     "read(path, first_id) -> dict: stream one trace file into the table (GIL released)."},
    {"pairs", (PyCFunction)RankTable_pairs, METH_NOARGS, "pairs() -> [(cat, name)] by pair id."},
    {"memory_len", (PyCFunction)RankTable_memory_len, METH_NOARGS, "memory_len() -> memory events read so far."},
    {"shift_memory", (PyCFunction)RankTable_shift_memory, METH_VARARGS,
     "shift_memory(from_row, offset_ns): add offset to later memory events."},
    {"memory", (PyCFunction)RankTable_memory, METH_NOARGS,
     "memory() -> (ts_ns, bytes, total_allocated, total_reserved, device_type, device_id, addr) as bytes."},
    {"max_ts", (PyCFunction)RankTable_max_ts, METH_VARARGS, "max_ts(from_row=0) -> largest ts in ns, or None."},
    {"shift", (PyCFunction)RankTable_shift, METH_VARARGS, "shift(from_row, offset_ns): add offset to later rows."},
    {"finish", (PyCFunction)RankTable_finish, METH_VARARGS,
     "finish(pair_on_gpu, pair_is_step): sort by time, derive placement, assign steps."},
    {"candidates", (PyCFunction)RankTable_candidates, METH_O,
     "candidates(pair_flag) -> rows of flagged pairs or with a collective name, with their comm args."},
    {"launch_of", (PyCFunction)RankTable_launch_of, METH_O,
     "launch_of(correlations) -> [(thread, ts_ns) of the first CPU row with that id, or None]."},
    {"set_comm", (PyCFunction)RankTable_set_comm, METH_VARARGS,
     "set_comm(rows, coll_op, pg, dtype, group_ranks, in_nelems, out_nelems, bytes, group_size[, peer])."},
    {"step_counts", (PyCFunction)RankTable_step_counts, METH_O,
     "step_counts(pair_kind) -> {(step, kind code): rows}."},
    {"write_events", (PyCFunction)(void (*)(void))RankTable_write_events, METH_VARARGS | METH_KEYWORDS,
     "write_events(path, rank, kind_names, pair_kind, compression='zstd', row_group_size=262144) -> rows."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods RankTable_as_sequence = {.sq_length = (lenfunc)RankTable_len};

static PyTypeObject RankTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scope.ingest._native.RankTable",
    .tp_basicsize = sizeof(RankTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One rank's complete events as columns, filled by a native Kineto scanner.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RankTable_init,
    .tp_dealloc = (destructor)RankTable_dealloc,
    .tp_methods = RankTable_methods,
    .tp_as_sequence = &RankTable_as_sequence,
};

int kineto_register(PyObject *module) {
    if (PyType_Ready(&RankTableType) < 0) return -1;
    Py_INCREF(&RankTableType);
    if (PyModule_AddObject(module, "RankTable", (PyObject *)&RankTableType) < 0) {
        Py_DECREF(&RankTableType);
        return -1;
    }
    return 0;
}
