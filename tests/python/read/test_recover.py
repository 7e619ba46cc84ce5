"""How a job that did not finish ended: which rank ended first, from ended-rank-N.json.

The files are the ones perfvar-recover writes (src/recover/recover.c); the end-to-end path
(a real job killed, its trace rebuilt and analysed) is tests/tools/kill_run.py (ctest mpi.kill.*).
"""

import json

import pytest

from perfvar.errors import TraceError
from perfvar.read.recover import endings_json, ensure_trace, has_records, read_endings
from perfvar.result import Analysis
from perfvar.report.text import _ended_clause, _ended_lines


def _write(tmp_path, rank, threads):
    meta = tmp_path / "perfvar"
    meta.mkdir(exist_ok=True)
    (meta / f"ended-rank-{rank}.json").write_text(
        json.dumps({"rank": rank, "recovered": True, "error": "", "threads": threads})
    )


def _thread(state, end_s, signal=0, silence_s=0.001, start_utc_ns=1e18, sent_by=""):
    return {
        "thread": 0,
        "state": state,
        "signal": signal,
        "sent_by": sent_by,
        "in_mpi_call": False,
        "end_s": end_s,
        "end_utc_ns": start_utc_ns + end_s * 1e9,
        "silence_s": silence_s,
        "calls": 100,
        "segments": 99,
        "lost_records": 0,
    }


def test_silent_kill_then_launcher_sigterm(tmp_path):
    # kill -9 on rank 1; the launcher sends SIGTERM to rank 0 a second later (Open MPI)
    _write(tmp_path, 0, [_thread("signal", 2.6, signal=15)])
    _write(tmp_path, 1, [_thread("running", 1.57)])
    ended = endings_json(read_endings(str(tmp_path)))
    assert ended["first_to_end"] == 1
    assert ended["ended_early_ranks"] == [0, 1]
    by_rank = {r["rank"]: r for r in ended["ranks"]}
    assert "without a word" in by_rank[1]["how"]
    assert by_rank[0]["how"] == "ended by SIGTERM"


def test_sigterm_then_launcher_sigkill_while_untraced(tmp_path):
    # SIGTERM on rank 0; the launcher kills rank 1 silently while it runs code between two
    # records: its last record is earlier than rank 0's signal, but within its own silences
    _write(tmp_path, 0, [_thread("signal", 1.6044, signal=15)])
    _write(tmp_path, 1, [_thread("running", 1.5999, silence_s=0.01)])
    assert endings_json(read_endings(str(tmp_path)))["first_to_end"] == 0


def test_a_signal_sent_from_outside_goes_before_a_silent_death(tmp_path):
    # SIGTERM from a user on rank 0; MPICH's launcher then kills rank 1 silently while
    # it computes a segment longer than any of its recent ones: by times alone rank 1
    # would pass for the first.
    _write(tmp_path, 0, [_thread("signal", 1.5308, signal=15, sent_by="other")])
    _write(tmp_path, 1, [_thread("running", 1.5297, silence_s=0.001)])
    ended = endings_json(read_endings(str(tmp_path)))
    assert ended["first_to_end"] == 0
    by_rank = {r["rank"]: r for r in ended["ranks"]}
    assert by_rank[0]["how"] == "ended by SIGTERM from another process"
    assert by_rank[0]["sent_by"] == "other"


@pytest.mark.parametrize("first_sent_by", ["other", "fault"])
def test_the_launchers_signals_are_consequences(tmp_path, first_sent_by):
    # Rank 1 faulted or was signalled from outside; the launcher then signalled rank 0,
    # whose record of it carries an earlier time (clocks of two ranks, or the launcher
    # was quick): rank 1 is still the first.
    _write(tmp_path, 0, [_thread("signal", 1.0, signal=15, sent_by="launcher")])
    _write(tmp_path, 1, [_thread("signal", 1.01, signal=11, sent_by=first_sent_by)])
    ended = endings_json(read_endings(str(tmp_path)))
    assert ended["first_to_end"] == 1
    assert {r["rank"]: r["how"] for r in ended["ranks"]}[0] == "ended by SIGTERM from its launcher"


def test_a_silent_death_goes_before_the_launchers_signal(tmp_path):
    # kill -9 on rank 1 while it computes a long segment; Open MPI's launcher signals
    # rank 0 before rank 1's last record plus its recent silences
    _write(tmp_path, 0, [_thread("signal", 1.0, signal=15, sent_by="launcher")])
    _write(tmp_path, 1, [_thread("running", 0.99, silence_s=0.05)])
    assert endings_json(read_endings(str(tmp_path)))["first_to_end"] == 1


def test_finished_job_has_no_first(tmp_path):
    for r in (0, 1):
        _write(tmp_path, r, [_thread("closed", 3.0)])
    ended = endings_json(read_endings(str(tmp_path)))
    assert ended["first_to_end"] is None and ended["ended_early_ranks"] == []
    result = Analysis.from_json({"ended": ended})
    assert _ended_clause(result) == ""
    assert _ended_lines(result) == []


def test_report_names_the_first(tmp_path):
    _write(tmp_path, 0, [_thread("signal", 2.0, signal=15)])
    _write(tmp_path, 1, [_thread("failed", 1.0)])
    result = Analysis.from_json({"ended": endings_json(read_endings(str(tmp_path)))})
    assert "rank 1 ended early (stopped recording" in _ended_clause(result)
    assert any("first to end" in line and "rank 1" in line for line in _ended_lines(result))


def test_unreadable_files_are_skipped(tmp_path):
    _write(tmp_path, 0, [_thread("signal", 2.0, signal=15)])
    (tmp_path / "perfvar" / "ended-rank-1.json").write_text("{not json")
    assert [e.rank for e in read_endings(str(tmp_path))] == [0]


def test_no_records_nothing_to_recover(tmp_path):
    assert not has_records(str(tmp_path))
    assert ensure_trace(str(tmp_path)) is False


def test_missing_tool_is_one_clear_error(tmp_path, monkeypatch):
    records = tmp_path / "perfvar" / "records"
    records.mkdir(parents=True)
    (records / "rank-0.defs").write_text("rank\t0\t1\n")
    monkeypatch.setattr("perfvar.read.recover.recover_tool", lambda: None)
    with pytest.raises(TraceError, match="perfvar-recover"):
        ensure_trace(str(tmp_path))


def test_recover_after_a_clean_finish_has_nothing_to_do(tmp_path, capsys):
    # A clean finish removes the records (PERFVAR_KEEP_RECORDS=1 keeps them): the
    # archive MPI_Finalize wrote is whole, and `perfvar recover` says so.
    from perfvar import cli

    meta = tmp_path / "perfvar"
    meta.mkdir()
    (tmp_path / "traces.otf2").write_text("")
    for rank in (0, 1):
        (meta / f"rank-{rank}.json").write_text(
            json.dumps({"rank": rank, "records_kept": False, "complete": True})
        )
    assert not has_records(str(tmp_path)) and ensure_trace(str(tmp_path)) is False
    assert cli.main(["recover", str(tmp_path)]) == 0
    assert "nothing to recover" in capsys.readouterr().out
    (meta / "rank-1.json").write_text(json.dumps({"rank": 1, "complete": False}))
    with pytest.raises(TraceError, match="no perfvar records"):
        cli._cmd_recover(cli.build_parser().parse_args(["recover", str(tmp_path)]))
