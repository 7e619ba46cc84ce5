"""t_min / t_diff recomputed with the paper's statistics from stored samples."""

import json
import math

import numpy as np

from perfvar.calibration.judge import JudgeParams, decide
from perfvar.calibration.ranks import judged_meta
from perfvar.reader_meta import read_meta


def recheck(doc, unit="ns"):
    """The judge's decision over a document's flush-0 distributions."""
    return decide(doc["distributions"], JudgeParams.of(doc), unit).to_json()


def _doc(noise=1.0, p=3, q=3, seed=0, n=300):
    """Distributions as the C search stores them: adds * 0.3 ns + noise, with spikes."""
    rng = np.random.default_rng(seed)

    def dist(adds):
        x = adds * 0.3 + rng.normal(0, noise, n)
        x[:2] += 5000  # two OS-noise samples that filter_os must remove
        return [round(float(v), 1) for v in x]

    dists = []
    for k in (64, 128, 256, 512, 1024):  # CV < 0.01 from about 256 ADDs (noise 1 ns)
        for i in range(p):
            dists.append(
                {
                    "kind": "tmin",
                    "adds": k,
                    "base": 0,
                    "d": 0,
                    "pair": i,
                    "samples_ns": dist(k),
                }
            )
    for d in (1, 2, 4, 8, 16, 32):
        for i in range(1, q + 1):
            dists.append(
                {
                    "kind": "pair_short",
                    "adds": 512 + (i - 1) * d,
                    "base": 512,
                    "d": d,
                    "pair": i,
                    "samples_ns": dist(512 + (i - 1) * d),
                }
            )
            dists.append(
                {
                    "kind": "pair_long",
                    "adds": 512 + i * d,
                    "base": 512,
                    "d": d,
                    "pair": i,
                    "samples_ns": dist(512 + i * d),
                }
            )
    return {
        "rank": 0,
        "epsilon": 0.01,
        "alpha": 0.05,
        "p": p,
        "q": q,
        "timer_overhead_ns": 20.0,
        "distributions": dists,
    }


def test_paper_statistics_find_t_min_and_t_diff_despite_os_noise():
    r = recheck(_doc())
    # CV of N(0.3 k, 1) is 1/(0.3 k): < 0.01 from k = 334, so the first stored one: 512.
    assert r["t_min_adds"] == 512
    assert r["t_min_cv"] < 0.01
    # Separating two normals with sd 1 ns needs a gap of ~6 ns = 20 ADDs: d = 32 stored.
    assert r["t_diff_adds"] in (16, 32)
    assert math.isfinite(r["t_diff_ns"]) and r["t_diff_ns"] > 0
    assert r["t_diff_overlap"] < 0.05


def test_pairs_below_t_min_do_not_confirm_t_diff():
    r = recheck(_doc(noise=2.0))  # CV < 0.01 from k ~ 667: t_min 1024, pairs sit at 512
    assert r["t_min_adds"] == 1024
    assert r["t_diff_adds"] is None


def test_no_stored_length_precise_enough_confirms_nothing():
    r = recheck(
        _doc(noise=4.0)
    )  # CV < 0.01 only from k ~ 1333: beyond every stored one
    assert r["t_min_adds"] is None and r["t_diff_adds"] is None


def test_analysis_uses_the_paper_values_and_says_where_they_come_from(tmp_path):
    meta_dir = tmp_path / "perfvar"
    meta_dir.mkdir()
    cal = {
        "status": "complete",
        "timer_overhead_ns": 20.0,
        "t_min_ns": 1.0,
        "t_diff_ns": 1.0,
    }
    (meta_dir / "rank-0.json").write_text(json.dumps({"rank": 0, "calibration": cal}))
    (meta_dir / "rank-1.json").write_text(json.dumps({"rank": 1, "calibration": cal}))
    (meta_dir / "calibration-rank-0.json").write_text(json.dumps(_doc()))
    bad = _doc(noise=4.0)
    (meta_dir / "calibration-rank-1.json").write_text(json.dumps(bad))
    meta = judged_meta(str(tmp_path), [0, 1])
    c0, c1 = meta.ranks[0].calibration, meta.ranks[1].calibration
    assert c0.source.startswith("paper") and c0.t_min_ns > 100  # replaced
    assert c1.source.startswith("C estimate") and c1.t_min_ns == 1.0  # kept, labelled
    assert any("rank 1" in n and "not confirm" in n for n in meta.notes)
    skipped = read_meta(str(tmp_path), [0, 1])
    assert skipped.ranks[0].calibration.t_min_ns == 1.0


def test_rank_without_calibration_is_uncalibrated_and_the_rest_read(tmp_path):
    # rank-1.json has no "calibration" (a hand-edited or foreign file) while its
    # calibration-rank-1.json is there: rank 1 is uncalibrated, rank 0 still checked.
    meta_dir = tmp_path / "perfvar"
    meta_dir.mkdir()
    cal = {"mode": "quick", "status": "complete", "timer_overhead_ns": 20.0}
    cal.update(t_min_ns=1.0, t_diff_ns=1.0)
    (meta_dir / "rank-0.json").write_text(json.dumps({"rank": 0, "calibration": cal}))
    (meta_dir / "rank-1.json").write_text(json.dumps({"rank": 1}))
    for r in (0, 1):
        (meta_dir / f"calibration-rank-{r}.json").write_text(json.dumps(_doc()))
    meta = judged_meta(str(tmp_path), [0, 1])
    assert meta.ranks[0].calibration.source.startswith("paper")
    c1 = meta.ranks[1].calibration
    assert c1.t_min_ns is None and c1.t_diff_ns is None and not meta.ranks[1].calibrated
