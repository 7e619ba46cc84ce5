/* test_fact_memo.c — a call site's fact memo (recorder.h pv_rec_fact_memoized): it gives the slot
 * pv_rec_fact gives, writes no definition for a fact its slot still holds, and is not trusted once
 * the stream has written any definition since, here one that replaced the memo's slot with another
 * fact hashing to the same home slot. MPI-free: one stream in a temporary directory. */
#include "check.h"
#include "recorder/recorder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static pv_rec_fact_def msg(uint32_t peer, uint32_t tag, uint64_t bytes)
{
    return (pv_rec_fact_def){PV_REC_FACT_MSG, 0, peer, tag, bytes, 0};
}

static uint16_t memoized(pv_rec_stream *s, pv_rec_fact_memo *m, pv_rec_fact_def f)
{
    return pv_rec_fact_memoized(s, m, f.kind_op & 0xff, f.kind_op >> 8, f.comm, f.peer, f.tag, f.bytes,
                                f.bytes2);
}

static int holds(const pv_rec_stream *s, uint16_t slot, pv_rec_fact_def f)
{
    return slot && (s->fact_used[slot / 64] >> (slot % 64) & 1) && !memcmp(&s->facts[slot], &f, sizeof f);
}

int main(void)
{
    char dir[] = "/tmp/perfvar-fact-memo-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[sizeof dir + 16];
    snprintf(sub, sizeof sub, "%s/perfvar", dir);
    CHECK(mkdir(sub, 0700) == 0);
    CHECK(pv_rec_defs_open(dir, 0) == 0);
    pv_rec_stream *s = pv_rec_open(dir, 0, 0, 64 << 10);
    CHECK(s != NULL);
    if (!s) return check_result();

    pv_rec_fact_memo m;
    memset(&m, 0, sizeof m);
    pv_rec_fact_def a = msg(1, 7, 64);
    uint16_t slot = memoized(s, &m, a);
    CHECK(holds(s, slot, a));
    CHECK(slot == pv_rec_fact_home(&a)); /* nothing else is in the table yet */

    /* Again: the memo's slot, and no unit written. */
    pv_rec_unit *before = s->cur;
    CHECK(memoized(s, &m, a) == slot);
    CHECK(s->cur == before);

    /* Another fact through the same memo: its own slot, and the memo follows it. */
    pv_rec_fact_def b = msg(2, 7, 64);
    uint16_t slot_b = memoized(s, &m, b);
    CHECK(holds(s, slot_b, b) && slot_b != slot);
    before = s->cur;
    CHECK(memoized(s, &m, b) == slot_b && s->cur == before);

    /* A fact c with b's home slot replaces b there (no CALL is open); the memo must not give b's
     * old slot for b, which now holds c, but a slot that holds b again. */
    pv_rec_fact_def c = msg(2, 8, 64);
    for (uint32_t tag = 9; tag < 1000000 && pv_rec_fact_home(&c) != slot_b; tag++) c = msg(2, tag, 64);
    CHECK(pv_rec_fact_home(&c) == slot_b && c.tag != b.tag);
    CHECK(pv_rec_fact(s, PV_REC_FACT_MSG, 0, 0, c.peer, c.tag, c.bytes, 0) == slot_b);
    CHECK(holds(s, slot_b, c));
    uint16_t again = memoized(s, &m, b);
    CHECK(holds(s, again, b));

    /* A memo of a fact still in place is not trusted either after any definition: it looks the fact
     * up, and finds the same slot without writing it again. */
    pv_rec_fact_memo ma;
    memset(&ma, 0, sizeof ma);
    CHECK(memoized(s, &ma, a) == slot);
    (void)pv_rec_fact(s, PV_REC_FACT_MSG, 0, 0, 3, 3, 3, 0); /* a definition elsewhere */
    before = s->cur;
    CHECK(memoized(s, &ma, a) == slot && s->cur == before);

    CHECK(pv_rec_close(s, 1000) == 0);
    pv_rec_defs_close();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_result();
}
