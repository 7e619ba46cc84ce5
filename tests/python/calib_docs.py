"""Calibration documents as the C search stores them, and the judge's decision over one:
shared by the calibration, cache-state and parallel-analysis tests."""

import numpy as np

from perfvar.calibration.judge import JudgeParams, decide


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
