/* placeholder */
#include "kineto.h"
