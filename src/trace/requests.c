/* requests.c — pending non-blocking operations by handle; see requests.h. */
#include "requests.h"

#include <stdlib.h>
#include <string.h>

/* Never 0 (the map's empty key), whatever the handle's bits are: MPI_REQUEST_NULL is never
 * recorded, and no live handle has these bits. */
static uint64_t key_of(uint64_t handle) { return handle ^ 0x9e3779b97f4a7c15ull; }

static int new_item(pv_requests *q, uint32_t *index)
{
    if (q->nfree) {
        *index = q->free_items[--q->nfree];
        return 0;
    }
    if (q->n == q->cap) {
        uint32_t cap = q->cap ? 2 * q->cap : 64;
        pv_pending_request *items = realloc(q->items, cap * sizeof *items);
        if (!items) return -1;
        q->items = items;
        uint32_t *free_items = realloc(q->free_items, cap * sizeof *free_items);
        if (!free_items) return -1;
        q->free_items = free_items;
        q->cap = cap;
    }
    *index = q->n++;
    return 0;
}

int pv_requests_start(pv_requests *q, uint64_t handle, const pv_pending_request *p)
{
    pv_u64val *v = pv_u64map_find(&q->by_handle, key_of(handle));
    if (v) { /* the handle's previous start never completed in the records: this one replaces it */
        q->items[v->a] = *p;
        return 0;
    }
    uint32_t index;
    if (new_item(q, &index)) return -1;
    q->items[index] = *p;
    if (pv_u64map_put(&q->by_handle, key_of(handle), (pv_u64val){.a = index})) {
        q->free_items[q->nfree++] = index;
        return -1;
    }
    return 0;
}

int pv_requests_complete(pv_requests *q, uint64_t handle, pv_pending_request *out)
{
    pv_u64val v;
    if (!pv_u64map_take(&q->by_handle, key_of(handle), &v)) return 0;
    *out = q->items[v.a];
    q->free_items[q->nfree++] = (uint32_t)v.a;
    return 1;
}

void pv_requests_free(pv_requests *q)
{
    pv_u64map_free(&q->by_handle);
    free(q->items);
    free(q->free_items);
    memset(q, 0, sizeof *q);
}
