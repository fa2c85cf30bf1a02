/* placeholder: filled in below */
#include "kineto.h"
int kineto_register(PyObject *module) { return 0; }
