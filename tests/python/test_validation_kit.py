"""The validation kit's scoring and class selection on inputs the test controls:
minor findings are not verdicts, an injected "any" is hit by any verdict naming its
rank, a wrong slower core named on a CPU the host witness measured slower is listed
as such and so is a wrong noisy core on a CPU the kernel counted busier with other
tasks and a wrong slower core the program's own timer measured slower, PERFVAR_INJECT's
site patterns select classes as the C side matches them (both sides of a class the
analysis split by duration), and a program is run as the user built it."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import numpy.lib.recfunctions  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "tools"))
sys.path.insert(0, str(ROOT / "tools"))
from validation import host, programs  # noqa: E402
from validation.classes import (  # noqa: E402
    Pattern,
    apart_text,
    JUDGEABLE,
    judged_span,
    largest_class,
    median_ratio,
    selected,
    split_ns,
)
from verdicts import SLOWER, Injected, OwnTimer, score  # noqa: E402
from perfvar.read.segments import segment_key  # noqa: E402
from perfvar.result import Analysis  # noqa: E402

K1 = segment_key("MPI_Waitall@/x/app+0x10", "MPI_Allreduce@/x/app+0x20")
K2 = segment_key("MPI_Allreduce@/x/app+0x20", "MPI_Waitall@/x/app+0x10")


def analysis(*anomalies: dict, minor: tuple = ()) -> Analysis:
    return Analysis.from_json({"segments": [{"id": "s0", "key": K1}, {"id": "s1", "key": K2}],
                               "anomalies": list(anomalies), "minor": list(minor)})


def test_minor_findings_are_not_verdicts() -> None:
    an = analysis(minor=[{"kind": "slow_segment", "rank": 0, "segment": "s0"}])
    s = score([], an)
    assert not s.named and not s.wrong and not s.info
    s = score([Injected("slow_segment", 0, K1)], an, with_minor=True)
    assert s.hits == {0} and s.named == ["slow_segment r0 s0"]


def test_any_is_hit_by_any_verdict_of_the_rank() -> None:
    an = analysis({"kind": "slow_core", "rank": 1})
    assert score([Injected("any", 1)], an).hits == {0}
    s = score([Injected("any", 0)], an)
    assert not s.hits and s.wrong


def test_wrong_slower_core_on_a_slower_cpu_is_listed() -> None:
    an = analysis({"kind": "slow_segment", "rank": 1, "segment": "s0"},
                  {"kind": "slow_core", "rank": 1})
    s = score([], an, slower_cpu_ranks={1})
    assert s.wrong and s.slower_cpu == ["slow_segment r1 s0", "slow_core r1"]
    # the other rank's CPU was the slower one: not listed
    s = score([], an, slower_cpu_ranks={0})
    assert s.wrong and not s.slower_cpu
    # a noisy core is not a slower core
    s = score([], analysis({"kind": "noisy_core", "rank": 1}), slower_cpu_ranks={1})
    assert s.wrong and not s.slower_cpu
    # an injected anomaly hits as before; only the name it does not explain is listed
    s = score([Injected("slow_core", 1)], an, slower_cpu_ranks={1})
    assert s.hits == {0} and s.slower_cpu == ["slow_segment r1 s0"]


def test_wrong_noisy_core_on_a_busier_cpu_is_listed() -> None:
    an = analysis({"kind": "noisy_core", "rank": 0})
    s = score([], an, busier_cpu_ranks={0})
    assert s.wrong and s.busier_cpu == ["noisy_core r0"] and s.host_explained
    # the other rank's CPU was the busier one, or the rank's CPU only slower: not listed
    for kw in ({"busier_cpu_ranks": {1}}, {"slower_cpu_ranks": {0}}):
        s = score([], an, **kw)
        assert s.wrong and not s.busier_cpu and not s.host_explained
    # a slower core is not a busier CPU's name
    s = score([], analysis({"kind": "slow_core", "rank": 0}), busier_cpu_ranks={0})
    assert s.wrong and not s.busier_cpu
    # the host explains a trial only when it explains every wrong name
    two = analysis({"kind": "noisy_core", "rank": 0}, {"kind": "slow_core", "rank": 1})
    assert not score([], two, busier_cpu_ranks={0}).host_explained
    assert score([], two, busier_cpu_ranks={0}, slower_cpu_ranks={1}).host_explained
    # nothing wrong: nothing to explain
    assert not score([], analysis()).host_explained


def test_a_wrong_slower_core_the_programs_timer_measured_is_confirmed() -> None:
    def slow(kind: str, shift: float, **kw) -> dict:
        return dict(kind=kind, rank=0, evidence={"shift_rel": shift}, **kw)

    timer = OwnTimer({0: 0.30, 1: -0.23}, [K1])
    an = analysis(slow("slow_segment", 0.45, segment="s0"), slow("slow_core", 0.40))
    s = score([], an, own_timer=timer)
    assert s.own_timer == ["slow_segment r0 s0", "slow_core r0"] and s.timer_confirmed
    # the timer saw less than half of the shift, or the other rank slower: not confirmed
    for slower in ({0: 0.10, 1: -0.09}, {0: -0.20, 1: 0.25}):
        s = score([], an, own_timer=OwnTimer(slower, [K1]))
        assert s.wrong and not s.own_timer and not s.timer_confirmed
    # a class the program does not time, or a noisy core: not the timer's to confirm
    for an in (analysis(slow("slow_segment", 0.45, segment="s1")),
               analysis(slow("noisy_core", 0.45))):
        s = score([], an, own_timer=timer)
        assert s.wrong and not s.own_timer
    # a slow core's shift is weighted by compute time, its median segment's is not
    core = slow("slow_core", 0.40)
    core["evidence"]["segment_shift_rel"] = 0.90
    assert score([], analysis(core), own_timer=timer).timer_confirmed
    # every wrong name must be confirmed
    two = analysis(slow("slow_core", 0.40), slow("slow_segment", 0.45, segment="s1"))
    assert not score([], two, own_timer=timer).timer_confirmed
    assert not score([], two).own_timer


def test_the_stencils_own_timer_per_rank() -> None:
    out = ("stencil: grid 64x64x48 per rank\n"
           "stencil[timing] rank 1: compute/step mean 2.0000 ms, min 1.5 ms, max 7.6 ms\n"
           "stencil[timing] rank 0: compute/step mean 2.6000 ms, min 1.8 ms, max 9.9 ms\n")
    slower = programs.STENCIL_CLOCK.slower(out)
    assert slower == {"0": 2.6 / 2.0 - 1, "1": 2.0 / 2.6 - 1}
    assert programs.STENCIL_CLOCK.slower(out.split("\n", 2)[2]) is None  # one rank only
    key = segment_key("MPI_Waitall@/x/stencil+0x10", "MPI_Allreduce@/x/stencil+0x20")
    assert selected([key, K2.replace("app", "stencil")], programs.STENCIL_CLOCK.timed) == [key]


def test_comds_own_timer_gives_both_ranks_on_one_line() -> None:
    # CoMD's printPerformanceResults format: "%-16s%6d:%10.4f  %6d:%10.4f  %10.4f  %10.4f"
    row = "{:<16}{:6d}:{:10.4f}  {:6d}:{:10.4f}  {:10.4f}  {:10.4f}\n"
    out = ("Timings for Rank 0\n"
           "  force                  150       0.0300        4.5000       88.00\n"
           "Timing Statistics Across 2 Ranks:\n"
           + row.format("loop", 0, 5.0, 1, 5.1, 5.05, 0.05)
           + row.format("  force", 1, 4.0, 0, 5.0, 4.5, 0.5))
    assert programs.COMD_CLOCK.slower(out) == {"0": 5.0 / 4.0 - 1, "1": 4.0 / 5.0 - 1}
    assert programs.COMD_CLOCK.slower(out.replace("force   ", "velocity")) is None


def rank_json(directory: Path, rank: int, cpus: list[int], self_ns: int,
              busy_ns: dict[int, int]) -> None:
    """A rank-N.json whose neighbours record says the CPUs of ``busy_ns`` were busy that
    long (user 3/4, system 1/4) over a 10 s span, the rank's own process ``self_ns``."""
    rows = [{"cpu": c, "user_ns": b * 3 // 4, "nice_ns": 0, "system_ns": b - b * 3 // 4,
             "idle_ns": 0, "iowait_ns": 0, "irq_ns": 0, "softirq_ns": 0, "steal_ns": 0}
            for c, b in busy_ns.items()]
    record = {"span_ns": 10_000_000_000, "tick_ns": 10_000_000, "self_ns": self_ns,
              "cpus": rows, "tasks": []}
    (directory / "perfvar").mkdir(exist_ok=True)
    (directory / "perfvar" / f"rank-{rank}.json").write_text(
        json.dumps({"rank": rank, "cpus": cpus, "neighbours": record}))


