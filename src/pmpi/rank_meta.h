/*
 * rank_meta.h — the JSON files a rank leaves in DIR/perfvar/ (rank_meta.c; internal to src/pmpi):
 * rank-N.json (every rank), run.json (rank 0) and calibration-rank-N.json. Their keys are those of
 * src/spec/contracts.py (pv_spec.h); their layout is documented in docs/trace-format.md.
 *
 * Each takes the runtime's state it reports, read only. Called by the starting thread at the start
 * and at the stop (lifecycle.c), never concurrently; not async-signal-safe (stdio).
 */
#ifndef PV_RANK_META_H
#define PV_RANK_META_H

#include "lifecycle.h"

/* DIR/perfvar/rank-N.json: 0 or -1 (message printed). Written at the start (what a rank that dies
 * leaves) and again at the stop, with the trace's figures. */
int pv_write_rank_meta(const pv_runtime *rt);
/* DIR/perfvar/run.json, rank 0 only (the others return 0): 0 or -1. */
int pv_write_run_meta(const pv_runtime *rt);
/* DIR/perfvar/calibration-rank-N.json: the raw distributions of the calibration, 0 when there are
 * none; 0 or -1. */
int pv_write_calibration_samples(const pv_runtime *rt);

#endif
