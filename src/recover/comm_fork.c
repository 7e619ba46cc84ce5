/* comm_fork.c — pv_trace_comm between forked processes over sockets (comm_fork.h).
 *
 * Protocol: a message is a u64 length and that many bytes; the length ERR_MARK instead says "failed"
 * and carries nothing, so the stream stays in step and the receiver just returns an error. A link
 * that broke (EOF, write error, a message that does not fit) is closed and stays failed: its stream
 * can no longer be trusted. A collective is: each child sends to rank 0 if it has something to give,
 * then rank 0 replies to every child (data, or an empty message as "ok"), so every rank returns
 * what rank 0 saw. */
#define _GNU_SOURCE
#include "comm_fork.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* OTF2 leaves the context type to its user: the world, or a one-rank local communicator. */
struct OTF2_CollectiveContext {
    uint32_t rank, size;
};

typedef struct fork_comm {
    int rank, size;
    int *fd;    /* rank 0: fd[r] links to child r; a child: fd[0] links to rank 0; -1: failed */
    pid_t *pid; /* rank 0: the children */
    OTF2_CollectiveContext world;
    int slots;  /* bounded: the slot file (fcntl locks, one byte a slot), else -1 */
    int nslots; /* bounded: max_busy; a child r runs in slot (r - 1) % nslots */
} fork_comm;

#define ERR_MARK UINT64_MAX

/* ------------------------------------------------------------------ links */

static int write_all(int fd, const void *p, uint64_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL); /* a dead peer: EPIPE, not a SIGPIPE */
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k, n -= (uint64_t)k;
    }
    return 0;
}

static int read_all(int fd, void *p, uint64_t n)
{
    char *c = p;
    while (n) {
        ssize_t k = read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k == 0) errno = EPIPE; /* the peer finished or died */
        if (k <= 0) return -1;
        c += k, n -= (uint64_t)k;
    }
    return 0;
}

static int link_failed(fork_comm *f, int peer)
{
    int e = errno;
    if (f->fd[peer] >= 0) close(f->fd[peer]);
    f->fd[peer] = -1;
    errno = e;
    return -1;
}

/* len == ERR_MARK sends the failure mark. */
static int send_msg(fork_comm *f, int peer, const void *p, uint64_t len)
{
    if (f->fd[peer] < 0) return errno = EPIPE, -1;
    if (write_all(f->fd[peer], &len, sizeof len) || (len != ERR_MARK && write_all(f->fd[peer], p, len)))
        return link_failed(f, peer);
    return 0;
}

static int recv_head(fork_comm *f, int peer, uint64_t *len)
{
    if (f->fd[peer] < 0) return errno = EPIPE, -1;
    if (read_all(f->fd[peer], len, sizeof *len)) return link_failed(f, peer);
    return *len == ERR_MARK ? (errno = ECANCELED, -1) : 0;
}

/* A message of at most cap bytes into buf, its length in *len. */
static int recv_into(fork_comm *f, int peer, void *buf, uint64_t cap, uint64_t *len)
{
    if (recv_head(f, peer, len)) return -1;
    if (*len > cap) return errno = EMSGSIZE, link_failed(f, peer);
    return read_all(f->fd[peer], buf, *len) ? link_failed(f, peer) : 0;
}

static int recv_exact(fork_comm *f, int peer, void *buf, uint64_t len)
{
    uint64_t n;
    if (recv_into(f, peer, buf, len, &n)) return -1;
    return n == len ? 0 : (errno = EMSGSIZE, -1);
}

/* A message into a malloc'd *p (one byte more, so never malloc(0)). */
static int recv_alloc(fork_comm *f, int peer, char **p, uint64_t *len)
{
    *p = NULL;
    if (recv_head(f, peer, len)) return -1;
    if (*len >= SIZE_MAX || !(*p = malloc(*len + 1)))
        return errno = ENOMEM, link_failed(f, peer); /* the body cannot be skipped */
    if (read_all(f->fd[peer], *p, *len) == 0) return 0;
    free(*p), *p = NULL;
    return link_failed(f, peer);
}

/* Rank 0 ends a collective: data (len bytes), or just "ok", to every child, or the failure mark. */
static int reply_all(fork_comm *f, const void *data, uint64_t len, int ok)
{
    for (int r = 1; r < f->size; r++)
        if (send_msg(f, r, data, ok ? len : ERR_MARK)) ok = 0;
    return ok ? 0 : -1;
}

