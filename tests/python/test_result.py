"""The typed result (perfvar.result): an analysis read back from analysis.json is the
analysis that wrote it, rewriting it gives the same bytes, a newer format is refused
with a clear error, and a file written before the format field reads as format 1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import perfvar
from conftest import normal_durations, write_trace
from perfvar.analysis import analyze
from perfvar.report.json import write_json
from perfvar.result import (
    FORMAT,
    Analysis,
    Consequence,
    Finding,
    ResultFormatError,
    load,
)


@pytest.fixture(scope="module")
def analyses(tmp_path_factory) -> list[Analysis]:
    """Two analyses of synthetic runs: rank 1 slower in one class (a slow segment),
    and ranks 0 and 1 on one CPU (a shared CPU and its consequences)."""
    out = []
    base = tmp_path_factory.mktemp("result")
    slow = normal_durations(seed=1, slow={1: 272_300.0})
    for name, cpus in (("slow", {0: 0, 1: 3, 2: 1, 3: 2}), ("shared", {0: 0, 1: 0})):
        path = str(base / name)
        write_trace(path, slow, cpus={**{r: r + 4 for r in range(4)}, **cpus})
        out.append(analyze(path, symbolize_sites=False))
    return out


def test_an_analysis_round_trips_through_its_json(analyses, tmp_path):
    slow, shared = analyses
    assert slow.anomalies and shared.consequences  # both kinds of parts are there
    assert isinstance(shared.consequences[0], Consequence)
    assert isinstance(shared.consequences[0].anomaly, Finding)
    for i, result in enumerate(analyses):
        path = write_json(result, str(tmp_path / f"a{i}.json"))
        text = Path(path).read_text()
        assert text.startswith(f'{{\n "format": {FORMAT},\n')
        again = load(path)
        assert again == Analysis.from_json(json.loads(text))
        assert again.to_json() == json.loads(text)
        # Written again, it is the same file, byte for byte.
        assert Path(write_json(again, str(tmp_path / "b.json"))).read_text() == text


def test_each_record_is_one_line(analyses, tmp_path):
    """A top-level entry a line, and each rank, judgement or finding a line of its
    own: what grep shows whole."""
    slow = analyses[0]
    text = Path(write_json(slow, str(tmp_path / "lines.json"))).read_text()
    doc = json.loads(text)
    lines = text.splitlines()
    for j in doc["judgements"]:
        assert f"  {json.dumps(j)}" in (line.rstrip(",") for line in lines)
    assert sum(line.startswith("  {") for line in lines) == sum(
        len(v)
        for v in doc.values()
        if isinstance(v, list) and v and isinstance(v[0], dict)
    )
    assert all(
        json.loads(f"{{{line.rstrip(',')}}}")
        for line in lines[1:-1]
        if not line.startswith(("  ", " ]")) and not line.endswith("[")
    )


def test_the_parts_are_read_by_attribute(analyses):
    slow = analyses[0]
    (finding,) = [a for a in slow.anomalies if a.kind == "slow_segment"]
    assert finding.rank == 1 and finding.segment in slow.labels()
    assert finding.description.startswith("rank 1 (host ")
    row = next(r for r in slow.ranks if r.rank == 1)
    assert row.verdict == "slow segment" and row.anomalies == ["slow_segment"]
    assert slow.summary.kind_ranks["slow_ranks"] == [1]
    assert slow.summary.to_json()["slow_ranks"] == [1]  # written in place
    assert slow.segments[0].id == "S0" and slow.params.min_samples == 8


def test_a_newer_format_is_refused(analyses, tmp_path):
    doc = analyses[0].to_json()
    path = tmp_path / "analysis.json"
    path.write_text(json.dumps({**doc, "format": FORMAT + 1}))
    with pytest.raises(ResultFormatError, match=f"format {FORMAT + 1} is newer"):
        load(str(path))
    with pytest.raises(ResultFormatError, match="not an analysis.json"):
        Analysis.from_json({"format": "one"})
    with pytest.raises(ResultFormatError, match="not an analysis.json"):
        Analysis.from_json({"ranks": [{"host": "no rank"}]})


def test_perfvar_open_refuses_a_newer_format(tmp_path):
    path = tmp_path / "run"
    write_trace(str(path), normal_durations(seed=2))
    (path / "analysis.json").write_text(json.dumps({"format": FORMAT + 1}))
    with pytest.raises(ResultFormatError, match="newer"):
        _ = perfvar.open(str(path), analysis="file").analysis


def test_a_file_without_the_format_field_reads_as_format_1(analyses):
    doc = analyses[0].to_json()
    del doc["format"]
    old = Analysis.from_json(doc)
    assert old.format == 1 and old == analyses[0]
