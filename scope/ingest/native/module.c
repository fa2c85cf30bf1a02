/* scope.ingest._native: the native ingest core (Kineto scanner, rank tables, Parquet writer). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "pqwrite.h"
#include "kineto.h"

static PyMethodDef native_methods[] = {
    {"write_parquet", (PyCFunction)(void (*)(void))scope_write_parquet, METH_VARARGS | METH_KEYWORDS,
     "write_parquet(path, columns, *, compression='zstd', row_group_size=1048576, metadata=None)\n"
     "Write columns [(name, type, values), ...] as one Parquet file. Types: int32, int64, float64, bool, string."},
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
