/* read_snapshot: CUDA allocator snapshot pickles read into columns, without trusting them (snapshot_py.c). */
#ifndef SCOPE_SNAPSHOT_H
#define SCOPE_SNAPSHOT_H
#include <Python.h>

PyObject *scope_read_snapshot(PyObject *self, PyObject *args);

#endif
