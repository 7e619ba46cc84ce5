/* test_u64map.c — the open-addressing map against a reference array: randomized put/find/take with
 * deletions (backward shift must keep every remaining key reachable), probe runs that wrap around the
 * table end, and growth through many resizes. */
#include "check.h"
#include "core/u64map.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* xorshift64*: deterministic, so a failure reproduces. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

/* The map's slot function as u64map.c documents it (murmur3 finaliser). Used only to build colliding
 * keys and to check the probe invariant; hash_known says whether the map really uses it. */
static size_t home_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}
static int hash_known;

static pv_u64val val_of(uint64_t key, int64_t gen)
{
    pv_u64val v = {.a = (int64_t)(key * 3 + 1), .b = gen};
    return v;
}

/* Structural invariants: power-of-two capacity, load <= 50%, n matches the occupied slots, and (if the
 * hash is known) no empty slot between any key's home slot and its position. */
static int structure_ok(const pv_u64map *m)
{
    if (!m->cap) return m->n == 0;
    if (m->cap & (m->cap - 1)) return 0;
    if (2 * m->n > m->cap) return 0;
    size_t used = 0;
    for (size_t j = 0; j < m->cap; j++) {
        if (!m->keys[j]) continue;
        used++;
        if (!hash_known) continue;
        for (size_t i = home_of(m->keys[j], m->cap); i != j; i = (i + 1) & (m->cap - 1))
            if (!m->keys[i]) return 0;
    }
    return used == m->n;
}

static void detect_hash(void)
{
    pv_u64map m = {0};
    uint64_t key = 0x123456789abcdefull;
    CHECK(pv_u64map_put(&m, key, val_of(key, 0)) == 0);
    hash_known = m.cap && m.keys[home_of(key, m.cap)] == key;
    if (!hash_known) printf("note: slot function differs from the test's copy; probe checks skipped\n");
    pv_u64map_free(&m);
}

static void check_empty(void)
{
    pv_u64map m = {0};
    pv_u64val out = {.a = 7, .b = 7};
    CHECK(pv_u64map_find(&m, 42) == NULL);
    CHECK(pv_u64map_take(&m, 42, &out) == 0);
    CHECK(out.a == 7 && out.b == 7);
    CHECK(pv_u64map_put(&m, 42, val_of(42, 1)) == 0);
    CHECK(m.n == 1);
    CHECK(pv_u64map_put(&m, 42, val_of(42, 2)) == 0); /* overwrite */
    CHECK(m.n == 1);
    pv_u64val *v = pv_u64map_find(&m, 42);
    CHECK(v && v->b == 2);
    CHECK(pv_u64map_take(&m, 42, &out) == 1);
    CHECK(out.a == val_of(42, 2).a && out.b == 2);
    CHECK(m.n == 0);
    CHECK(pv_u64map_find(&m, 42) == NULL);
    CHECK(pv_u64map_take(&m, 42, &out) == 0);
    pv_u64map_free(&m);
    CHECK(m.keys == NULL && m.vals == NULL && m.cap == 0 && m.n == 0);
    pv_u64map_free(&m); /* twice is harmless */
}

/* Keys whose home slots are the last two and first two slots of a 256-slot table, so probe runs wrap
 * around; every deletion order of a random sample must leave the rest reachable. */
static void check_wraparound(void)
{
    if (!hash_known) return;
    enum { CAP = 256, PER_HOME = 4, HOMES = 4, K = PER_HOME * HOMES };
    const size_t homes[HOMES] = {CAP - 2, CAP - 1, 0, 1};
    uint64_t keys[K];
    int have[HOMES] = {0}, n = 0;
    for (uint64_t c = 1; n < K; c++) {
        size_t h = home_of(c * 0x1000, CAP);
        for (int i = 0; i < HOMES; i++)
            if (h == homes[i] && have[i] < PER_HOME) keys[n++] = c * 0x1000, have[i]++;
    }
    for (int round = 0; round < 200; round++) {
        pv_u64map m = {0};
        /* Insert in a random order, so keys sit at various distances from home. */
        uint64_t order[K];
        memcpy(order, keys, sizeof order);
        for (int i = K - 1; i > 0; i--) {
            int j = (int)(rnd() % (uint64_t)(i + 1));
            uint64_t t = order[i];
            order[i] = order[j], order[j] = t;
        }
        for (int i = 0; i < K; i++) CHECK(pv_u64map_put(&m, order[i], val_of(order[i], i)) == 0);
        if (round == 0) {
            CHECK(m.cap == CAP);
            CHECK(m.keys[0] != 0 && m.keys[CAP - 1] != 0); /* the run really wraps */
        }
        int present[K];
        for (int i = 0; i < K; i++) present[i] = 1;
        for (int d = 0; d < K; d++) {
            int victim = (int)(rnd() % K);
            while (!present[victim]) victim = (victim + 1) % K;
            pv_u64val out;
            CHECK(pv_u64map_take(&m, keys[victim], &out) == 1);
            CHECK(out.a == val_of(keys[victim], 0).a);
            present[victim] = 0;
            int reachable = 1;
            for (int i = 0; i < K; i++) reachable &= (pv_u64map_find(&m, keys[i]) != NULL) == present[i];
            CHECKF(reachable, "round %d: a key became unreachable or a taken key is still found", round);
            CHECK(structure_ok(&m));
            if (!reachable) {
                pv_u64map_free(&m);
                return;
            }
        }
        CHECK(m.n == 0);
        pv_u64map_free(&m);
    }
}

