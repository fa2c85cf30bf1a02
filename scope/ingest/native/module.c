/* scope.ingest._native: the native ingest core (Kineto scanner, rank tables, Parquet writer). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pqwrite.h"
#include "kineto.h"
#include "snapshot.h"

static PyObject *set_fast_inflate(PyObject *self, PyObject *on) {
    int truth = PyObject_IsTrue(on);
    if (truth < 0) return NULL;
    return PyBool_FromLong(kt_set_fast_inflate(truth));
}

static PyObject *has_fast_inflate(PyObject *self, PyObject *unused) { return PyBool_FromLong(kt_has_fast_inflate()); }

static PyObject *inflate_takeovers(PyObject *self, PyObject *unused) {
    return PyLong_FromLongLong(kt_inflate_takeovers());
}

static PyObject *set_fill_bytes(PyObject *self, PyObject *n) {
    size_t bytes = PyLong_AsSize_t(n);
    if (bytes == (size_t)-1 && PyErr_Occurred()) return NULL;
    return PyLong_FromSize_t(kt_set_fill_bytes(bytes));
}

static PyObject *set_one_pass_numbers(PyObject *self, PyObject *on) {
    int truth = PyObject_IsTrue(on);
    if (truth < 0) return NULL;
    return PyBool_FromLong(kt_set_one_pass_numbers(truth));
}

static PyMethodDef native_methods[] = {
    {"write_parquet", (PyCFunction)(void (*)(void))scope_write_parquet, METH_VARARGS | METH_KEYWORDS,
     "write_parquet(path, columns, *, compression='zstd', row_group_size=1048576, metadata=None)\n"
     "Write columns [(name, type, values), ...] as one Parquet file. Types: int32, int64, float64, bool, string."},
    {"read_snapshot", (PyCFunction)scope_read_snapshot, METH_VARARGS,
     "read_snapshot(data, budget) -> dict: a CUDA allocator snapshot pickle run without trusting it (no global,\n"
     "no call); trace entries as columns, frames lists as interned stack ids, the rest as plain values."},
    {"set_fast_inflate", (PyCFunction)set_fast_inflate, METH_O,
     "set_fast_inflate(on) -> bool: inflate gzip with ISA-L (when built with it) or zlib alone; the previous setting."},
    {"has_fast_inflate", (PyCFunction)has_fast_inflate, METH_NOARGS,
     "has_fast_inflate() -> bool: the core was built with ISA-L (gzip inflated several times faster than zlib)."},
    {"inflate_takeovers", (PyCFunction)inflate_takeovers, METH_NOARGS,
     "inflate_takeovers() -> int: gzip files zlib took over from ISA-L (damaged or cut) since the module loaded."},
    {"set_fill_bytes", (PyCFunction)set_fill_bytes, METH_O,
     "set_fill_bytes(n) -> int: decompressed bytes each later fill adds (0: the default); the previous setting.\n"
     "For tests: a small fill puts the end of the read window at every byte of a short trace."},
    {"set_one_pass_numbers", (PyCFunction)set_one_pass_numbers, METH_O,
     "set_one_pass_numbers(on) -> bool: ts, dur, pid and tid scanned in one pass where plain, or by the\n"
     "general path alone (False); the previous setting. For tests that hold the one to the other."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "scope.ingest._native", "Native ingest core of scope.", -1, native_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL) return NULL;
    if (kineto_register(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
