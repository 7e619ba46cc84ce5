/* c_groups.c — calls from every wrapped group, so the generated wrappers are exercised beyond the
 * common ones: p2p (Ssend, Bsend with Buffer_attach/detach, Probe, Iprobe, Mprobe/Mrecv), wait/test
 * (Waitany, Waitsome, Test, Testall, Testany, Testsome, Request_free), collectives (Gather, Scatter,
 * Alltoall, Scan, Exscan, Reduce_scatter_block, Ibarrier, Iallreduce), one-sided (Win_create,
 * Win_fence, Put, Get, Accumulate, Win_free), file I/O (File_open, write_at_all, read_at, close,
 * delete), communicators (Comm_dup, Comm_split with a collective and a message on it, Cart_create,
 * Comm_free) and local queries.
 * Every result is checked (exit 1 on a wrong one); rank 0 prints a checksum compared with and without
 * perfvar. Per-rank counts: G_CALLS in tests/CMakeLists.txt. Any even number of ranks.
 * Usage: c_groups FILE (a path every rank can write, for the MPI-IO part). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* gcc 12 takes MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1) for a zero-size array. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#define CHECK(cond, what)                                                                         \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "c_groups: wrong result: %s\n", what);                                \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                         \
        }                                                                                         \
    } while (0)

static long p2p(int rank, int partner)
{
    long sum = 0;
    int v = rank, got = -1, flag = 0, count = 0;
    MPI_Status st;
    /* Ssend / Probe + Recv (even sends first) */
    if (rank % 2 == 0) {
        MPI_Ssend(&v, 1, MPI_INT, partner, 21, MPI_COMM_WORLD);
    } else {
        MPI_Probe(MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_INT, &count);
        CHECK(st.MPI_SOURCE == partner && count == 1, "Probe");
        MPI_Recv(&got, 1, MPI_INT, st.MPI_SOURCE, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sum += got;
    }
    /* Bsend / Iprobe loop + Mprobe/Mrecv (odd sends) */
    int size;
    MPI_Pack_size(1, MPI_INT, MPI_COMM_WORLD, &size);
    size += MPI_BSEND_OVERHEAD;
    void *buf = malloc((size_t)size);
    MPI_Buffer_attach(buf, size);
    if (rank % 2 == 1) {
        MPI_Bsend(&v, 1, MPI_INT, partner, 22, MPI_COMM_WORLD);
    } else {
        while (!flag) MPI_Iprobe(partner, 22, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        MPI_Message msg;
        MPI_Mprobe(partner, 22, MPI_COMM_WORLD, &msg, &st);
        MPI_Mrecv(&got, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
        CHECK(got == partner, "Mrecv");
        sum += got;
    }
    MPI_Buffer_detach(&buf, &size);
    free(buf);
    return sum;
}

static long waits(int rank, int partner)
{
    long sum = 0;
    int in[4], out[4] = {rank, rank + 10, rank + 20, rank + 30}, idx = -1, flag = 0, n = 0;
    int indices[4];
    MPI_Request r[4];
    /* Waitany: one receive from ANY_SOURCE, with a status */
    MPI_Status st;
    MPI_Irecv(&in[0], 1, MPI_INT, MPI_ANY_SOURCE, 31, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out[0], 1, MPI_INT, partner, 31, MPI_COMM_WORLD, &r[1]);
    MPI_Waitany(1, &r[0], &idx, &st);
    CHECK(idx == 0 && st.MPI_SOURCE == partner && in[0] == partner, "Waitany");
    MPI_Wait(&r[1], MPI_STATUS_IGNORE);
    /* Waitsome until both complete */
    MPI_Irecv(&in[1], 1, MPI_INT, partner, 32, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out[1], 1, MPI_INT, partner, 32, MPI_COMM_WORLD, &r[1]);
    for (int done = 0; done < 2; done += n)
        MPI_Waitsome(2, r, &n, indices, MPI_STATUSES_IGNORE);
    /* Test / Testall / Testany / Testsome polling */
    MPI_Irecv(&in[2], 1, MPI_INT, partner, 33, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out[2], 1, MPI_INT, partner, 33, MPI_COMM_WORLD, &r[1]);
    for (flag = 0; !flag;) MPI_Test(&r[0], &flag, MPI_STATUS_IGNORE);
    for (flag = 0; !flag;) MPI_Testall(1, &r[1], &flag, MPI_STATUSES_IGNORE);
    MPI_Irecv(&in[3], 1, MPI_INT, MPI_ANY_SOURCE, 34, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out[3], 1, MPI_INT, partner, 34, MPI_COMM_WORLD, &r[1]);
    for (flag = 0; !flag;) MPI_Testany(1, &r[0], &idx, &flag, &st);
    CHECK(st.MPI_SOURCE == partner, "Testany status");
    for (n = 0; n == 0;) MPI_Testsome(1, &r[1], &n, indices, MPI_STATUSES_IGNORE);
    CHECK(in[1] == partner + 10 && in[2] == partner + 20 && in[3] == partner + 30, "Test*");
    /* Request_free on a completed persistent-free path: a send request freed after matching */
    MPI_Request fr;
    MPI_Irecv(&in[0], 1, MPI_INT, partner, 35, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out[0], 1, MPI_INT, partner, 35, MPI_COMM_WORLD, &fr);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    MPI_Request_free(&fr);
    for (int i = 0; i < 4; i++) sum += in[i];
    return sum;
}

static long collectives(int rank, int nranks)
{
    long sum = 0;
    int *all = malloc((size_t)nranks * sizeof *all), *blk = malloc((size_t)nranks * sizeof *blk);
    int mine = rank + 1, got = 0, scan = 0, exscan = 0, red = 0;
    MPI_Gather(&mine, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < nranks; i++) all[i] *= 2;
    MPI_Scatter(all, 1, MPI_INT, &got, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(got == 2 * (rank + 1), "Gather/Scatter");
    for (int i = 0; i < nranks; i++) blk[i] = rank * 100 + i;
    MPI_Alltoall(blk, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < nranks; i++) CHECK(all[i] == i * 100 + rank, "Alltoall");
    MPI_Scan(&mine, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(&mine, &exscan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(scan == (rank + 1) * (rank + 2) / 2 && (rank == 0 || exscan == rank * (rank + 1) / 2),
          "Scan/Exscan");
    for (int i = 0; i < nranks; i++) blk[i] = i;
    MPI_Reduce_scatter_block(blk, &red, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(red == rank * nranks, "Reduce_scatter_block");
    MPI_Request r[2];
    int total = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
    MPI_Iallreduce(&mine, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    CHECK(total == nranks * (nranks + 1) / 2, "Iallreduce");
    sum += got + scan + exscan + red + total;
    free(all), free(blk);
    return sum;
}

static long onesided(int rank, int nranks)
{
    int local[2] = {rank, 0}, fetched = -1;
    MPI_Win win;
    MPI_Win_create(local, sizeof local, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    int right = (rank + 1) % nranks, one = 1;
    MPI_Put(&rank, 1, MPI_INT, right, 1, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Get(&fetched, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    MPI_Accumulate(&one, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    CHECK(fetched == right && local[1] == (rank + nranks - 1) % nranks && local[0] == rank + 1,
          "one-sided");
    return fetched + local[0] + local[1];
}

static long file_io(int rank, const char *path)
{
    MPI_File fh;
    int v = 1000 + rank, back = -1;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_write_at_all(fh, (MPI_Offset)rank * (MPI_Offset)sizeof v, &v, 1, MPI_INT,
                          MPI_STATUS_IGNORE);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_read_at(fh, 0, &back, 1, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
    CHECK(back == 1000, "file I/O");
    return back;
}

static long communicators(int rank, int nranks)
{
    MPI_Comm dup, half, cart;
    int hr = -1, hs = 0, dims[1] = {nranks}, periods[1] = {1}, src, dst, sum = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(dup, rank % 2, rank, &half);
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hs);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half);
    /* A message on the split communicator (ranks in it, not in MPI_COMM_WORLD), from ANY_SOURCE. */
    int got = -1, next = (hr + 1) % hs, prev = (hr + hs - 1) % hs;
    MPI_Sendrecv(&rank, 1, MPI_INT, next, 41, &got, 1, MPI_INT, MPI_ANY_SOURCE, 41, half,
                 MPI_STATUS_IGNORE);
    CHECK(got == (prev * 2 + rank % 2), "Sendrecv on a split communicator");
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &cart);
    MPI_Cart_shift(cart, 0, 1, &src, &dst);
    CHECK(hs == nranks / 2 && hr == rank / 2 && dst == (rank + 1) % nranks, "communicators");
    MPI_Comm_free(&cart);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    return sum + hr + dst + got;
}

int main(int argc, char **argv)
{
    int rank, nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 2 || nranks % 2) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n EVEN c_groups FILE\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int partner = rank ^ 1;
    long check = p2p(rank, partner);
    check += waits(rank, partner);
    check += collectives(rank, nranks);
    check += onesided(rank, nranks);
    check += file_io(rank, argv[1]);
    check += communicators(rank, nranks);
    long total = 0;
    MPI_Reduce(&check, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("checksum %ld\n", total);
    MPI_Finalize();
    return 0;
}
