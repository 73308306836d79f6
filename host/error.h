/* error.h - filling a firn_error (include/firn.h) with a code and a
 * printf-style message (host/error.c). Every host module and the CUDA
 * backend report errors this way; it depends on nothing else in host/. */
#ifndef FIRN_ERROR_H
#define FIRN_ERROR_H

#include "firn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sets err's code and message; does nothing when err is NULL. */
void firn_set_error(firn_error *err, firn_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
