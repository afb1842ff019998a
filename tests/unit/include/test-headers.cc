/* SPDX-License-Identifier: MIT */
/* test-headers.c as C++: each public header compiles alone in C++ too (extern "C"). */
#include "test-headers.c"
