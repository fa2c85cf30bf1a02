/* pqwrite_py.c: write_parquet(), the Python face of pqwrite.c.
 *
 * With the GIL held, every column becomes C arrays (numbers, a validity byte per row when there
 * are nulls, dictionary codes and a dictionary for strings); then pq_write runs with the GIL
 * released. Every Python object whose memory the C side points into (names, dictionary strings,
 * metadata, exported buffers) is kept referenced until pq_write returns, so another thread that
 * mutates the caller's lists or dicts meanwhile cannot free it.
 */
#include "pqwrite.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *type_name;
    pq_kind kind;
    Py_ssize_t itemsize; /* of a buffer accepted as-is */
} kind_info;

static const kind_info KINDS[] = {
    {"int32", PQ_INT32, 4}, {"int64", PQ_INT64, 8}, {"float64", PQ_DOUBLE, 8},
    {"bool", PQ_BOOL, 1},   {"string", PQ_STRING, 0},
};

/* One column on its way to pq_write. */
typedef struct {
    const char *name;
    pq_kind kind;
    Py_ssize_t nrows;
    void *values;    /* malloc'ed, or view.buf */
    uint8_t *valid;  /* malloc'ed once a None is seen */
    int has_view;
    Py_buffer view;
    const char **dict;
    int32_t *dict_len;
    int32_t dict_size;
} column_input;

static void column_input_free(column_input *ci) {
    if (ci->has_view)
        PyBuffer_Release(&ci->view);
    else
        free(ci->values);
    free(ci->valid);
    free(ci->dict);
    free(ci->dict_len);
}

static const kind_info *kind_by_name(PyObject *type_name) {
    const char *s = PyUnicode_Check(type_name) ? PyUnicode_AsUTF8(type_name) : NULL;
    if (s == NULL) {
        PyErr_Clear();
        return NULL;
    }
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strcmp(s, KINDS[i].type_name) == 0) return &KINDS[i];
    return NULL;
}

/* UTF-8 of a str without NUL bytes (the C side takes NUL-terminated names). */
static const char *utf8_without_nul(PyObject *s, const char *what) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s", what, Py_TYPE(s)->tp_name);
        return NULL;
    }
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) return NULL;
    if ((size_t)n != strlen(u)) {
        PyErr_Format(PyExc_ValueError, "%s must not contain NUL characters", what);
        return NULL;
    }
    return u;
}

/* ---- numeric columns -------------------------------------------------------------------------------- */

/* Whether a buffer's struct format holds the column's type (itemsize is checked separately). */
static int buffer_format_fits(const char *fmt, pq_kind kind) {
    if (fmt == NULL) fmt = "B";
    if (*fmt == '<' || *fmt == '=' || *fmt == '@') fmt++;
    char code = fmt[0];
    if (code == '\0' || fmt[1] != '\0') return 0;
    switch (kind) {
    case PQ_INT32:
    case PQ_INT64: return strchr("hilqn", code) != NULL; /* signed integers */
    case PQ_DOUBLE: return code == 'd';
    case PQ_BOOL: return strchr("?bBc", code) != NULL;
    default: return 0;
    }
}

/* Fast path: a contiguous buffer of the column's type is used in place (no nulls then).
 * Returns 1 if taken, 0 if values must go the per-item way, -1 on error. */
