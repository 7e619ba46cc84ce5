/* message.c — "perfvar: ..." lines on stderr; see message.h. */
#include "message.h"

#include <stdarg.h>
#include <stdio.h>

static int my_rank;

void pv_message_set_rank(int rank) { my_rank = rank; }

void pv_message(int rank0_only, const char *fmt, ...)
{
    if (rank0_only && my_rank != 0) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    /* One fprintf: lines of several threads or ranks do not interleave within a line. */
    if (rank0_only)
        fprintf(stderr, "perfvar: %s\n", buf);
    else
        fprintf(stderr, "perfvar: rank %d: %s\n", my_rank, buf);
}
