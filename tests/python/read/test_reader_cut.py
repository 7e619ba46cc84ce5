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


def test_a_first_chunk_cut_short_reads_the_same_whatever_otf2_made_of_it():
    """Past a cut inside the first chunk OTF2 decodes memory the file did not fill: it
    ends cleanly after some events or fails, as the heap holds (the two event loops
    disagreed in a full test run: 117 events and a clean end, 0 and "This is no chunk
    header!"). Both are the same unreadable location."""
    from perfvar.read.otf2 import ReadFailure, settle_location
    from perfvar.read.samples import LocationReport

    def settled(events_read, broke):
        report = LocationReport(1, 1, "Master thread", 360, events_read=events_read)
        settle_location(report, whole_chunk=False, broke=broke)
        return report

    clean = settled(117, None)
    failed = settled(0, ReadFailure(["This is no chunk header!"], RuntimeError("OTF2")))
    assert clean == failed and clean.error is not None and clean.events_read == 0
    assert settled(360, None).error is None  # all there: whole
    # Past a whole chunk the chunks before the cut are kept, as read.
    report = LocationReport(1, 1, "Master thread", 360, events_read=200)
    settle_location(report, whole_chunk=True, broke=None)
    assert report.error is None and report.cut == "read 200 of 360 events announced"