static int take_buffer(column_input *ci, PyObject *values, const kind_info *k) {
    if (!PyObject_CheckBuffer(values)) return 0;
    if (PyObject_GetBuffer(values, &ci->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear(); /* e.g. a strided numpy view: iterate it instead */
        return 0;
    }
    if (ci->view.ndim != 1 || ci->view.itemsize != k->itemsize || !buffer_format_fits(ci->view.format, k->kind)) {
        PyBuffer_Release(&ci->view);
        return 0;
    }
    ci->has_view = 1;
    ci->values = ci->view.buf;
    ci->nrows = ci->view.len / k->itemsize;
    return 1;
}

static void item_type_error(const column_input *ci, Py_ssize_t row, const char *expected, PyObject *o) {
    PyErr_Format(PyExc_TypeError, "column '%s': row %zd: expected %s or None, got %.100s", ci->name, row, expected,
                 Py_TYPE(o)->tp_name);
}

/* Integer in [lo, hi]. Floats are refused rather than truncated; objects with __index__ (numpy
 * integers) are accepted. */
static int item_to_int(const column_input *ci, Py_ssize_t row, PyObject *o, long long lo, long long hi,
                       long long *out) {
    PyObject *num;
    if (PyLong_Check(o)) {
        num = Py_NewRef(o);
    } else if (!PyFloat_Check(o) && PyIndex_Check(o)) {
        num = PyNumber_Index(o);
        if (num == NULL) return -1;
    } else {
        item_type_error(ci, row, "int", o);
        return -1;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(num, &overflow);
    Py_DECREF(num);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow != 0 || v < lo || v > hi) {
        const char *range = ci->kind == PQ_INT32 ? "int32" : ci->kind == PQ_INT64 ? "int64" : "bool (0 or 1)";
        PyErr_Format(PyExc_ValueError, "column '%s': row %zd: value out of range for %s", ci->name, row, range);
        return -1;
    }
    *out = v;
    return 0;
}

/* Float, int or anything with __float__ (numpy floats); strings are refused. */
static int item_to_double(const column_input *ci, Py_ssize_t row, PyObject *o, double *out) {
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (PyUnicode_Check(o) || PyBytes_Check(o) || PyByteArray_Check(o)) {
        item_type_error(ci, row, "float", o);
        return -1;
    }
    if (PyLong_Check(o)) {
        *out = PyLong_AsDouble(o);
        if (*out == -1.0 && PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "column '%s': row %zd: int too large for float64", ci->name, row);
            return -1;
        }
        return 0;
    }
    *out = PyFloat_AsDouble(o);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        item_type_error(ci, row, "float", o);
        return -1;
    }
    return 0;
}

static int item_to_bool(const column_input *ci, Py_ssize_t row, PyObject *o, uint8_t *out) {
    if (o == Py_True || o == Py_False) {
        *out = o == Py_True;
        return 0;
    }
    if (!PyLong_Check(o)) {
        item_type_error(ci, row, "bool", o);
        return -1;
    }
    long long v;
    if (item_to_int(ci, row, o, 0, 1, &v) < 0) return -1;
    *out = (uint8_t)v;
    return 0;
}

static int store_number(column_input *ci, Py_ssize_t row, PyObject *o) {
    long long v;
    switch (ci->kind) {
    case PQ_INT32:
        if (item_to_int(ci, row, o, INT32_MIN, INT32_MAX, &v) < 0) return -1;
        ((int32_t *)ci->values)[row] = (int32_t)v;
        return 0;
    case PQ_INT64:
        if (item_to_int(ci, row, o, INT64_MIN, INT64_MAX, &v) < 0) return -1;
        ((int64_t *)ci->values)[row] = (int64_t)v;
        return 0;
    case PQ_DOUBLE: return item_to_double(ci, row, o, &((double *)ci->values)[row]);
    default: return item_to_bool(ci, row, o, &((uint8_t *)ci->values)[row]);
    }
}

/* Marks a row null, creating the validity bytes (all valid so far) on the first None. */
static int store_null(column_input *ci, Py_ssize_t row, size_t itemsize) {
    if (ci->valid == NULL) {
        ci->valid = malloc(ci->nrows > 0 ? (size_t)ci->nrows : 1);
        if (ci->valid == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memset(ci->valid, 1, (size_t)ci->nrows);
    }
    ci->valid[row] = 0;
    memset((uint8_t *)ci->values + (size_t)row * itemsize, 0, itemsize); /* no stray bytes reach the file */
    return 0;
}

/* Fetches item i of a list or tuple with a new reference, failing if a list shrank meanwhile
 * (__index__ or __float__ of an item can run arbitrary Python code). */
static PyObject *sequence_item(const column_input *ci, PyObject *seq, Py_ssize_t i) {
    if (i >= PySequence_Fast_GET_SIZE(seq)) {
        PyErr_Format(PyExc_RuntimeError, "column '%s': values changed size during conversion", ci->name);
        return NULL;
    }
    return Py_NewRef(PySequence_Fast_GET_ITEM(seq, i));
}

static int convert_numbers(column_input *ci, PyObject *values, const kind_info *k) {
    PyObject *seq = PySequence_Fast(values, "");
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "column '%s': values must be a sequence or a buffer of %s, not %.100s",
                     ci->name, k->type_name, Py_TYPE(values)->tp_name);
        return -1;
    }
    ci->nrows = PySequence_Fast_GET_SIZE(seq);
    size_t itemsize = (size_t)k->itemsize;
    ci->values = malloc(ci->nrows > 0 ? (size_t)ci->nrows * itemsize : 1);
    if (ci->values == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; i < ci->nrows && rc == 0; i++) {
        PyObject *o = sequence_item(ci, seq, i);
        if (o == NULL) {
            rc = -1;
            break;
        }
        rc = o == Py_None ? store_null(ci, i, itemsize) : store_number(ci, i, o);
        Py_DECREF(o);
    }
    Py_DECREF(seq);
    return rc;
}