/* 100000 random operations on a pool of keys, compared with a reference array. */
static void check_random(void)
{
    enum { POOL = 3000, OPS = 100000 };
    static uint64_t pool[POOL];
    static int in[POOL];
    static int64_t gen[POOL];
    for (int i = 0; i < POOL; i++) {
        /* Half random, half address-like (shared low bits). */
        uint64_t k;
        do {
            k = (i & 1) ? rnd() : 0x7f0000000000ull + (rnd() % 100000) * 64;
            for (int j = 0; j < i && k; j++)
                if (pool[j] == k) k = 0;
        } while (!k);
        pool[i] = k;
    }
    pv_u64map m = {0};
    size_t count = 0;
    int mismatches = 0, max_cap_seen = 0;
    for (int op = 0; op < OPS && mismatches < 10; op++) {
        int i = (int)(rnd() % POOL);
        uint64_t r = rnd() % 10;
        if (r < 4) { /* put */
            gen[i] = op;
            if (pv_u64map_put(&m, pool[i], val_of(pool[i], op)) != 0) {
                CHECK(!"pv_u64map_put failed");
                break;
            }
            count += !in[i];
            in[i] = 1;
        } else if (r < 8) { /* take */
            pv_u64val out = {.a = -1, .b = -1};
            int got = pv_u64map_take(&m, pool[i], &out);
            if (got != in[i] || (got && (out.a != val_of(pool[i], 0).a || out.b != gen[i]))) {
                CHECKF(0, "op %d: take(%#llx) = %d, expected %d", op, (unsigned long long)pool[i], got, in[i]);
                mismatches++;
            }
            count -= in[i];
            in[i] = 0;
        } else { /* find */
            pv_u64val *v = pv_u64map_find(&m, pool[i]);
            if ((v != NULL) != in[i] || (v && v->b != gen[i])) {
                CHECKF(0, "op %d: find(%#llx) wrong", op, (unsigned long long)pool[i]);
                mismatches++;
            }
        }
        if (m.n != count) {
            CHECKF(0, "op %d: n = %zu, reference %zu", op, m.n, count);
            mismatches++;
        }
        if ((int)m.cap > max_cap_seen) max_cap_seen = (int)m.cap;
        if (op % 1000 == 999) { /* every key reachable, every absent key absent */
            int bad = 0;
            for (int k = 0; k < POOL; k++) {
                pv_u64val *v = pv_u64map_find(&m, pool[k]);
                bad += (v != NULL) != in[k] || (v && v->b != gen[k]);
            }
            CHECKF(bad == 0, "op %d: %d keys disagree with the reference", op, bad);
            CHECKF(structure_ok(&m), "op %d: probe invariant broken", op);
            mismatches += bad != 0;
        }
    }
    printf("random: %zu keys left, capacity %zu (max %d)\n", m.n, m.cap, max_cap_seen);
    CHECK(max_cap_seen > 256); /* it grew at least once */
    pv_u64map_free(&m);
}

/* Growth from empty through 12 resizes (256 -> 1 Mi slots), then deletions and reinsertion. */
static void check_growth(void)
{
    enum { N = 300000 };
    pv_u64map m = {0};
    int failed = 0;
    size_t resizes = 0, cap = 0;
    for (uint64_t i = 1; i <= N; i++) {
        uint64_t key = 0x7f0000000000ull + i * 64;
        failed += pv_u64map_put(&m, key, val_of(key, (int64_t)i)) != 0;
        if (m.cap != cap) resizes++, cap = m.cap;
    }
    printf("growth: %zu keys, capacity %zu after %zu allocations\n", m.n, m.cap, resizes);
    CHECK(failed == 0);
    CHECK(m.n == N);
    CHECK(resizes >= 8);
    CHECK(structure_ok(&m));
    int bad = 0;
    for (uint64_t i = 1; i <= N; i++) {
        uint64_t key = 0x7f0000000000ull + i * 64;
        pv_u64val *v = pv_u64map_find(&m, key);
        bad += !v || v->b != (int64_t)i || v->a != val_of(key, 0).a;
    }
    CHECKF(bad == 0, "%d keys lost or wrong after growth", bad);
    CHECK(pv_u64map_find(&m, 0x7f0000000000ull + (N + 1) * 64) == NULL);
    CHECK(pv_u64map_find(&m, 0x7f0000000000ull + 32) == NULL);

    bad = 0;
    for (uint64_t i = 1; i <= N; i += 2) {
        pv_u64val out;
        bad += pv_u64map_take(&m, 0x7f0000000000ull + i * 64, &out) != 1 || out.b != (int64_t)i;
    }
    CHECK(bad == 0);
    CHECK(m.n == N / 2);
    CHECK(structure_ok(&m));
    bad = 0;
    for (uint64_t i = 1; i <= N; i++)
        bad += (pv_u64map_find(&m, 0x7f0000000000ull + i * 64) != NULL) != (i % 2 == 0);
    CHECKF(bad == 0, "%d keys wrong after taking half", bad);
    for (uint64_t i = 1; i <= N; i += 2) {
        uint64_t key = 0x7f0000000000ull + i * 64;
        CHECK(pv_u64map_put(&m, key, val_of(key, -(int64_t)i)) == 0);
    }
    CHECK(m.n == N);
    bad = 0;
    for (uint64_t i = 1; i <= N; i++) {
        pv_u64val *v = pv_u64map_find(&m, 0x7f0000000000ull + i * 64);
        bad += !v || v->b != ((i % 2) ? -(int64_t)i : (int64_t)i);
    }
    CHECKF(bad == 0, "%d keys wrong after reinsertion", bad);
    pv_u64map_free(&m);
}

int main(void)
{
    detect_hash();
    check_empty();
    check_wraparound();
    check_random();
    check_growth();
    return check_result();
}
