/* isolation.c — an isolation forest's path lengths; see isolation.h. */
#include "isolation.h"

#include <stdlib.h>

/* The nodes of one level: entries [lo, hi) of sub (a tree's row), their share [cut, end) of
 * the sorted samples, their heap number and tree. */
typedef struct level {
    int64_t *lo, *hi, *cut, *end, *heap, *tree;
    int64_t count;
} level;

/* The two levels' nodes and the leaf flags, in one block kept by the calling thread between
 * calls: the forests of an analysis are thousands of the same size, and a block this large
 * freed and taken again would cost its pages' faults every time. */
static __thread int64_t *work;
static __thread int64_t work_cap;

static int take_work(level *a, level *b, unsigned char **leaf, int64_t cap)
{
    if (cap > work_cap) {
        int64_t *grown = realloc(work, (size_t)cap * (12 * sizeof(int64_t) + 1));
        if (!grown) return -1;
        work = grown, work_cap = cap;
    }
    int64_t **fields[] = {&a->lo, &a->hi, &a->cut, &a->end, &a->heap, &a->tree,
                          &b->lo, &b->hi, &b->cut, &b->end, &b->heap, &b->tree};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) *fields[i] = work + i * (size_t)cap;
    *leaf = (unsigned char *)(work + 12 * (size_t)cap);
    a->count = b->count = 0;
    return 0;
}

static void level_push(level *l, int64_t lo, int64_t hi, int64_t cut, int64_t end, int64_t heap,
                       int64_t tree)
{
    int64_t k = l->count++;
    l->lo[k] = lo, l->hi[k] = hi, l->cut[k] = cut, l->end[k] = end, l->heap[k] = heap,
    l->tree[k] = tree;
}

/* The first index in [lo, hi) whose value is above x, or hi (numpy's searchsorted side
 * "right" over the whole array, when every value before lo is <= x and none from hi is). */
static int64_t upper_bound(const double *v, int64_t lo, int64_t hi, double x)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The first entry in [lo, hi) of sub that is >= x, or hi. */
static int64_t lower_bound(const int64_t *sub, int64_t lo, int64_t hi, int64_t x)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (sub[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* One level's additions, in the Python implementation's order, and its splits into next. */
static void grow_level(const level *cur, level *next, unsigned char *leaf, double *step,
                       const double *values, const int64_t *sub, const double *draws,
                       int64_t heaps, const double *c_of_size, int64_t depth, int64_t limit)
{
    for (int64_t i = 0; i < cur->count; i++) {
        double vmin = values[sub[cur->lo[i]]], vmax = values[sub[cur->hi[i] - 1]];
        leaf[i] = vmin == vmax || depth >= limit;
    }
    for (int64_t i = 0; i < cur->count; i++)
        if (leaf[i]) step[cur->cut[i]] += c_of_size[cur->hi[i] - cur->lo[i]];
    for (int64_t i = 0; i < cur->count; i++)
        if (leaf[i]) step[cur->end[i]] += -c_of_size[cur->hi[i] - cur->lo[i]];
    for (int64_t i = 0; i < cur->count; i++)
        if (!leaf[i]) step[cur->cut[i]] += 1.0;
    for (int64_t i = 0; i < cur->count; i++)
        if (!leaf[i]) step[cur->end[i]] += -1.0;
    next->count = 0;
    for (int64_t i = 0; i < cur->count; i++) {
        if (leaf[i]) continue;
        int64_t lo = cur->lo[i], hi = cur->hi[i], heap = cur->heap[i], tree = cur->tree[i];
        double vmin = values[sub[lo]], vmax = values[sub[hi - 1]];
        double span = vmax - vmin;
        double scaled = draws[tree * heaps + heap] * span;
        double threshold = vmin + scaled;
        if (threshold >= vmax) threshold = vmin;
        /* The node's share holds every sample between its parent's thresholds, so the
         * samples before it are below vmin and those after it above vmax. */
        int64_t split = upper_bound(values, cur->cut[i], cur->end[i], threshold);
        int64_t mid = lower_bound(sub, lo, hi, split);
        if (mid - lo >= 2) level_push(next, lo, mid, cur->cut[i], split, 2 * heap, tree);
        if (hi - mid >= 2) level_push(next, mid, hi, split, cur->end[i], 2 * heap + 1, tree);
    }
}

int perfvar_iforest_paths(const double *values, int64_t n, const int64_t *sub, int64_t trees,
                          int64_t psi, const double *draws, int64_t heaps, const double *c_of_size,
                          int64_t limit, double *paths)
{
    if (n < 2 || trees < 1 || psi < 2 || psi > n) return -1;
    /* A node holds 2 entries or more: a level never has more nodes than half the entries. */
    int64_t cap = trees * psi / 2;
    level a, b;
    unsigned char *leaf;
    double *step = calloc((size_t)n + 1, sizeof *step);
    if (!step || take_work(&a, &b, &leaf, cap)) {
        free(step);
        return -1;
    }
    for (int64_t t = 0; t < trees; t++) level_push(&a, t * psi, (t + 1) * psi, 0, n, 1, t);
    level *cur = &a, *next = &b;
    for (int64_t depth = 0; cur->count; depth++) {
        grow_level(cur, next, leaf, step, values, sub, draws, heaps, c_of_size, depth, limit);
        level *swap = cur;
        cur = next, next = swap;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) paths[i] = sum += step[i];
    free(step);
    return 0;
}