def test_others_share_is_the_cpu_busy_beyond_the_rank(tmp_path: Path) -> None:
    rank_json(tmp_path, 0, [1], 9_000_000_000, {1: 9_300_000_000})
    rank_json(tmp_path, 1, [0], 9_500_000_000, {0: 9_550_000_000})
    share, tick = host.others_share(tmp_path, [0, 1])
    assert share == {0: 0.03, 1: 0.005} and tick == 0.001  # a 10 ms tick of a 10 s run
    assert host.busier(share, tick) == {0}
    assert host.busier({0: 0.03, 1: 0.025}, tick) == set()  # within 1 % of the run
    assert host.busier({0: 0.03}, tick) == set()  # nobody to compare with
    # a short run: 2.5 % is a few ticks, within what the two figures' ticks allow
    assert host.busier(share, 0.01) == set()
    # a rank on two CPUs: its own time cannot be told apart per CPU
    rank_json(tmp_path, 1, [0, 1], 9_500_000_000, {0: 9_550_000_000, 1: 9_300_000_000})
    assert host.others_share(tmp_path, [0, 1]) == ({0: 0.03}, 0.001)
    assert host.others_share(tmp_path / "none", [0, 1]) == ({}, 0.0)


def test_a_wrong_name_of_another_rank_is_counted_apart() -> None:
    injected = [Injected("slow_segment", 1, K1)]
    # the injected rank's core beside its class: wrong, but nobody else named
    s = score(injected, analysis({"kind": "slow_segment", "rank": 1, "segment": "s0"},
                                 {"kind": "slow_core", "rank": 1}))
    assert s.hits == {0} and s.wrong and not s.other_ranks
    # the other rank's core: somebody else
    s = score(injected, analysis({"kind": "slow_segment", "rank": 1, "segment": "s0"},
                                 {"kind": "noisy_core", "rank": 0}))
    assert s.hits == {0} and s.wrong and s.other_ranks == {0}
    # nothing injected: every name is of another rank
    assert score([], analysis({"kind": "slow_core", "rank": 1})).other_ranks == {1}


