/* test_pmpi_messages.c — messages matched by MPI_Mprobe (src/pmpi/messages.c) without MPI: what a
 * probe matched is taken back once by the receive of that message, with the probe's facts; taken
 * twice, or never matched, it is not there; under MPI_THREAD_MULTIPLE threads matching and taking
 * at once lose nothing. MPI_Message handles are made up (the map never dereferences them). */
#include "check.h"
#include "messages.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static MPI_Message message(uintptr_t i)
{
    MPI_Message m;
    memset(&m, 0, sizeof m);
    uintptr_t bits = 0x1000 + i * 64; /* as a pointer (Open MPI) or an int (MPICH) */
    memcpy(&m, &bits, sizeof m < sizeof bits ? sizeof m : sizeof bits);
    return m;
}

static void put_and_take(void)
{
    pv_matched in = {7, 3, 42, 4096}, out = {0, 0, 0, 0};
    CHECK(pv_messages_matched_put(message(1), &in) == 0);
    CHECK(pv_messages_matched_take(message(1), &out) == 1);
    CHECK(out.comm == 7 && out.source == 3 && out.tag == 42 && out.bytes == 4096);
    /* Taken twice: the second receive finds nothing, and *facts is left alone. */
    pv_matched again = {99, 99, 99, 99};
    CHECK(pv_messages_matched_take(message(1), &again) == 0);
    CHECK(again.comm == 99 && again.bytes == 99);
    /* Never matched. */
    CHECK(pv_messages_matched_take(message(2), &again) == 0);
    /* Two messages kept at once are told apart; unknown sizes and negative fields survive. */
    pv_matched x = {1, 0, -5, -1}, y = {65535, 2147483647, 0, INT64_MAX}, got;
    CHECK(pv_messages_matched_put(message(3), &x) == 0 && pv_messages_matched_put(message(4), &y) == 0);
    CHECK(pv_messages_matched_take(message(4), &got) == 1 && got.comm == 65535 &&
          got.source == 2147483647 && got.bytes == INT64_MAX);
    CHECK(pv_messages_matched_take(message(3), &got) == 1 && got.comm == 1 && got.tag == -5 &&
          got.bytes == -1);
    /* A handle MPI hands out again after its receive is a new match. */
    CHECK(pv_messages_matched_put(message(3), &y) == 0);
    CHECK(pv_messages_matched_take(message(3), &got) == 1 && got.comm == 65535);
    /* MPI_MESSAGE_NULL's bits (whatever they are) are a key like any other. */
    CHECK(pv_messages_matched_put(MPI_MESSAGE_NULL, &x) == 0);
    CHECK(pv_messages_matched_take(MPI_MESSAGE_NULL, &got) == 1 && got.comm == 1);
}

/* ---- MPI_THREAD_MULTIPLE: half the threads match, half receive, on the same map ---- */
#define NPAIRS 4
#define NMSG 40000
static int taken[NPAIRS];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *prober(void *arg)
{
    uintptr_t p = (uintptr_t)arg;
    for (uintptr_t i = 0; i < NMSG; i++) {
        pv_matched m = {(uint32_t)p, (int32_t)i, 0, 8};
        pv_messages_matched_put(message(1000 + p * NMSG + i), &m);
    }
    return NULL;
}

static void *receiver(void *arg)
{
    uintptr_t p = (uintptr_t)arg;
    double give_up = now_s() + 20; /* a lost message must not hang the test */
    for (uintptr_t i = 0; i < NMSG && now_s() < give_up; i++) {
        pv_matched m = {UINT32_MAX, -1, -1, -1};
        /* The receive follows its probe: wait for it as MPI would. */
        while (!pv_messages_matched_take(message(1000 + p * NMSG + i), &m) && now_s() < give_up)
            sched_yield();
        taken[p] += m.comm == p && m.source == (int32_t)i;
    }
    return NULL;
}

static void concurrent(void)
{
    pv_messages_matched_init(MPI_THREAD_MULTIPLE);
    pthread_t th[2 * NPAIRS];
    for (uintptr_t p = 0; p < NPAIRS; p++) {
        pthread_create(&th[2 * p], NULL, receiver, (void *)p);
        pthread_create(&th[2 * p + 1], NULL, prober, (void *)p);
    }
    for (int i = 0; i < 2 * NPAIRS; i++) pthread_join(th[i], NULL);
    for (int p = 0; p < NPAIRS; p++)
        CHECKF(taken[p] == NMSG, "pair %d took %d of %d", p, taken[p], NMSG);
    pv_matched m;
    int left = 0;
    for (uintptr_t i = 0; i < NPAIRS * NMSG; i++)
        left += pv_messages_matched_take(message(1000 + i), &m);
    CHECKF(left == 0, "%d messages left after their receives", left);
}

int main(void)
{
    put_and_take();
    concurrent();
    return check_result();
}
