"""End-to-end: ``perfvar analyze`` on synthetic OTF2 traces, text and JSON output."""

import json
import os
import re
import shutil

import numpy as np
import pytest

from conftest import normal_durations, run_cli
from perfvar.analysis import analyze
from perfvar.cli import main

ANOMALY_RE = re.compile(
    r"^- rank 1 \(host node0, cpu 3\) is slow in segment (S\d+) "
    r"\[stencil\+0x1a2b MPI_Waitall -> stencil\+0x1c3d MPI_Allreduce\]: "
    r"median (\d+\.\d) us vs peers (\d+\.\d) us, \+(\d+\.\d) us per segment "
    r"\(\+50\.\d%; 95% CI \+50\.\d%\.\.\+50\.\d%, q (?:\de-\d+|0\.\d+) < 0\.05, "
    r"steady in (?P<steady>\d+) of (?P=steady) blocks\); "
    r"floor 1\.1 us = max\(t_diff 4\.1 ns, 0\.20%\), flush-0 calibration; "
    r"n=(\d+), (\d+) OS-noise samples removed; paper overlap (0\.\d{3})",
    re.M,
)


def _rank_row(text, rank):
    m = re.search(rf"^\s+{rank}\s+node\d\s+(\S+)\s+(.*)$", text, re.M)
    assert m, f"no table row for rank {rank}"
    return m.group(0)


def test_slow_rank_is_named_in_text_and_json(slow_trace):
    proc = run_cli("analyze", slow_trace)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert proc.stderr == ""
    m = ANOMALY_RE.search(out)
    assert m, out
    seg, median, peers, excess, blocks, n, removed, ov = m.groups()
    assert int(blocks) >= 5  # a steady shift: above the floor in every block
    assert float(median) == pytest.approx(812.3, abs=1.0)
    assert float(peers) == pytest.approx(540.0, abs=1.0)
    assert float(excess) == pytest.approx(272.3, abs=1.0)
    assert float(ov) == 0.0 and int(n) + int(removed) == 200
    assert re.search(
        r"^\s+1\s+node0\s+3\s+150\.3 ns\s+4\.1 ns\s+11\.2 ns\s+0\s+400\s+"
        r"\d\.\d\d%\s+slow segment$",
        out,
        re.M,
    ), out
    for rank in (0, 2, 3):
        assert _rank_row(out, rank).endswith(" ok")
    assert re.search(
        rf"^{seg}\s+800\s+4\s+5\d\d\.\d us\s+\?\s+0\s+\+/-\d+\.\d+%\s+"
        r"stencil\+0x1a2b MPI_Waitall",
        out,
        re.M,
    )  # moved "?": this trace has no message records, so flush 0 judges
    last = out.rstrip("\n").splitlines()
    assert last[-1] == f"report written to {os.path.join(slow_trace, 'report.html')}"
    assert (
        last[-2] == f"analysis written to {os.path.join(slow_trace, 'analysis.json')}"
    )
    assert re.fullmatch(
        rf"verdict: 1 anomalous rank: rank 1 \(host node0, cpu 3: {seg} \+272\.\d us\) "
        r"\(4 ranks, 2 segment classes judged\)",
        last[-3],
    ), last[-3]

    with open(os.path.join(slow_trace, "analysis.json")) as fh:
        doc = json.load(fh)
    for key in ("ranks", "segments", "anomalies", "trace", "alpha", "generated_by"):
        assert key in doc
    assert doc["alpha"] == 0.05 and doc["generated_by"].startswith("perfvar ")
    assert doc["trace"] == os.path.abspath(slow_trace)
    ranks = {r["rank"]: r for r in doc["ranks"]}
    assert set(ranks) == {0, 1, 2, 3}
    for r in ranks.values():
        for key in ("host", "cpus", "t_min_ns", "t_diff_ns", "timer_overhead_ns"):
            assert key in r
        assert r["n_segments"] == 400
    assert ranks[1]["verdict"] == "slow segment" and ranks[1]["cpus"] == [3]
    assert ranks[1]["anomalies"] == ["slow_segment"]
    assert [ranks[r]["verdict"] for r in (0, 2, 3)] == ["ok"] * 3
    segs = {s["id"]: s for s in doc["segments"]}
    assert set(segs) == {"S0", "S1"}
    assert segs[seg]["from"] == "stencil+0x1a2b MPI_Waitall"
    assert segs[seg]["to"] == "stencil+0x1c3d MPI_Allreduce"
    assert segs[seg]["n"] == 800
    (anomaly,) = doc["anomalies"]
    assert anomaly["kind"] == "slow_segment" and anomaly["rank"] == 1
    assert anomaly["host"] == "node0" and anomaly["cpu"] == 3
    assert anomaly["segment"] == seg and anomaly["evidence"]["overlap"] == 0.0
    assert anomaly["excess_ns"] == pytest.approx(272_300.0, abs=1000.0)
    assert anomaly["evidence"]["t_diff_ns"] == 4.1


