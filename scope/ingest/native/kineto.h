/* Kineto trace scanner and per-rank event table (see kineto.c). */
#ifndef SCOPE_KINETO_H
#define SCOPE_KINETO_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Adds the RankTable type to the module; 0 on success, -1 with an exception set. */
int kineto_register(PyObject *module);

#endif
