"""The Python reader on a trace written by perfvar's own recorder and OTF2 writer.

The C unit test unit.convert (tests/unit/test_convert.c) records a small two-rank run at ticks it
chooses (a 1 GHz clock, so ticks are ns), converts it with the same code MPI_Finalize runs, and
writes what must be read back into golden.json beside the archive. ctest runs it first
(fixture golden_trace) and gives its directory in PV_GOLDEN_TRACE.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from perfvar.read.trace import read_trace
from perfvar.read.segments import parse_segment_key

GOLDEN = os.environ.get("PV_GOLDEN_TRACE")
pytestmark = pytest.mark.skipif(
    not GOLDEN or not (Path(GOLDEN) / "golden.json").exists(),
    reason="no golden trace (ctest runs unit.convert first and sets PV_GOLDEN_TRACE)",
)


@pytest.fixture(scope="module")
def golden():
    expected = json.loads((Path(GOLDEN) / "golden.json").read_text())
    return expected, read_trace(GOLDEN)


def test_every_segment_read_exactly(golden):
    expected, trace = golden
    assert trace.timer_resolution_hz == expected["timer_resolution_hz"]
    s = trace.samples
    got = sorted(
        (int(r), int(t), int(round(d)))
        for r, t, d in zip(s["rank"], s["start_ticks"], s["duration_ns"])
    )
    want = sorted((g["rank"], g["start_ns"], g["ns"]) for g in expected["segments"])
    assert got == want


def test_segments_named_by_their_sites(golden):
    expected, trace = golden
    s = trace.samples
    for g in expected["segments"]:
        i = np.flatnonzero((s["rank"] == g["rank"]) & (s["start_ticks"] == g["start_ns"]))
        assert i.size == 1
        parsed = parse_segment_key(trace.segments[int(s["segment"][i[0]])])
        sites = expected["sites"]
        for end, idx in ((parsed.start, g["from"]), (parsed.end, g["to"])):
            function, where = sites[idx].split("@")
            if function == "P2P":  # rank 0 sends, rank 1 receives at that site
                function = "MPI_Send" if g["rank"] == 0 else "MPI_Recv"
            module, offset = where.split("+")
            assert (end.function, end.module, end.offset) == (function, module, int(offset, 16))


def test_cpus_and_bytes_moved(golden):
    _, trace = golden
    s = trace.samples
    # each rank's clock reads were taken on CPU = its rank
    assert np.array_equal(s["cpu_enter"], s["rank"])
    assert np.array_equal(s["cpu_leave"], s["rank"])
    # a segment after the Send/Recv follows a 64-byte message
    after_p2p = [
        k
        for k, key in enumerate(trace.segments)
        if parse_segment_key(key).start.function in ("MPI_Send", "MPI_Recv")
        and parse_segment_key(key).end.function == "MPI_Allreduce"
    ]
    assert after_p2p
    m = np.isin(s["segment"], after_p2p)
    assert np.all(s["context_bytes"][m] == 64)
