"""The clean-run check of tests/tools/run_mpi.py: a rank named in a clean run counts against
perfvar unless the program's own timer (--own-clock) measured that rank slower too."""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from run_mpi import Job, unconfirmed  # noqa: E402
from perfvar.read.segments import segment_key  # noqa: E402

SEG = "MPI_Waitall.*MPI_Allreduce"
LINE = r"stencil\[timing\] rank ([0-9]+): compute/step mean ([0-9.]+) ms"
RESULT = {
    "segments": [
        {"id": "S0", "key": segment_key("MPI_Waitall@/x/app+0x1", "MPI_Allreduce@/x/app+0x2")},
        {"id": "S1", "key": segment_key("MPI_Allreduce@/x/app+0x2", "MPI_Irecv@/x/app+0x3")},
    ]
}


def job(own_clock=(SEG, LINE)) -> Job:
    a = argparse.Namespace(
        own_clock=list(own_clock) if own_clock else None, np=2, gross=0.10, program=["--", "prog"]
    )
    return Job(a, [], {})


def finding(rank: int, shift: float, segment: str = "S0") -> dict:
    return {
        "kind": "slow_segment",
        "rank": rank,
        "segment": segment,
        "evidence": {"shift_rel": shift, "excess_rel": shift},
    }


def timer(ms0: float, ms1: float) -> str:
    return "".join(
        f"stencil[timing] rank {r}: compute/step mean {ms:.4f} ms, min 1 ms\n"
        for r, ms in ((1, ms1), (0, ms0))
    )


def test_a_rank_the_programs_timer_measured_slower_is_the_machines():
    assert unconfirmed(job(), [finding(0, 0.92)], RESULT, timer(2.6, 1.4)) == []


def test_a_rank_the_programs_timer_saw_no_slower_counts_against_perfvar():
    assert unconfirmed(job(), [finding(0, 0.92)], RESULT, timer(1.41, 1.40)) == [0]
    # slower, but by less than half of perfvar's shift
    assert unconfirmed(job(), [finding(0, 0.92)], RESULT, timer(1.9, 1.4)) == [0]
    # half of perfvar's shift, but under half the gross margin
    assert unconfirmed(job(), [finding(0, 0.08)], RESULT, timer(1.456, 1.40)) == [0]
    # the other rank slower: the timer contradicts the finding
    assert unconfirmed(job(), [finding(0, 0.30)], RESULT, timer(1.4, 2.0)) == [0]


def test_the_timer_confirms_only_the_segments_it_times():
    assert unconfirmed(job(), [finding(0, 0.5, "S1")], RESULT, timer(2.6, 1.4)) == [0]


def test_without_the_timer_every_finding_counts():
    assert unconfirmed(job(None), [finding(1, 0.5)], RESULT, timer(1.4, 2.6)) == [1]
    # the program printed no time for every rank
    one_rank = "stencil[timing] rank 1: compute/step mean 2.6 ms\n"
    assert unconfirmed(job(), [finding(1, 0.5)], RESULT, one_rank) == [1]
