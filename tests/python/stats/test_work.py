"""perfvar.stats.work: more work or a slower core, from the instruction counts of the
counter reads, in the slow_segment and slow_core findings, on reads made here (this
machine has no PMU to count instructions)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pytest

from conftest import make_prepared
from perfvar.detect import slow_core, slow_segment
from perfvar.detect.words import NO_INSTRUCTIONS, work_clause
from perfvar.read.samples import METRIC_DTYPE
from perfvar.stats import work
from perfvar.stats.model import Prepared

NAMES = ["perf::TASK-CLOCK:k=1", "PAPI_TOT_INS", "perf::CONTEXT-SWITCHES"]
INS_PER_NS = 2.0  # what every rank's segments execute per ns, unless told otherwise
RANKS = 4
N = 200  # segments per cell; every one ends with a read


def _prepared(slow: dict[tuple[int, int], float], seed: int = 0) -> Prepared:
    """Four ranks in two classes of 1 ms segments; ``slow[(class, rank)]``: how many
    times longer that cell's segments take."""
    rng = np.random.default_rng(seed)
    return make_prepared(
        {
            (seg, r): rng.normal(1e6, 1e3, N) * slow.get((seg, r), 1.0)
            for seg in (0, 1)
            for r in range(RANKS)
        },
        t_diff_ns=10.0,
    )


def _reads(
    prep: Prepared,
    more: dict[tuple[int, int], float],
    waits: Optional[dict[int, float]] = None,
    names: list[str] = NAMES,
    poll: float = 1.0,
    seed: int = 1,
) -> np.ndarray:
    """A read at the end of every segment of ``prep.samples`` (clock: 1 tick a ns),
    covering it alone: the instructions of a 1 ms segment (x ``more[(class, rank)]``,
    give or take 0.5 %) and its task clock. ``waits[rank]``: every other read of that
    rank also covers an MPI call as long as that share of its segment, polling at
    ``poll`` x INS_PER_NS."""
    rng = np.random.default_rng(seed)
    s = prep.samples
    rows = np.zeros(s.size, dtype=METRIC_DTYPE)
    rows["values"] = np.nan
    rows["rank"], rows["sample"] = s["rank"], np.arange(s.size)
    rows["first"] = rows["sample"]
    wait = np.zeros(s.size)
    for rank, share in (waits or {}).items():
        mine = np.flatnonzero(s["rank"] == rank)[::2]
        wait[mine] = share * s["duration_ns"][mine]
    rows["since_ticks"] = np.arange(s.size, dtype=np.uint64) * np.uint64(10**7)
    wall = s["duration_ns"] + wait
    rows["time_ticks"] = rows["since_ticks"] + np.round(wall).astype(np.uint64)
    factor = np.array([more.get((g, r), 1.0) for g, r in zip(s["segment"], s["rank"])])
    ins = INS_PER_NS * 1e6 * factor * rng.normal(1.0, 0.005, s.size)
    ins += poll * INS_PER_NS * wait
    want = {
        "PAPI_TOT_INS": ins,
        "perf::TASK-CLOCK:k=1": wall,
        "perf::CONTEXT-SWITCHES": 0,
    }
    for i, name in enumerate(names):
        rows["values"][:, i] = want.get(name, 0.0)
    return rows


def _with_work(prep: Prepared, rows: np.ndarray, names: list[str] = NAMES) -> Prepared:
    prep.work = work.of_reads(rows, names, prep.samples, ticks_per_ns=1.0)
    return prep


def _slow_segment(prep: Prepared):
    (found,) = slow_segment.detect(prep).anomalies
    assert (found.rank, found.segment) == (1, "S0")
    return found, slow_segment.describe(found.to_json(), {})


def test_a_class_that_counts_half_more_instructions_is_more_work():
    prep = _prepared({(0, 1): 1.5})
    found, text = _slow_segment(_with_work(prep, _reads(prep, {(0, 1): 1.5})))
    ev = found.evidence["work"]
    assert ev["verdict"] == "more work"
    assert ev["counter"] == "PAPI_TOT_INS"
    assert ev["instructions_rel"] == pytest.approx(0.5, abs=0.01)
    assert ev["instructions"] == pytest.approx(3e6, rel=0.01)
    assert ev["peers_instructions"] == pytest.approx(2e6, rel=0.01)
    assert ev["reads"] == N and ev["peers_reads"] == (RANKS - 1) * N
    assert ev["p_value"] < 1e-10
    # the same instructions per ns on the CPU: more of them, not slower ones
    assert ev["rate_rel"] == pytest.approx(0.0, abs=0.01)
    assert text.endswith("more instructions than its peers: more work")
    assert "; 50." in text or "; 49." in text