static int child_status(fork_comm *f)
{
    uint64_t n;
    return recv_into(f, 0, NULL, 0, &n);
}

/* ------------------------------------------------------------------ busy slots */

/* A child's slot: byte (rank - 1) % nslots of the slot file, write-locked while it works. fcntl
 * locks belong to the process, so a child that dies frees its slot: a death cannot starve the
 * others. The kernel wakes one waiter of a released lock, not all of them. */
static int slot_lock(const fork_comm *f, short type)
{
    struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_len = 1};
    l.l_start = (off_t)((f->rank - 1) % f->nslots);
    while (fcntl(f->slots, type == F_UNLCK ? F_SETLK : F_SETLKW, &l) < 0)
        if (errno != EINTR) return -1;
    return 0;
}

/* A child is about to wait in a collective: it gives its slot to the next rank of the slot, and
 * hands back to the system the heap it freed (malloc_trim: glibc keeps it otherwise), so that the
 * many ranks waiting hold only what they still use. Rank 0 and unbounded comms: nothing. */
static void idle_begin(fork_comm *f)
{
    if (!f->rank || f->slots < 0) return;
    malloc_trim(0);
    slot_lock(f, F_UNLCK);
}

/* The collective returned rc: wait for the slot before working on; returns rc, errno kept (the
 * collective's). Should the lock fail (it cannot on a memfd), the rank works on unthrottled: only
 * memory is at stake, never the result. */
static int idle_end(fork_comm *f, int rc)
{
    if (!f->rank || f->slots < 0) return rc;
    int e = errno;
    slot_lock(f, F_WRLCK);
    errno = e;
    return rc;
}

/* ------------------------------------------------------------------ pv_trace_comm */

static int pv_gatherv(void *ctx, const void *buf, int nbytes, char **all, int **counts)
{
    fork_comm *f = ctx;
    int ok = nbytes >= 0 && (buf || nbytes == 0);
    *all = NULL, *counts = NULL;
    if (f->rank) {
        idle_begin(f);
        send_msg(f, 0, buf, ok ? (uint64_t)nbytes : ERR_MARK); /* a failure shows in the reply */
        return idle_end(f, child_status(f));
    }
    int *cnt = malloc((size_t)f->size * sizeof *cnt);
    char *cat = malloc(ok ? (size_t)nbytes + 1 : 1);
    uint64_t total = ok ? (uint64_t)nbytes : 0;
    ok = ok && cnt && cat;
    if (ok && total) memcpy(cat, buf, total);
    if (ok) cnt[0] = nbytes;
    for (int r = 1; r < f->size; r++) { /* every child's message is read, even after a failure */
        char *p;
        uint64_t n;
        if (recv_alloc(f, r, &p, &n) || n > INT_MAX - total) ok = 0;
        char *grown = ok ? realloc(cat, total + n + 1) : NULL;
        if (grown) memcpy(grown + total, p, n), cat = grown, cnt[r] = (int)n, total += n;
        else ok = 0;
        free(p);
    }
    if (reply_all(f, NULL, 0, ok)) {
        free(cnt), free(cat);
        return -1;
    }
    *all = cat, *counts = cnt;
    return 0;
}

static int pv_scatterv(void *ctx, const char *all, const int *counts, void *buf, int nbytes)
{
    fork_comm *f = ctx;
    uint64_t cap = nbytes > 0 ? (uint64_t)nbytes : 0, n;
    if (f->rank) { /* at most nbytes, as MPI_Scatterv */
        idle_begin(f);
        return idle_end(f, recv_into(f, 0, buf, cap, &n));
    }
    /* rank 0 may come without data (it failed before): the children still get their answer */
    int ok = counts != NULL;
    uint64_t total = 0;
    for (int r = 0; ok && r < f->size; r++) ok = counts[r] >= 0, total += ok ? (uint64_t)counts[r] : 0;
    ok = ok && (all || total == 0) && (uint64_t)counts[0] <= cap;
    if (ok && counts[0]) memcpy(buf, all, (size_t)counts[0]);
    uint64_t d = ok ? (uint64_t)counts[0] : 0;
    for (int r = 1; r < f->size; d += ok ? (uint64_t)counts[r] : 0, r++)
        if (send_msg(f, r, ok ? all + d : NULL, ok ? (uint64_t)counts[r] : ERR_MARK)) ok = 0;
    return ok ? 0 : -1;
}

