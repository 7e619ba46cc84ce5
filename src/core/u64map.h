/*
 * u64map.h — open-addressing hash map from a non-zero uint64 key to a 32-byte value (internal).
 * Linear probing with backward-shift deletion, so lookups stay short after many removals
 * (requests come and go). Grows at 50% load. Not thread-safe: one owner at a time.
 */
#ifndef PV_U64MAP_H
#define PV_U64MAP_H
#include <stddef.h>
#include <stdint.h>

typedef struct pv_u64val {
    int64_t a, b, c, d; /* the user's; fields not given in an initialiser are 0 */
} pv_u64val;

typedef struct pv_u64map {
    uint64_t *keys; /* 0 = empty slot */
    pv_u64val *vals;
    size_t cap, n;
} pv_u64map;

/* Pointer to the value of key, or NULL. key must be non-zero. */
pv_u64val *pv_u64map_find(const pv_u64map *m, uint64_t key);
/* Insert or overwrite; returns 0, or -1 when out of memory. */
int pv_u64map_put(pv_u64map *m, uint64_t key, pv_u64val val);
/* Remove key and copy its value to *out; returns 1 if it was present, else 0. */
int pv_u64map_take(pv_u64map *m, uint64_t key, pv_u64val *out);
void pv_u64map_free(pv_u64map *m);

#endif