def test_function_api_matches_cli(slow_trace, tmp_path, capsys):
    result = analyze(slow_trace, symbolize_sites=False)
    assert result.summary.kind_ranks["slow_ranks"] == [1]
    out_json = tmp_path / "custom.json"
    assert main(["analyze", slow_trace, "--json", str(out_json), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    doc = json.loads(out_json.read_text())
    assert doc["summary"]["slow_ranks"] == [1]
    assert not os.path.exists(os.path.join(slow_trace, "analysis.json"))


def test_quiet_trace_has_no_anomaly(quiet_trace):
    proc = run_cli("analyze", quiet_trace, "--alpha", "0.05")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.rstrip("\n").splitlines()
    assert (
        lines[-3]
        == "verdict: no anomalous rank found (4 ranks, 2 segment classes judged)"
    )
    assert "Anomalies (the machine: cores and CPUs)\n(none)" in proc.stdout
    doc = json.load(open(os.path.join(quiet_trace, "analysis.json")))
    assert doc["anomalies"] == []
    assert {r["verdict"] for r in doc["ranks"]} == {"ok"}


def test_what_ranks_sharing_a_cpu_show_is_that_sharing(trace_factory):
    # Rank 1 runs class A 272 us slower, on CPU 0 with rank 0: its time slices.
    durations = normal_durations(seed=1, slow={1: 272_300.0})
    path = trace_factory("shared", durations, cpus={0: 0, 1: 0, 2: 1, 3: 2})
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(
        r"^- rank 1's S\d \(\+\d+%\) is time-slicing: it shared CPU 0 with rank\(s\) 0$",
        proc.stdout,
        re.M,
    )
    assert (
        "verdict: no anomalous rank found (4 ranks, 2 segment classes judged; "
        "rank(s) 0-1 shared a CPU with other ranks, not judged: run one rank per "
        "core)" in proc.stdout
    )
    assert re.search(r"^\s+1\s+node0\s+0\s+.*shared cpu$", proc.stdout, re.M)
    doc = json.load(open(os.path.join(path, "analysis.json")))
    assert doc["summary"]["slow_ranks"] == [] and doc["summary"]["consequence_ranks"] == [1]


def test_migration_is_reported_but_not_slow(trace_factory):
    path = trace_factory(
        "mig",
        normal_durations(seed=3),
        cpus={0: 0, 1: 1, 2: lambda i: 2 + (i % 3 == 0)},
    )
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    assert re.search(
        r"^- rank 2 \(host node1, cpu 2\) migrated: its segments ran on CPUs 2-3",
        proc.stdout,
        re.M,
    )
    assert re.search(r"^\s+2\s+node1\s+2-3\s+.*ok \(migrated\)$", proc.stdout, re.M)
    assert "verdict: no anomalous rank found" in proc.stdout


def test_threads_of_a_rank_are_analysed_together_without_false_migration(
    trace_factory,
):
    path = trace_factory(
        "threads", normal_durations(seed=4, slow={2: 272_300.0}), threads=2
    )
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    assert "migrated" not in proc.stdout
    assert "- rank 0: 2 threads; the slow-segment judgement pools" in proc.stdout
    doc = json.load(open(os.path.join(path, "analysis.json")))
    assert {r["rank"]: r["n_segments"] for r in doc["ranks"]} == {
        r: 2 * 2 * 200 for r in range(4)
    }
    assert [(a["kind"], a["rank"]) for a in doc["anomalies"]] == [("slow_segment", 2)]


def test_below_precision_and_missing_calibration(trace_factory):
    cal = {
        "status": "complete",
        "timer_overhead_ns": 10.0,
        "t_min_ns": 1e7,
        "t_diff_ns": 5.0,
    }
    path = trace_factory(
        "prec",
        normal_durations(seed=4, slow={1: 272_300.0}),
        calibration={0: cal, 1: cal, 2: cal, 3: None},
    )
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    doc = json.load(open(os.path.join(path, "analysis.json")))
    verdicts = [r["verdict"] for r in doc["ranks"]]
    assert verdicts == ["below precision"] * 3 + ["no calibration"]
    assert doc["anomalies"] == []
    assert "rank-N.json missing for 1 rank(s) (3)" in proc.stdout
    assert (
        proc.stdout.rstrip("\n")
        .splitlines()[-3]
        .startswith(
            "verdict: nothing could be judged (4 ranks, 0 segment classes judged: "
        )
    )


def test_broken_rank_is_reported_and_others_analysed(trace_factory):
    path = trace_factory(
        "broken", normal_durations(seed=1, slow={1: 272_300.0}), cpus={1: 3}
    )
    evt = os.path.join(path, "traces", "2.evt")
    with open(evt, "r+b") as fh:
        fh.truncate(os.path.getsize(evt) // 2)
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "- rank 2: events unreadable, rank excluded from the analysis" in proc.stdout
    assert re.search(r"^\s+2\s+node1\s+.*\s+0\s+0.00%\s+unreadable$", proc.stdout, re.M)
    assert ANOMALY_RE.search(proc.stdout)
    assert "rank(s) 2 unreadable" in proc.stdout.splitlines()[-3]


def _assert_one_error_line(proc, pattern):
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("perfvar: error: ")
    assert re.search(pattern, lines[0]), lines[0]
    assert "Traceback" not in proc.stderr and "[OTF2]" not in proc.stderr


def test_missing_directory_is_one_error_line(tmp_path):
    _assert_one_error_line(
        run_cli("analyze", str(tmp_path / "nope")), "no such directory"
    )


def test_truncated_anchor_is_one_error_line(quiet_trace):
    with open(os.path.join(quiet_trace, "traces.otf2"), "r+b") as fh:
        fh.truncate(20)
    _assert_one_error_line(
        run_cli("analyze", quiet_trace), r"cannot read OTF2 archive .*traces\.otf2"
    )


def test_truncated_definitions_is_one_error_line(quiet_trace):
    with open(os.path.join(quiet_trace, "traces.def"), "r+b") as fh:
        fh.truncate(10)
    _assert_one_error_line(run_cli("analyze", quiet_trace), "cannot read OTF2 archive")


def test_deleted_event_directory_is_one_error_line(quiet_trace):
    shutil.rmtree(os.path.join(quiet_trace, "traces"))
    _assert_one_error_line(run_cli("analyze", quiet_trace), "no readable event data")


def test_not_a_trace_directory_is_one_error_line(tmp_path):
    _assert_one_error_line(
        run_cli("analyze", str(tmp_path)), r"traces\.otf2: not found"
    )


def test_unwritable_json_is_an_error(quiet_trace, tmp_path):
    proc = run_cli(
        "analyze", quiet_trace, "--quiet", "--json", str(tmp_path / "no" / "x.json")
    )
    _assert_one_error_line(proc, "cannot write analysis JSON")


def test_bad_arguments_exit_2():
    proc = run_cli("analyze", "x", "--alpha", "1.5")
    assert proc.returncode == 2 and "perfvar: error:" in proc.stderr
    proc = run_cli("--version")
    assert proc.returncode == 0 and re.fullmatch(
        r"perfvar \d+\.\d+\.\d+\n", proc.stdout
    )


def test_console_script_is_installed():
    exe = shutil.which("perfvar")
    if exe is None:
        pytest.skip("perfvar console script not on PATH (package not pip-installed)")
    import subprocess

    proc = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("perfvar ")


def _probes(factor: dict[int, float]):
    """Fixed-work probes after every 4th segment of each rank, 1000 ticks with 0.5 %
    noise, ``factor[rank]`` times as long on that rank."""
    from conftest import Probes

    rng = np.random.default_rng(5)
    noise = rng.normal(1.0, 0.005, (8, 1000))

    def ticks(rank, i):
        if i % 4 != 3:
            return None
        return int(round(1000 * factor.get(rank, 1.0) * noise[rank, i]))

    return Probes(ticks)


def test_more_work_with_its_probes_at_its_peers_speed_is_load_imbalance(
    trace_factory,
):
    # Rank 1 runs class A 50 % slower; its probes run as fast as its peers': more
    # work, the code's finding, apart from the machine's, in text, JSON and HTML.
    durations = normal_durations(seed=1, slow={1: 272_300.0})
    path = trace_factory("imbalance", durations, probes=_probes({}))
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Anomalies (the machine: cores and CPUs)\n(none)" in out
    assert re.search(
        r"^Load imbalance \(the code: more work on a rank, not a slower core\)\n"
        r"- rank 1 \(host node0, cpu 1\) does more work in segment S\d \[.*\]: "
        r"median 812\.\d us vs peers 540\.\d us, \+27\d\.\d us per segment "
        r"\(\+50\.\d%; .*\); more work, not a slower core: its fixed-work probes ran "
        r"(at its peers' speed|no slower than its peers') \([-+]\d\.\d+%, 95% CI .*, "
        r"\d+ probes vs \d+\) in the same window \(load imbalance\)",
        out,
        re.M,
    ), out
    assert "verdict: no anomalous rank found (" in out
    assert "load imbalance: rank 1 (host node0, cpu 1: more work in S" in out
    doc = json.load(open(os.path.join(path, "analysis.json")))
    (a,) = doc["anomalies"]
    assert a["kind"] == "load_imbalance" and a["evidence"]["as"] == "slow_segment"
    assert a["evidence"]["core_speed"]["verdict"] == "more work"
    assert doc["summary"]["imbalance_ranks"] == [1]
    assert doc["summary"]["anomalous_ranks"] == []
    assert doc["kinds"]["load_imbalance"]["owner"] == "code"
    page = open(os.path.join(path, "report.html"), encoding="utf-8").read()
    assert 'id="the-code"' in page and 'data-kind="load_imbalance"' in page


def test_a_core_whose_probes_ran_slower_is_named_with_their_figure(trace_factory):
    # Rank 1 runs both classes and its probes at half speed: a slower core, measured.
    durations = normal_durations(seed=1)
    durations[1] = {k: v * 2.0 for k, v in durations[1].items()}
    path = trace_factory("core", durations, probes=_probes({1: 2.0}))
    proc = run_cli("analyze", path)
    assert proc.returncode == 0, proc.stderr
    doc = json.load(open(os.path.join(path, "analysis.json")))
    assert [(a["kind"], a["rank"]) for a in doc["anomalies"]] == [("slow_core", 1)]
    told = doc["anomalies"][0]["evidence"]["core_speed"]
    assert told["verdict"] == "slower core" and told["decided_by"] == "fixed-work probes"
    assert told["probes_shift_rel"] == pytest.approx(1.0, abs=0.02)
    assert re.search(
        r"a slower core: its fixed-work probes ran \+\d+\.\d%, 95% CI \+\d+\.\d%\.\."
        r"\+\d+\.\d%, \d+ probes vs \d+ over its peers' in the same window",
        proc.stdout,
    ), proc.stdout
    assert doc["summary"]["anomalous_ranks"] == [1]
