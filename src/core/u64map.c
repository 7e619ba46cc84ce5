/* u64map.c — see u64map.h. */
#include "u64map.h"

#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33; /* murmur3 finaliser: addresses and handles share low bits */
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

pv_u64val *pv_u64map_find(const pv_u64map *m, uint64_t key)
{
    if (!m->cap) return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) return &m->vals[i];
        if (m->keys[i] == 0) return NULL;
    }
}

static int grow(pv_u64map *m)
{
    size_t cap = m->cap ? 2 * m->cap : 256;
    uint64_t *keys = calloc(cap, sizeof *keys);
    pv_u64val *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys), free(vals);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = slot_of(m->keys[i], cap);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    free(m->keys), free(m->vals);
    m->keys = keys, m->vals = vals, m->cap = cap;
    return 0;
}

int pv_u64map_put(pv_u64map *m, uint64_t key, pv_u64val val)
{
    pv_u64val *v = pv_u64map_find(m, key);
    if (v) {
        *v = val;
        return 0;
    }
    if (2 * (m->n + 1) > m->cap && grow(m)) return -1;
    size_t i = slot_of(key, m->cap);
    while (m->keys[i]) i = (i + 1) & (m->cap - 1);
    m->keys[i] = key;
    m->vals[i] = val;
    m->n++;
    return 0;
}

int pv_u64map_take(pv_u64map *m, uint64_t key, pv_u64val *out)
{
    if (!m->cap) return 0;
    size_t i = slot_of(key, m->cap);
    while (m->keys[i] != key) {
        if (!m->keys[i]) return 0;
        i = (i + 1) & (m->cap - 1);
    }
    *out = m->vals[i];
    /* Backward-shift: move later entries of the probe run into the hole when that is closer to
     * their home slot, so no tombstones are needed. */
    for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        size_t home = slot_of(m->keys[j], m->cap);
        if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->n--;
    return 1;
}

void pv_u64map_free(pv_u64map *m)
{
    free(m->keys), free(m->vals);
    m->keys = NULL, m->vals = NULL, m->cap = m->n = 0;
}