def test_speed_compares_each_cpu_with_the_fastest(tmp_path: Path) -> None:
    # a stand-in witness whose chain times (ns) depend on the CPU it was pinned to: the
    # lowest CPU allowed here runs at 100 ns, any other at 150
    cpus = [str(c) for c in sorted(os.sched_getaffinity(0))[:2]]
    fake = tmp_path / "fake_speed"
    fake.write_text("#!/bin/sh\n"
                    f"case $(taskset -pc $$ | sed 's/.*: //') in\n"
                    f"  {cpus[0]}) t=100 ;;\n"
                    "  *) t=150 ;;\n"
                    "esac\n"
                    "printf '1 %s\\n2 %s\\n3 %s\\n' $t $t $t\n"
                    f"touch {tmp_path}/printed.$t\n"
                    "exec sleep 60\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    expected = {"100": 1.0, "150": 1.5}
    times = ["100", "150"][:len(cpus)]
    with host.Speed(str(fake), cpus) as speed:
        deadline = time.monotonic() + 60
        while (not all((tmp_path / f"printed.{t}").exists() for t in times)
               and time.monotonic() < deadline):
            time.sleep(0.05)
    assert speed.chain_ns == {c: [int(t)] * 3 for c, t in zip(cpus, times)}
    assert speed.slowdown() == {c: expected[t] for c, t in zip(cpus, times)}
    with host.Speed(None, cpus) as none:
        pass
    assert none.slowdown() == {}


def test_pattern_selects_by_innermost_sites() -> None:
    p = Pattern("MPI_Allreduce@app+0x20", "MPI_Waitall@app+0x10")
    assert selected([K1, K2], p) == [K1]
    assert p.env() == ",to=MPI_Allreduce@app+0x20,from=MPI_Waitall@app+0x10"
    assert selected([K1, K2], Pattern("MPI_Waitall")) == [K2]
    assert selected([K1, K2], Pattern()) == [K1, K2]


def fake_trace(setup_ns: float = 0.0) -> SimpleNamespace:
    # class 0: 10 us on both ranks, 10 each; class 1: 30 us on rank 0 only, 10 of them;
    # rank 1 has its class 0 segments 1.5x long. With setup_ns, class 1 is instead one
    # segment of setup_ns on each rank (a program's set-up).
    n = JUDGEABLE
    seg = np.array([0] * 2 * n + [1] * n)
    rank = np.array([0] * n + [1] * n + [0] * n)
    dur = np.array([10e3] * n + [15e3] * n + [30e3] * n)
    if setup_ns:
        seg, rank = np.r_[seg[: 2 * n], 1, 1], np.r_[rank[: 2 * n], 0, 1]
        dur = np.r_[dur[: 2 * n], setup_ns, setup_ns]
    samples = np.zeros(seg.size, dtype=[("segment", "i4"), ("rank", "i4"),
                                        ("thread", "i4"), ("duration_ns", "f8")])
    samples["segment"], samples["rank"], samples["duration_ns"] = seg, rank, dur
    return SimpleNamespace(segments=[K1, K2], samples=samples)


def test_largest_class_is_largest_on_every_rank() -> None:
    key, p = largest_class(fake_trace(), (0, 1))
    assert key == K1  # class 1 is larger on rank 0, absent on rank 1
    assert p == Pattern("MPI_Allreduce@app+0x20", "MPI_Waitall@app+0x10")
    assert median_ratio(fake_trace(), p, 1) == 1.5


def test_a_phase_goes_where_the_judged_classes_ran() -> None:
    # The set-up (class 1) runs from 0 to 10 s, the steps (class 0) from 10 s on, one
    # every 100 ms: the judged part of the run is the steps', not the set-up's.
    trace = fake_trace(setup_ns=10e9)
    n = JUDGEABLE
    start = np.r_[10e9 + 1e8 * np.arange(n), 10e9 + 1e8 * np.arange(n), 0.0, 0.0]
    trace.samples = numpy.lib.recfunctions.append_fields(
        trace.samples, "start_ticks", start, usemask=False
    )
    trace.trace_ns = lambda ticks: np.asarray(ticks, dtype=float)
    first, last = judged_span(trace, (0, 1))
    assert first == 10e9 and last == 10e9 + 1e8 * (n - 1) + 15e3


def test_largest_class_is_one_the_verdict_can_judge() -> None:
    # A set-up of 10 s a rank in one segment holds the most time but is never judged:
    # +10 % there could never be found, so the kit injects into the class it can.
    assert largest_class(fake_trace(setup_ns=10e9), (0, 1))[0] == K1


def test_pattern_selects_both_sides_of_a_class_split_by_duration() -> None:
    p = Pattern(to="MPI_Allreduce@app+0x20", frm="MPI_Waitall@app+0x10")
    keys = [K1 + "#below:3000000", K1 + "#above:3000000", K2]
    assert selected(keys, p) == keys[:2]


def test_a_program_is_given_built_with_its_arguments_and_inputs(tmp_path: Path) -> None:
    # The kit runs what the user built: the binary's path, its arguments split as a shell
    # would, and each input copied into the run directory under the name asked.
    exe = tmp_path / "bin" / "app"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    deck = tmp_path / "deck.in"
    deck.write_text("steps 10\n")
    prog = programs.given("app", str(exe), "-n 2 --name 'a b'", [f"{deck}:app.in"])
    assert prog.binary == exe and prog.args == ["-n", "2", "--name", "a b"]
    prog.prepare(tmp_path / "run")
    assert (tmp_path / "run" / "app.in").read_text() == "steps 10\n"
    assert programs.given("app", str(exe), "", [str(deck)]).files == {"deck.in": deck}
    for missing in (lambda: programs.given("app", str(tmp_path / "none")),
                    lambda: programs.given("app", str(exe), "", [str(tmp_path / "no.in")])):
        try:
            missing()
        except FileNotFoundError:
            continue
        raise AssertionError("a missing binary or input must be refused")


def test_split_of_the_selected_class_and_the_ratio_of_its_longer_kind() -> None:
    # Per rank: two 0.2 ms segments for each 30 ms one of K1; rank 1's long ones 10 %
    # slower. K2 is another class and does not count.
    rows = []
    for rank, slow in ((0, 1.0), (1, 1.1)):
        for i in range(300):
            long_one = i % 3 == 2
            rows.append((0, rank, 3e7 * slow if long_one else 2e5))
            rows.append((1, rank, 5e6))
    s = np.array(rows, dtype=[("segment", "i4"), ("rank", "i4"), ("duration_ns", "f8")])
    s = np.lib.recfunctions.append_fields(s, "thread", np.zeros(len(s), "i4"), usemask=False)
    trace = SimpleNamespace(segments=[K1, K2], samples=s)
    p = Pattern(to="MPI_Allreduce@app+0x20", frm="MPI_Waitall@app+0x10")
    t = split_ns(trace, p)
    assert t is not None and 2e5 < t < 3e7
    assert median_ratio(trace, p, 1) == 1.0  # the whole class: the short kind's median
    assert abs(median_ratio(trace, p, 1, t) - 1.1) < 1e-9
    assert split_ns(trace, Pattern(to="MPI_Waitall@app+0x10")) is None  # K2: one kind


def test_ranks_apart_counts_either_rank_slower() -> None:
    # x0.95 is the other rank 5.3 % slower; x1.02 is 2 % apart, under 3 %.
    text = apart_text([0.95, 1.02, 1.12, 1.03])
    assert text.startswith("x0.950..x1.120;")
    assert ">= 3 % in 3 of 4" in text and ">= 10 % in 1 of 4" in text
    assert apart_text([]) == "no runs"


def test_the_class_ratio_with_the_programs_own_timer_taken_out() -> None:
    import validate  # tools/validate.py: the kit's driver

    # A CI trial of the stencil: +50 % in rank 0's Waitall -> Allreduce class read x1.055,
    # while its own timer had rank 0's compute 18.5 % under rank 1's.
    tr = validate.Trial("seg", 1, "stencil", 0, "0 1", suite="stencil", class_ratio=1.055,
                        own_slower={"0": -0.185, "1": 0.228})
    timer = validate.own_timer(tr, analysis())
    assert abs(validate.ratio_beside_own(tr, timer, [K1]) - 1.055 / 0.815) < 1e-9
    # a class the timer does not bracket, or a program without one: no figure
    assert validate.ratio_beside_own(tr, timer, [K2]) is None
    other = validate.Trial("seg", 1, "cloverleaf", 0, "0 1", suite="cloverleaf",
                           class_ratio=1.055, own_slower={"0": -0.185, "1": 0.228})
    assert validate.ratio_beside_own(other, validate.own_timer(other, analysis()), [K1]) is None
    lo, hi = validate.REAL_SHORT[0].ratio
    assert lo < 3.0 < hi and lo > 1.5  # a +50 % class (or none) stays below the gross bounds


def test_ranks_the_calibration_left_unjudged_are_listed_apart() -> None:
    import validate

    # A CloverLeaf trial whose start-up calibration failed on both ranks (2026-11-28).
    cells = {"no calibration": 66, "too few samples": 50}
    doc = {"ranks": [{"rank": 0, "judgements": cells}, {"rank": 1, "judgements": cells},
                     {"rank": 2, "judgements": {"ok": 30, "too few samples": 2}}]}
    assert validate.unjudged_ranks(Analysis.from_json(doc)) == [0, 1]
    tr = validate.Trial("seg10", 2, "cloverleaf", 0, "1 0", suite="cloverleaf",
                        unjudged=[0, 1])
    assert "(not judged, no calibration: r0, r1)" in validate.trial_line(tr)
    other = validate.Trial("seg10", 3, "cloverleaf", 1, "1 0", suite="cloverleaf")
    lines = validate.unjudged_lines([tr, other])
    assert lines[1:] == ["cloverleaf seg10: ranks not judged (their calibration failed, none to "
                         "borrow on their host) in trial(s) 2 (r0, r1)"]
    assert validate.unjudged_lines([other]) == []


def test_hits_on_an_even_host_and_a_slower_cpu_count_the_trials_the_witness_found_so() -> None:
    import validate

    def trial(n: int, hit: bool, speeds: dict | None) -> validate.Trial:
        return validate.Trial("clean", n, "cloverleaf", n % 2, "0 1", suite="cloverleaf",
                              hit=hit, cpu_slowdown=speeds)

    # CPUs within 5 % (even): a hit and a miss; 1.29x apart (slower): a miss; no witness:
    # left out of both.
    done = [trial(0, True, {"0": 1.0, "1": 1.02}), trial(1, False, {"0": 1.04, "1": 1.0}),
            trial(2, False, {"0": 1.0, "1": 1.29}), trial(3, True, None)]
    case = validate.suite_cases("cloverleaf", False, ["clean"])[0]
    head = validate.table([("cloverleaf", [case])], done, False)[0].split(" | ")
    cells = validate.case_cells("cloverleaf", case, done, False)
    assert cells[head.index("hits on an even host")] == "1 of 2"
    assert cells[head.index("hits on a slower CPU")] == "0 of 1"
    rest = validate.case_cells("cloverleaf", case, done[3:], False)
    assert rest[head.index("hits on an even host")] == rest[head.index("hits on a slower CPU")] == "-"


def test_the_analysis_runs_with_the_threshold_asked(tmp_path: Path, monkeypatch) -> None:
    """--min-cost reaches `perfvar analyze`, and without it perfvar's default stands."""
    import validate

    asked: list[list[str]] = []

    def run(cmd, **kwargs):
        asked.append(cmd)
        Path(cmd[cmd.index("--json") + 1]).write_text("{}")
        return SimpleNamespace(returncode=0, stderr="")

    monkeypatch.setattr(validate.subprocess, "run", run)
    st = validate.Setup(tmp_path, "openmpi", [], 1, tmp_path, {}, {}, min_cost_pct=0.15)
    validate.analyze(st, tmp_path)
    assert asked[-1][asked[-1].index("--min-cost") + 1] == "0.15"
    validate.analyze(validate.Setup(tmp_path, "openmpi", [], 1, tmp_path, {}, {}), tmp_path)
    assert "--min-cost" not in asked[-1]


def test_injected_work_is_hit_by_more_work_in_its_class_and_never_a_slower_core() -> None:
    injected = [Injected("load_imbalance", 1, K1)]
    more = {"kind": "load_imbalance", "rank": 1, "segment": "s0"}
    assert score(injected, analysis(more)).exact(1)
    # the same class named as a slower cell of the machine: a miss and a wrong name
    s = score(injected, analysis({"kind": "slow_segment", "rank": 1, "segment": "s0"}))
    assert not s.hits and s.wrong
    # more work injected in every class: a load imbalance of the rank in any class
    anywhere = [Injected("load_imbalance", 1)]
    assert score(anywhere, analysis(dict(more, segment="s1"))).exact(1)


def test_a_load_imbalance_nothing_injected_is_the_codes_not_a_wrong_name() -> None:
    s = score([], analysis({"kind": "load_imbalance", "rank": 0, "segment": "s1"}))
    assert not s.wrong and not s.named and s.code == ["load_imbalance r0 s1"]


def test_a_core_the_witness_measured_slower_is_hit_by_what_measured_it() -> None:
    slower = [Injected(SLOWER, 1)]
    probed = {"core_speed": {"verdict": "slower core"}}
    phase = {"kind": "slow_phase", "rank": 1, "segment": "s0", "start_ns": 0.0,
             "end_ns": 1e9}
    for an in ({"kind": "slow_core", "rank": 1},
               {"kind": "slow_segment", "rank": 1, "segment": "s0", "evidence": probed},
               phase | {"evidence": probed}):
        assert score(slower, analysis(an)).hits == {0}, an
    # a phase of the rank its probes did not measure slower names the rank, not its core
    for ev in ({}, {"core_speed": {"verdict": "more work"}}):
        s = score(slower, analysis(phase | {"evidence": ev}))
        assert not s.hits and not s.wrong and s.transients == ["slow_phase r1 s0 0-1000ms"]
    # a slower cell its probes did not measure slower, or the other rank: no hit
    untold = {"core_speed": {"verdict": "could not tell"}}
    for an in ({"kind": "slow_segment", "rank": 1, "segment": "s0", "evidence": untold},
               {"kind": "slow_core", "rank": 0}):
        s = score(slower, analysis(an))
        assert not s.hits and s.wrong, an


def test_injected_work_the_probes_could_not_tell_is_counted_apart() -> None:
    injected = [Injected("load_imbalance", 1, K1)]
    untold = {"core_speed": {"verdict": "could not tell"}}
    s = score(injected, analysis({"kind": "slow_segment", "rank": 1, "segment": "s0",
                                  "evidence": untold}))
    assert not s.hits and not s.wrong and s.untold == ["slow_segment r1 s0"]
    # said to be a slower core: a wrong name
    slower = {"core_speed": {"verdict": "slower core"}}
    s = score(injected, analysis({"kind": "slow_segment", "rank": 1, "segment": "s0",
                                  "evidence": slower}))
    assert s.wrong and not s.untold


def test_the_results_page_keeps_each_program_and_case_from_its_latest_run(tmp_path: Path) -> None:
    """--doc: each (program, case) from the latest run that had it, under that run's date,
    machine and command; a run whose cases were all run again later is left out; an older
    bare list of trials still loads (dated by its file)."""
    import validate
    from validation import runs

    def trial(case: str, n: int, hit: bool) -> dict:
        return vars(validate.Trial(case, n, "hpccg", n % 2, "0 1", suite="hpccg", hit=hit))

    old = tmp_path / "old.json"
    old.write_text(json.dumps([trial("clean", 0, False), trial("busy", 0, True)]))
    os.utime(old, (1_699_963_200, 1_699_963_200))  # 2023-11-14 12:00 UTC
    mid = tmp_path / "mid.json"
    runs.dump(mid, runs.RunInfo("2026-12-01T10:00:00", "cpu A, nproc 2", "tools/validate.py x"),
              [trial("clean", 0, True), trial("clean", 1, True)])
    new = tmp_path / "new.json"
    runs.dump(new, runs.RunInfo("2026-12-02T10:00:00", "cpu B, nproc 2", "tools/validate.py y"),
              [trial("busy", 0, False)])
    md = tmp_path / "validation.md"
    assert validate.write_doc(md, [new, old, mid]) == 0
    page = md.read_text()
    # Newest first: the busy case of the newest run, then the clean case of the middle one.
    assert page.index("## 2026-12-02T10:00:00") < page.index("## 2026-12-01T10:00:00")
    assert "cpu B, nproc 2" in page and "`tools/validate.py y`" in page
    rows = [line for line in page.splitlines() if line.startswith("| hpccg |")]
    assert [r.split(" | ")[1:5] for r in rows] == [["busy", "busy process on the rank's CPU",
                                                      "1", "0"], ["clean", "none", "2", "2"]]
    assert runs.NOT_RECORDED not in page  # every case of the old run was run again later
    info, records = runs.load(old)
    assert info.machine == runs.NOT_RECORDED and len(records) == 2
    assert info.date.startswith("2023-11-1")  # the 14th or 15th, by the time zone
    (tmp_path / "future.json").write_text(json.dumps({"format": 99, "run": {}, "trials": []}))
    with pytest.raises(ValueError):
        runs.load(tmp_path / "future.json")


def test_a_rejudged_run_is_dated_by_its_trials_and_keeps_their_machine(tmp_path: Path) -> None:
    import validate
    from validation import runs

    ran = runs.RunInfo("2026-12-01T10:00:00", "cpu A, nproc 2", "tools/validate.py x")
    again = runs.now("cpu B, nproc 8", False, (tmp_path / "a.json", ran))
    assert (again.trials_ran, again.machine) == ("2026-12-01T10:00:00", "cpu A, nproc 2")
    assert again.rejudged_from == str(tmp_path / "a.json") and again.date > again.trials_ran
    later = runs.RunInfo("2026-12-01T12:00:00", "cpu A, nproc 2", "tools/validate.py z")
    trial = vars(validate.Trial("clean", 0, "hpccg", 0, "0 1", suite="hpccg", hit=True))
    for path, info in (("again.json", again), ("later.json", later)):
        runs.dump(tmp_path / path, info, [trial])
    md = tmp_path / "v.md"
    validate.write_doc(md, [tmp_path / "again.json", tmp_path / "later.json"])
    # Judged again today, its trials ran before the later run's: the later run's row.
    assert "`tools/validate.py z`" in md.read_text()
    assert "judged again" not in md.read_text()