/* ---- string columns --------------------------------------------------------------------------------- */

/* Dictionary code of one str: looked up in `index` (str -> code), appended to `entries` if new. */
static int string_code(const column_input *ci, Py_ssize_t row, PyObject *o, PyObject *index, PyObject *entries,
                       int32_t *code) {
    if (!PyUnicode_Check(o)) {
        item_type_error(ci, row, "str", o);
        return -1;
    }
    /* A str subclass could hash or compare in Python code: key the dictionary by a plain copy. */
    PyObject *key = PyUnicode_CheckExact(o) ? Py_NewRef(o) : PyUnicode_FromObject(o);
    if (key == NULL) return -1;
    PyObject *found = PyDict_GetItemWithError(index, key);
    int rc = 0;
    if (found != NULL) {
        *code = (int32_t)PyLong_AsLong(found);
    } else if (PyErr_Occurred()) {
        rc = -1;
    } else if (PyList_GET_SIZE(entries) >= INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "column '%s': more than 2**31 - 1 distinct strings", ci->name);
        rc = -1;
    } else {
        Py_ssize_t next = PyList_GET_SIZE(entries);
        PyObject *num = PyLong_FromSsize_t(next);
        rc = num == NULL || PyDict_SetItem(index, key, num) < 0 || PyList_Append(entries, key) < 0 ? -1 : 0;
        Py_XDECREF(num);
        *code = (int32_t)next;
    }
    Py_DECREF(key);
    return rc;
}

/* The dictionary's UTF-8 texts; `entries` (kept alive by the caller) owns the memory. */
static int dictionary_texts(column_input *ci, PyObject *entries) {
    Py_ssize_t n = PyList_GET_SIZE(entries);
    ci->dict = malloc((n > 0 ? (size_t)n : 1) * sizeof *ci->dict);
    ci->dict_len = malloc((n > 0 ? (size_t)n : 1) * sizeof *ci->dict_len);
    if (ci->dict == NULL || ci->dict_len == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t e = 0; e < n; e++) {
        Py_ssize_t len;
        const char *u = PyUnicode_AsUTF8AndSize(PyList_GET_ITEM(entries, e), &len);
        if (u == NULL) { /* lone surrogates have no UTF-8 form */
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "column '%s': string %R cannot be encoded as UTF-8", ci->name,
                         PyList_GET_ITEM(entries, e));
            return -1;
        }
        if (len > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "column '%s': a string longer than 2 GB", ci->name);
            return -1;
        }
        ci->dict[e] = u;
        ci->dict_len[e] = (int32_t)len;
    }
    ci->dict_size = (int32_t)n;
    return 0;
}

static int convert_strings(column_input *ci, PyObject *values, PyObject *keep) {
    if (PyUnicode_Check(values) || PyBytes_Check(values) || PyByteArray_Check(values)) {
        PyErr_Format(PyExc_TypeError, "column '%s': values must be a sequence of str, not %.100s", ci->name,
                     Py_TYPE(values)->tp_name);
        return -1;
    }
    PyObject *seq = PySequence_Fast(values, "");
    if (seq == NULL) {
        PyErr_Format(PyExc_TypeError, "column '%s': values must be a sequence of str, not %.100s", ci->name,
                     Py_TYPE(values)->tp_name);
        return -1;
    }
    PyObject *index = PyDict_New(), *entries = PyList_New(0);
    ci->nrows = PySequence_Fast_GET_SIZE(seq);
    ci->values = malloc(ci->nrows > 0 ? (size_t)ci->nrows * sizeof(int32_t) : 1);
    int rc = index != NULL && entries != NULL && PyList_Append(keep, entries) == 0 ? 0 : -1;
    if (rc == 0 && ci->values == NULL) {
        PyErr_NoMemory();
        rc = -1;
    }
    int32_t *codes = ci->values;
    PyObject *prev = NULL; /* consecutive rows often share one str object: skip the lookup */
    int32_t prev_code = -1;
    for (Py_ssize_t i = 0; i < ci->nrows && rc == 0; i++) {
        PyObject *o = sequence_item(ci, seq, i);
        if (o == NULL) {
            rc = -1;
        } else if (o == Py_None) {
            codes[i] = -1;
            Py_DECREF(o);
        } else if (o == prev) {
            codes[i] = prev_code;
            Py_DECREF(o);
        } else {
            rc = string_code(ci, i, o, index, entries, &codes[i]);
            prev_code = codes[i];
            Py_XSETREF(prev, o); /* holding it keeps the pointer comparison sound */
        }
    }
    Py_XDECREF(prev);
    if (rc == 0) rc = dictionary_texts(ci, entries);
    Py_XDECREF(index);
    Py_XDECREF(entries);
    Py_DECREF(seq);
    return rc;
}