static int pv_allreduce_u64(void *ctx, uint64_t *vals, int n, int op)
{
    fork_comm *f = ctx;
    uint64_t len = n > 0 ? (uint64_t)n * sizeof *vals : 0;
    if (f->rank) {
        idle_begin(f);
        send_msg(f, 0, vals, len);
        return idle_end(f, recv_exact(f, 0, vals, len));
    }
    int ok = 1;
    for (int r = 1; r < f->size; r++) {
        char *p;
        uint64_t got;
        if (recv_alloc(f, r, &p, &got) || got != len) ok = 0;
        for (int i = 0; ok && i < n; i++) {
            uint64_t v;
            memcpy(&v, p + i * sizeof v, sizeof v);
            if (op ? v > vals[i] : v < vals[i]) vals[i] = v;
        }
        free(p);
    }
    return reply_all(f, vals, len, ok);
}

/* ------------------------------------------------------------------ OTF2's collectives, any root */

/* Root's data to every rank: a child root gives it to rank 0 first. */
static int hub_bcast(fork_comm *f, void *data, uint64_t len, uint32_t root)
{
    if (f->rank) {
        idle_begin(f);
        if ((uint32_t)f->rank == root) send_msg(f, 0, data, len);
        return idle_end(f, recv_exact(f, 0, data, len)); /* the root too: the reply is the status */
    }
    int ok = root == 0 || recv_exact(f, (int)root, data, len) == 0;
    return reply_all(f, data, len, ok);
}

/* Rank r's part of a gather as root expects it (bytes): outel[r] * esz, or inlen. */
static uint64_t gather_part(const uint32_t *outel, uint64_t esz, uint64_t inlen, int r)
{
    return outel ? outel[r] * esz : inlen;
}

/* At rank 0: its own inlen bytes and every child's message, concatenated in rank order into
 * *cat (total bytes in *total); 0, or -1 when a part is missing or not the size root expects. */
static int hub_concatenate(fork_comm *f, const void *in, uint64_t inlen, const uint32_t *outel,
                           uint64_t esz, int am_root, char **cat, uint64_t *total)
{
    *cat = malloc(inlen + 1);
    int ok = *cat && (!am_root || gather_part(outel, esz, inlen, 0) == inlen);
    *total = inlen;
    if (ok && inlen) memcpy(*cat, in, inlen);
    for (int r = 1; r < f->size; r++) {
        char *p;
        uint64_t n;
        if (recv_alloc(f, r, &p, &n) || (am_root && n != gather_part(outel, esz, inlen, r))) ok = 0;
        char *grown = ok ? realloc(*cat, *total + n + 1) : NULL;
        if (grown) memcpy(grown + *total, p, n), *cat = grown, *total += n;
        else ok = 0;
        free(p);
    }
    return ok ? 0 : -1;
}

/* Every rank's inlen bytes to root, in rank order. At root, rank r's part has outel[r] * esz
 * bytes (outel NULL: inlen). Rank 0 concatenates them; a child root gets the concatenation. */
static int hub_gather(fork_comm *f, const void *in, uint64_t inlen, void *out, const uint32_t *outel,
                      uint64_t esz, uint32_t root)
{
    int am_root = (uint32_t)f->rank == root;
    uint64_t want_total = 0;
    for (int r = 0; am_root && r < f->size; r++) want_total += gather_part(outel, esz, inlen, r);
    if (f->rank) {
        idle_begin(f);
        send_msg(f, 0, in, inlen);
        return idle_end(f, am_root ? recv_exact(f, 0, out, want_total) : child_status(f));
    }
    char *cat;
    uint64_t total;
    int ok = hub_concatenate(f, in, inlen, outel, esz, am_root, &cat, &total) == 0;
    if (ok && am_root && total) memcpy(out, cat, total);
    for (int r = 1; r < f->size; r++)
        if (send_msg(f, r, cat, !ok ? ERR_MARK : (uint32_t)r == root ? total : 0)) ok = 0;
    free(cat);
    return ok ? 0 : -1;
}

/* At rank 0 of a scatter from a child root: that root's one message (the per-rank lengths, then
 * the data) into *msg, with *lens and *data pointing into it; whether it is whole (the lengths
 * add up to the data sent). */
