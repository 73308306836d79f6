/* error.c - firn_set_error (host/error.h). */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

void firn_set_error(firn_error *err, firn_status code, const char *fmt, ...)
{
    va_list ap;
    if (!err)
        return;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}