/* ---- arguments -------------------------------------------------------------------------------------- */

/* (name, type, values) -> column_input. */
static int convert_column(column_input *ci, PyObject *item, Py_ssize_t pos, PyObject *keep, PyObject *names) {
    if (PySequence_Fast_GET_SIZE(item) != 3) {
        PyErr_Format(PyExc_TypeError, "columns[%zd] must be a (name, type, values) tuple", pos);
        return -1;
    }
    PyObject *name = PySequence_Fast_GET_ITEM(item, 0), *type_name = PySequence_Fast_GET_ITEM(item, 1);
    PyObject *values = PySequence_Fast_GET_ITEM(item, 2);
    if (PyList_Append(keep, name) < 0 || PyList_Append(keep, values) < 0) return -1;
    ci->name = utf8_without_nul(name, "column name");
    if (ci->name == NULL) return -1;
    int seen = PySet_Contains(names, name);
    if (seen != 0) {
        if (seen > 0) PyErr_Format(PyExc_ValueError, "duplicate column name '%s'", ci->name);
        return -1;
    }
    if (PySet_Add(names, name) < 0) return -1;
    const kind_info *k = kind_by_name(type_name);
    if (k == NULL) {
        PyErr_Format(PyExc_ValueError, "column '%s': unknown type %R (expected int32, int64, float64, bool or string)",
                     ci->name, type_name);
        return -1;
    }
    ci->kind = k->kind;
    if (k->kind == PQ_STRING) return convert_strings(ci, values, keep);
    int taken = take_buffer(ci, values, k);
    if (taken != 0) return taken < 0 ? -1 : 0;
    return convert_numbers(ci, values, k);
}

static int parse_compression(PyObject *compression, int *codec) {
    const char *s = PyUnicode_Check(compression) ? PyUnicode_AsUTF8(compression) : NULL;
    if (s != NULL && strcmp(s, "zstd") == 0) {
        *codec = PQ_CODEC_ZSTD;
        return 0;
    }
    if (s != NULL && strcmp(s, "none") == 0) {
        *codec = PQ_CODEC_NONE;
        return 0;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "compression must be 'zstd' or 'none', not %R", compression);
    return -1;
}

/* metadata: a mapping of str to str -> parallel arrays of UTF-8 pointers (kept alive via `keep`). */
static int parse_metadata(PyObject *metadata, PyObject *keep, const char ***keys, const char ***vals, int *n) {
    *n = 0;
    if (metadata == Py_None) return 0;
    PyObject *items = PyMapping_Items(metadata);
    if (items == NULL) return -1;
    int rc = PyList_Append(keep, items);
    Py_DECREF(items); /* `keep` holds it now (or the append failed) */
    if (rc < 0) return -1;
    Py_ssize_t count = PyList_GET_SIZE(items);
    if (count > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many metadata entries");
        return -1;
    }
    *keys = malloc((count > 0 ? (size_t)count : 1) * sizeof **keys);
    *vals = malloc((count > 0 ? (size_t)count : 1) * sizeof **vals);
    if (*keys == NULL || *vals == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2) {
            PyErr_SetString(PyExc_TypeError, "metadata items must be (key, value) pairs");
            return -1;
        }
        (*keys)[i] = utf8_without_nul(PyTuple_GET_ITEM(kv, 0), "metadata key");
        if ((*keys)[i] == NULL) return -1;
        (*vals)[i] = utf8_without_nul(PyTuple_GET_ITEM(kv, 1), "metadata value");
        if ((*vals)[i] == NULL) return -1;
    }
    *n = (int)count;
    return 0;
}

