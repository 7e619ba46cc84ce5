/*
 * flush.h — the paper's cache flush (Fig. 1): write a buffer one store per 64-byte line, so that
 * the caches hold this data instead of the timer's and the kernel's (internal).
 * Sizes in bytes. Thread-safe for distinct buffers; the buffer is the caller's.
 */
#ifndef PV_CALIB_FLUSH_H
#define PV_CALIB_FLUSH_H
#include <stdint.h>

/* Dirty every 64-byte line of buf[0..bytes). */
void pv_flush_lines(unsigned char *buf, uint64_t bytes);

#endif