def test_the_same_instructions_taking_longer_are_a_slower_core():
    prep = _prepared({(0, 1): 1.5})
    found, text = _slow_segment(_with_work(prep, _reads(prep, {})))
    ev = found.evidence["work"]
    assert ev["verdict"] == "slower core"
    assert abs(ev["instructions_rel"]) < 0.01
    assert ev["rate_rel"] == pytest.approx(1 / 1.5 - 1, abs=0.01)
    assert "; the same instructions as its peers (" in text
    assert text.endswith("): a slower core")


def test_a_slow_core_is_told_from_all_its_reads():
    slow = {(g, 2): 1.1 for g in (0, 1)}
    prep = _prepared(slow)
    (found,) = slow_core.detect(_with_work(prep, _reads(prep, {}))).anomalies
    assert found.rank == 2
    ev = found.evidence["work"]
    assert ev["verdict"] == "slower core" and ev["reads"] == 2 * N
    assert slow_core.describe(found.to_json(), {}).endswith(": a slower core")
    (found,) = slow_core.detect(_with_work(prep, _reads(prep, slow))).anomalies
    assert found.evidence["work"]["verdict"] == "more work"
    assert found.evidence["work"]["instructions_rel"] == pytest.approx(0.1, abs=0.01)


def test_without_an_instruction_counter_the_sentence_says_it_could_not_tell():
    prep = _prepared({(0, 1): 1.5})
    names = ["perf::TASK-CLOCK:k=1", "perf::CONTEXT-SWITCHES"]
    for counted in (_with_work(prep, _reads(prep, {}, names=names), names), prep):
        if counted is prep:
            prep.work = None  # no counters read at all
        found, text = _slow_segment(counted)
        ev = found.evidence["work"]
        assert ev["verdict"] == "could not tell"
        assert ev["reason"] == "no instruction counter"
        assert text.endswith(NO_INSTRUCTIONS)
        assert "no instruction counter to tell" in text


def test_reads_whose_peers_waited_in_mpi_are_left_out():
    # Half the peers' reads cover a wait of half their segment's length, polling at 4x
    # the segments' rate: even in proportion to the segments' time, these reads count
    # twice the instructions, and pooled with the others they would make the rank's
    # half more instructions look like its peers' (a slower core).
    prep = _prepared({(0, 1): 1.5})
    rows = _reads(prep, {(0, 1): 1.5}, waits={0: 0.5, 2: 0.5, 3: 0.5}, poll=4.0)
    found, _ = _slow_segment(_with_work(prep, rows))
    ev = found.evidence["work"]
    assert ev["verdict"] == "more work"
    assert ev["reads_left_out"] == 3 * N // 2  # half of each peer's reads in S0
    assert ev["peers_reads"] == (RANKS - 1) * N // 2


def test_too_few_reads_cannot_tell():
    prep = _prepared({(0, 1): 1.5})
    rows = _reads(prep, {(0, 1): 1.5})
    rows = rows[(rows["rank"] != 1) | (rows["sample"] % 100 == 0)]  # 2 of 200 kept
    found, text = _slow_segment(_with_work(prep, rows))
    assert found.evidence["work"]["reason"] == "too few reads"
    assert text.endswith("(more work or a slower core: too few counter reads to tell)")


@pytest.mark.parametrize(
    "name",
    [
        "PAPI_TOT_INS",
        "perf::INSTRUCTIONS",
        "perf::instructions:u=1",
        "INSTRUCTIONS_RETIRED",
        "INST_RETIRED:ANY_P",
        "cpu_core::INST_RETIRED:ANY_P:k=1",
    ],
)
def test_an_instruction_counter_is_found_by_any_of_its_names(name):
    assert work.instruction_column(["perf::TASK-CLOCK", name]) == 1


def test_other_counters_are_no_instruction_counter():
    names = ["perf::TASK-CLOCK", "PAPI_TOT_CYC", "perf::BRANCH-INSTRUCTIONS"]
    assert work.instruction_column(names) is None


@pytest.mark.parametrize(
    "instructions_rel, verdict",
    [(0.26, "more work"), (0.25, "more work"), (0.2, "both"), (0.12, "slower core"),
     (0.0, "slower core"), (-0.3, "slower core")],
)  # fmt: skip
def test_the_verdict_weighs_the_instructions_against_the_excess(
    instructions_rel, verdict
):
    assert work.verdict(instructions_rel, 0.5) == verdict


def test_with_probes_and_no_instruction_counter_the_probes_are_said():
    untold = work.untold("no instruction counter", probes=True)
    assert work_clause(untold, " (probes)") == " (probes)"
    assert work_clause(untold, "") == NO_INSTRUCTIONS
    assert work_clause(None) == ""  # an older analysis.json
