/* defs.c — the rank's definitions file, appended line by line; see recorder.h. */
#define _GNU_SOURCE
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int fd = -1;

int pv_rec_defs_open(const char *dir, uint32_t rank)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/perfvar/records", dir);
    if (mkdir(path, 0755) && errno != EEXIST) return -1;
    snprintf(path, sizeof path, "%s/perfvar/records/rank-%u.defs", dir, rank);
    pthread_mutex_lock(&lock);
    if (fd >= 0) close(fd);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    int ok = fd >= 0;
    pthread_mutex_unlock(&lock);
    return ok ? 0 : -1;
}

int pv_rec_defs_line(const char *fmt, ...)
{
    char *line = NULL, *buf;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    buf = realloc(line, (size_t)n + 1);
    if (!buf) {
        free(line);
        return -1;
    }
    buf[n++] = '\n';
    pthread_mutex_lock(&lock);
    /* One write per line with O_APPEND: a crash leaves whole lines (or a last partial one, which
     * readers drop). */
    ssize_t w = fd >= 0 ? write(fd, buf, (size_t)n) : -1;
    pthread_mutex_unlock(&lock);
    free(buf);
    return w == n ? 0 : -1;
}

void pv_rec_defs_clean(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i + 1 < len; i++) dst[i] = src[i] == '\t' || src[i] == '\n' ? ' ' : src[i];
    if (len) dst[i] = 0;
}

void pv_rec_defs_close(void)
{
    pthread_mutex_lock(&lock);
    if (fd >= 0) close(fd);
    fd = -1;
    pthread_mutex_unlock(&lock);
}

int pv_rec_remove_rank(const char *dir, uint32_t rank)
{
    char path[4400];
    int rc = 0;
    /* Threads first, the definitions last: a removal cut short leaves a rank perfvar-recover
     * still recognises (its definitions) rather than records nothing describes. */
    for (uint32_t t = 0;; t++) {
        snprintf(path, sizeof path, "%s/perfvar/records/rank-%u.thread-%u.pvr", dir, rank, t);
        if (unlink(path) == 0) continue;
        if (errno != ENOENT) rc = -1;
        break;
    }
    snprintf(path, sizeof path, "%s/perfvar/records/rank-%u.defs", dir, rank);
    if (unlink(path) && errno != ENOENT) rc = -1;
    return rc;
}