static int hub_scatter_from_child(fork_comm *f, uint32_t root, char **msg, uint64_t **lens,
                                  const char **data)
{
    uint64_t n, head = (uint64_t)f->size * sizeof **lens;
    int ok = recv_alloc(f, (int)root, msg, &n) == 0 && n >= head;
    if (!ok) return 0;
    *lens = (uint64_t *)*msg, *data = *msg + head;
    uint64_t total = n - head;
    for (int r = 0; ok && r < f->size; r++) ok = (*lens)[r] <= total, total -= ok ? (*lens)[r] : 0;
    return ok && total == 0;
}

/* At the root of a scatter: the per-rank lengths (bytes; *total their sum), followed at a child
 * root by the data itself, the message it sends rank 0; NULL when out of memory. */
static uint64_t *scatter_lengths(fork_comm *f, const void *in, const uint32_t *inel, uint64_t esz,
                                 uint64_t outlen, uint64_t *total)
{
    uint64_t head = (uint64_t)f->size * sizeof(uint64_t);
    *total = 0;
    for (int r = 0; r < f->size; r++) *total += inel ? inel[r] * esz : outlen;
    uint64_t *lens = malloc(head + (f->rank ? *total : 0));
    for (int r = 0; lens && r < f->size; r++) lens[r] = inel ? inel[r] * esz : outlen;
    if (lens && f->rank && *total) memcpy((char *)lens + head, in, *total);
    return lens;
}

/* Root's data to every rank, in rank order: rank r gets inel[r] * esz bytes (inel NULL: outlen
 * each) into out, which takes exactly outlen. A child root first sends rank 0 one message: the
 * size per-rank lengths (u64), then the data. */
static int hub_scatter(fork_comm *f, const void *in, const uint32_t *inel, uint64_t esz, void *out,
                       uint64_t outlen, uint32_t root)
{
    uint64_t *lens = NULL, total = 0;
    if ((uint32_t)f->rank == root) lens = scatter_lengths(f, in, inel, esz, outlen, &total);
    if (f->rank) {
        idle_begin(f);
        if ((uint32_t)f->rank == root) {
            uint64_t head = (uint64_t)f->size * sizeof *lens;
            send_msg(f, 0, lens, lens ? head + total : ERR_MARK);
            free(lens);
        }
        return idle_end(f, recv_exact(f, 0, out, outlen));
    }
    char *msg = NULL;
    const char *data = in;
    int ok = root != 0 ? hub_scatter_from_child(f, root, &msg, &lens, &data) : lens != NULL;
    ok = ok && lens[0] == outlen;
    if (ok && outlen) memcpy(out, data, outlen);
    uint64_t d = ok ? lens[0] : 0;
    for (int r = 1; r < f->size; d += ok ? lens[r] : 0, r++)
        if (send_msg(f, r, ok ? data + d : NULL, ok ? lens[r] : ERR_MARK)) ok = 0;
    if (msg) free(msg);
    else free(lens);
    return ok ? 0 : -1;
}

static uint64_t type_size(OTF2_Type t)
{
    switch (t) {
    case OTF2_TYPE_UINT8: case OTF2_TYPE_INT8: return 1;
    case OTF2_TYPE_UINT16: case OTF2_TYPE_INT16: return 2;
    case OTF2_TYPE_UINT32: case OTF2_TYPE_INT32: case OTF2_TYPE_FLOAT: return 4;
    case OTF2_TYPE_UINT64: case OTF2_TYPE_INT64: case OTF2_TYPE_DOUBLE: return 8;
    default: return 0; /* the same on every rank: all return the error without a word exchanged */
    }
}

#define CB(call) ((call) == 0 ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_ERROR)

/* A one-rank context needs no messages: its collectives are copies. */
static OTF2_CallbackCode one_rank_copy(void *out, const void *in, uint64_t len)
{
    if (len && out != in) memmove(out, in, len);
    return OTF2_CALLBACK_SUCCESS;
}

static void otf2_release(void *u, OTF2_CollectiveContext *g, OTF2_CollectiveContext *l)
{
    (void)u, (void)g, (void)l; /* the state is the fork comm's, freed by pv_fork_comm_finish */
}