static int check_lengths(const column_input *cols, Py_ssize_t ncols) {
    for (Py_ssize_t i = 1; i < ncols; i++) {
        if (cols[i].nrows != cols[0].nrows) {
            PyErr_Format(PyExc_ValueError, "column '%s' has %zd values but column '%s' has %zd", cols[i].name,
                         cols[i].nrows, cols[0].name, cols[0].nrows);
            return -1;
        }
    }
    return 0;
}

/* pq_write's failure as a Python exception: OSError (the right subclass for errno) for I/O. */
static void raise_write_error(int errnum, const char *message) {
    if (errnum == ENOMEM) {
        PyErr_SetString(PyExc_MemoryError, message);
        return;
    }
    if (errnum == EINVAL) {
        PyErr_SetString(PyExc_ValueError, message);
        return;
    }
    PyObject *exc = PyObject_CallFunction(PyExc_OSError, "is", errnum, message);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

PyObject *scope_write_parquet(PyObject *self, PyObject *args, PyObject *kwargs) {
    (void)self;
    static char *kwlist[] = {"path", "columns", "compression", "row_group_size", "metadata", NULL};
    PyObject *path_bytes = NULL, *columns, *compression = NULL, *metadata = Py_None;
    long long row_group_size = 1048576;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O|$OLO:write_parquet", kwlist, PyUnicode_FSConverter,
                                     &path_bytes, &columns, &compression, &row_group_size, &metadata))
        return NULL;

    int codec = PQ_CODEC_ZSTD, n_kv = 0, rc = -1;
    const char **kv_keys = NULL, **kv_values = NULL;
    column_input *inputs = NULL;
    pq_column *cols = NULL;
    Py_ssize_t ncols = 0;
    PyObject *seq = NULL, *names = PySet_New(NULL), *keep = PyList_New(0);
    if (names == NULL || keep == NULL) goto done;
    if (compression != NULL && parse_compression(compression, &codec) < 0) goto done;
    if (row_group_size < 1) {
        PyErr_SetString(PyExc_ValueError, "row_group_size must be at least 1");
        goto done;
    }
    if (parse_metadata(metadata, keep, &kv_keys, &kv_values, &n_kv) < 0) goto done;
    seq = PySequence_Fast(columns, "columns must be a sequence of (name, type, values)");
    if (seq == NULL) goto done;
    ncols = PySequence_Fast_GET_SIZE(seq);
    if (ncols > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many columns");
        goto done;
    }
    inputs = calloc(ncols > 0 ? (size_t)ncols : 1, sizeof *inputs);
    cols = calloc(ncols > 0 ? (size_t)ncols : 1, sizeof *cols);
    if (inputs == NULL || cols == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *item = PySequence_Fast(PySequence_Fast_GET_ITEM(seq, i), "");
        if (item == NULL) {
            PyErr_Format(PyExc_TypeError, "columns[%zd] must be a (name, type, values) tuple", i);
            goto done;
        }
        int ok = PyList_Append(keep, item) == 0 && convert_column(&inputs[i], item, i, keep, names) == 0;
        Py_DECREF(item);
        if (!ok) goto done;
    }
    if (check_lengths(inputs, ncols) < 0) goto done;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        cols[i] = (pq_column){
            .name = inputs[i].name,
            .kind = inputs[i].kind,
            .values = inputs[i].values,
            .valid = inputs[i].valid,
            .dict = inputs[i].dict,
            .dict_len = inputs[i].dict_len,
            .dict_size = inputs[i].dict_size,
        };
    }

    char err[1024];
    int errnum = 0;
    const char *path = PyBytes_AS_STRING(path_bytes);
    int64_t nrows = ncols > 0 ? inputs[0].nrows : 0;
    Py_BEGIN_ALLOW_THREADS;
    rc = pq_write(path, cols, (int)ncols, nrows, row_group_size, codec, kv_keys, kv_values, n_kv, err, sizeof err);
    errnum = errno;
    Py_END_ALLOW_THREADS;
    if (rc != 0) raise_write_error(errnum, err);

done:
    for (Py_ssize_t i = 0; inputs != NULL && i < ncols; i++) column_input_free(&inputs[i]);
    free(inputs);
    free(cols);
    free(kv_keys);
    free(kv_values);
    Py_XDECREF(seq);
    Py_XDECREF(names);
    Py_XDECREF(keep);
    Py_XDECREF(path_bytes);
    if (rc != 0) return NULL;
    Py_RETURN_NONE;
}
