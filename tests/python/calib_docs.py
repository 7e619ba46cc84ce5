"""Calibration documents as the C search stores them, and the judge's decision over one:
shared by the calibration, cache-state and parallel-analysis tests."""

import numpy as np

from perfvar._spec import CalibrationJson as Cal
from perfvar._spec import CalibrationJsonDistribution as Dist
from perfvar.calibration.judge import JudgeParams, decide

SAMPLES_NS = Dist.SAMPLES_UNIT.format(unit="ns")


def recheck(doc, unit="ns"):
    """The judge's decision over a document's flush-0 distributions."""
    return decide(doc[Cal.DISTRIBUTIONS], JudgeParams.of(doc), unit).to_json()


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
                    Dist.KIND: "tmin",
                    Dist.ADDS: k,
                    Dist.BASE: 0,
                    Dist.D: 0,
                    Dist.PAIR: i,
                    SAMPLES_NS: dist(k),
                }
            )
    for d in (1, 2, 4, 8, 16, 32):
        for i in range(1, q + 1):
            dists.append(
                {
                    Dist.KIND: "pair_short",
                    Dist.ADDS: 512 + (i - 1) * d,
                    Dist.BASE: 512,
                    Dist.D: d,
                    Dist.PAIR: i,
                    SAMPLES_NS: dist(512 + (i - 1) * d),
                }
            )
            dists.append(
                {
                    Dist.KIND: "pair_long",
                    Dist.ADDS: 512 + i * d,
                    Dist.BASE: 512,
                    Dist.D: d,
                    Dist.PAIR: i,
                    SAMPLES_NS: dist(512 + i * d),
                }
            )
    return {
        Cal.RANK: 0,
        Cal.EPSILON: 0.01,
        Cal.ALPHA: 0.05,
        Cal.P: p,
        Cal.Q: q,
        Cal.TIMER_OVERHEAD_NS: 20.0,
        Cal.DISTRIBUTIONS: dists,
    }