static OTF2_CallbackCode otf2_get_size(void *u, OTF2_CollectiveContext *c, uint32_t *size)
{
    (void)u;
    *size = c->size;
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode otf2_get_rank(void *u, OTF2_CollectiveContext *c, uint32_t *rank)
{
    (void)u;
    *rank = c->rank;
    return OTF2_CALLBACK_SUCCESS;
}

/* Only the partitions that need no new links: one file (the world itself) or one rank per file. */
static OTF2_CallbackCode otf2_create_local_comm(void *u, OTF2_CollectiveContext **local,
                                                OTF2_CollectiveContext *global, uint32_t grank,
                                                uint32_t gsize, uint32_t lrank, uint32_t lsize,
                                                uint32_t file, uint32_t nfiles)
{
    (void)u, (void)grank, (void)gsize, (void)lrank, (void)file;
    *local = NULL;
    if (nfiles == 1) *local = global;
    else if (lsize == 1 && (*local = malloc(sizeof **local))) **local = (OTF2_CollectiveContext){0, 1};
    return *local ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_ERROR;
}

static OTF2_CallbackCode otf2_free_local_comm(void *u, OTF2_CollectiveContext *c)
{
    if (c != &((fork_comm *)u)->world) free(c);
    return OTF2_CALLBACK_SUCCESS;
}

static OTF2_CallbackCode otf2_barrier(void *u, OTF2_CollectiveContext *c)
{
    return c->size == 1 ? OTF2_CALLBACK_SUCCESS : CB(hub_gather(u, NULL, 0, NULL, NULL, 0, 0));
}

static OTF2_CallbackCode otf2_bcast(void *u, OTF2_CollectiveContext *c, void *data, uint32_t n,
                                    OTF2_Type t, uint32_t root)
{
    uint64_t e = type_size(t);
    if (!e || root >= c->size) return OTF2_CALLBACK_ERROR;
    return c->size == 1 ? OTF2_CALLBACK_SUCCESS : CB(hub_bcast(u, data, n * e, root));
}

static OTF2_CallbackCode otf2_gather(void *u, OTF2_CollectiveContext *c, const void *in, void *out,
                                     uint32_t n, OTF2_Type t, uint32_t root)
{
    uint64_t e = type_size(t);
    if (!e || root >= c->size) return OTF2_CALLBACK_ERROR;
    if (c->size == 1) return one_rank_copy(out, in, n * e);
    return CB(hub_gather(u, in, n * e, out, NULL, e, root));
}

static OTF2_CallbackCode otf2_gatherv(void *u, OTF2_CollectiveContext *c, const void *in, uint32_t nin,
                                      void *out, const uint32_t *nout, OTF2_Type t, uint32_t root)
{
    uint64_t e = type_size(t);
    if (!e || root >= c->size) return OTF2_CALLBACK_ERROR;
    if (c->size == 1) return one_rank_copy(out, in, nin * e);
    return CB(hub_gather(u, in, nin * e, out, nout, e, root));
}

static OTF2_CallbackCode otf2_scatter(void *u, OTF2_CollectiveContext *c, const void *in, void *out,
                                      uint32_t n, OTF2_Type t, uint32_t root)
{
    uint64_t e = type_size(t);
    if (!e || root >= c->size) return OTF2_CALLBACK_ERROR;
    if (c->size == 1) return one_rank_copy(out, in, n * e);
    return CB(hub_scatter(u, in, NULL, e, out, n * e, root));
}

static OTF2_CallbackCode otf2_scatterv(void *u, OTF2_CollectiveContext *c, const void *in,
                                       const uint32_t *nin, void *out, uint32_t nout, OTF2_Type t,
                                       uint32_t root)
{
    uint64_t e = type_size(t);
    if (!e || root >= c->size) return OTF2_CALLBACK_ERROR;
    if (c->size == 1) return one_rank_copy(out, in, nout * e);
    return CB(hub_scatter(u, in, nin, e, out, nout * e, root));
}

static const OTF2_CollectiveCallbacks otf2_callbacks = {
    otf2_release, otf2_get_size, otf2_get_rank, otf2_create_local_comm, otf2_free_local_comm,
    otf2_barrier, otf2_bcast,    otf2_gather,   otf2_gatherv,           otf2_scatter,
    otf2_scatterv};

/* No local communicator, as comm_pmpi.c: the POSIX substrate writes a file per location anyway. */
static int set_collectives(void *ctx, OTF2_Archive *archive)
{
    fork_comm *f = ctx;
    return OTF2_Archive_SetCollectiveCallbacks(archive, &otf2_callbacks, f, &f->world, NULL) ==
                   OTF2_SUCCESS
               ? 0
               : -1;
}

/* ------------------------------------------------------------------ start, finish */

static void fill(pv_trace_comm *comm, fork_comm *f)
{
    *comm = (pv_trace_comm){f, f->rank, f->size, pv_gatherv, pv_scatterv, pv_allreduce_u64,
                            set_collectives};
}

static int wait_child(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int pv_fork_comm_start(int n, pv_trace_comm *comm)
{
    return pv_fork_comm_start_bounded(n, 0, comm);
}

/* The slot file of a bounded comm (-1 with errno set if it cannot be made): a memfd, no name in
 * the file system to clean up; CLOEXEC like the links. */
static int make_slots(void)
{
    return memfd_create("perfvar-fork-slots", MFD_CLOEXEC);
}

int pv_fork_comm_start_bounded(int n, int max_busy, pv_trace_comm *comm)
{
    if (n < 1 || max_busy < 0) return errno = EINVAL, -1;
    fork_comm *f = calloc(1, sizeof *f);
    int *fd = malloc((size_t)n * sizeof *fd);
    pid_t *pid = calloc((size_t)n, sizeof *pid);
    int slots = max_busy > 0 && max_busy < n - 1 ? make_slots() : -1; /* else nobody ever waits */
    if (!f || !fd || !pid || (slots < 0 && max_busy > 0 && max_busy < n - 1)) {
        int e = f && fd && pid ? errno : ENOMEM;
        free(f), free(fd), free(pid);
        return errno = e, -1;
    }
    for (int r = 0; r < n; r++) fd[r] = -1;
    *f = (fork_comm){0, n, fd, pid, {0, (uint32_t)n}, slots, max_busy};
    fflush(NULL); /* else the children would write the parent's buffered output again */
    int r;
    for (r = 1; r < n; r++) {
        int sv[2];
        /* CLOEXEC: a program a rank runs must not hold a link open past the rank's death */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) break;
        pid_t p = fork();
        if (p < 0) {
            int e = errno;
            close(sv[0]), close(sv[1]);
            errno = e;
            break;
        }
        if (p == 0) {
            /* Only rank 0 may hold the other children's links: a child's death must read as EOF.
             * Its own one link goes in an array of its own: writing rank 0's (4 bytes a rank)
             * would copy its pages into every child, n^2 bytes over the job. */
            for (int k = 1; k < r; k++) close(fd[k]);
            close(sv[0]);
            f->fd = malloc(sizeof *f->fd);
            if (!f->fd) _exit(127);
            f->fd[0] = sv[1];
            free(fd), free(pid);
            f->pid = NULL, f->rank = r, f->world.rank = (uint32_t)r;
            /* Rank 0's go (or EOF when a later fork failed) before the caller's code runs, and
             * then, when bounded, a slot to run in. */
            if (child_status(f)) _exit(127);
            idle_end(f, 0);
            fill(comm, f);
            return r;
        }
        close(sv[1]);
        fd[r] = sv[0], pid[r] = p;
    }
    if (r < n) {
        int e = errno;
        for (int k = 1; k < r; k++) close(fd[k]);
        for (int k = 1; k < r; k++) wait_child(pid[k]);
        if (slots >= 0) close(slots);
        free(f), free(fd), free(pid);
        return errno = e, -1;
    }
    reply_all(f, NULL, 0, 1); /* a child that died already fails the first collective */
    fill(comm, f);
    return 0;
}

int pv_fork_comm_finish(pv_trace_comm *comm, int status)
{
    fork_comm *f = comm->ctx;
    if (!f) return errno = EINVAL, -1;
    if (f->rank) {
        fflush(NULL);
        close(f->fd[0]);
        _exit(status);
    }
    for (int r = 1; r < f->size; r++)
        if (f->fd[r] >= 0) close(f->fd[r]); /* children waiting on rank 0 read EOF */
    int failed = 0;
    for (int r = 1; r < f->size; r++) failed += wait_child(f->pid[r]) != 0;
    if (f->slots >= 0) close(f->slots);
    free(f->fd), free(f->pid), free(f);
    memset(comm, 0, sizeof *comm);
    return failed;
}
