"""An event file cut short (a half-written or truncated file) loses only what follows the cut:
the chunks before it are read, and the rank stays in the analysis with a warning.

The trace is DIR/long of the golden trace (tests/unit/test_convert.c): two ranks of 60 001
segments each, written by perfvar's recorder and OTF2 writer in 1 MiB chunks."""

import os
import shutil
from pathlib import Path

import pytest

from perfvar.read.trace import read_trace

GOLDEN = os.environ.get("PV_GOLDEN_TRACE")
LONG = Path(GOLDEN or "/nonexistent") / "long"


@pytest.mark.skipif(not (LONG / "traces.otf2").exists(), reason="no golden trace (ctest)")
def test_truncated_event_file_keeps_its_whole_chunks(tmp_path):
    path = tmp_path / "t"
    shutil.copytree(LONG, path)
    whole = read_trace(str(path))
    n = {r: int((whole.samples["rank"] == r).sum()) for r in (0, 1)}
    evt = path / "traces" / "1.evt"
    chunk = 1 << 20  # perfvar's OTF2 event chunks (src/trace/trace.h)
    assert evt.stat().st_size > 2 * chunk
    # Cut where the second chunk begins: OTF2 reports "This is no chunk header!". (A cut inside
    # a chunk leaves libotf2 decoding memory it never filled: an error, or at some cut points
    # no end, so the test does not cut there.)
    with open(evt, "r+b") as f:
        f.truncate(chunk)
    trace = read_trace(str(path))
    per_rank = {r: int((trace.samples["rank"] == r).sum()) for r in (0, 1)}
    assert per_rank[0] == n[0]
    assert 0 < per_rank[1] < n[1]
    assert 1 not in trace.broken_ranks
    assert any("rank 1: its event file breaks off" in w for w in trace.warnings)
