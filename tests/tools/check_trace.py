#!/usr/bin/env python3
"""Validate a perfvar trace directory the way a viewer would read it.

1. `otf2-print -Werror` (checks definitions, only partly);
2. a complete read with the Python `otf2` package, checking what otf2-print does not:
   per-location time order and time range (ClockProperties), Enter/Leave nesting with every
   region closed, MpiSend/MpiRecv matching (sender, receiver, tag, bytes), balanced collectives
   with the same number of MPI_COMM_WORLD collectives on every rank;
3. expectations given on the command line (ranks, threads per rank, call counts per rank and per
   thread in the trace and as counted by perfvar in rank-N.json, the MPI layer, segments per
   location), and per rank-N.json: no event lost, no untraced thread call, one "threads" entry per
   location of the rank;
4. fixed-work probes (region `perfvar:probe`, PERFVAR_PROBE): each sits between a segment's Leave
   and the next MPI region's Enter, outside any region but user timer regions, with a CPU known
   at its Enter and Leave (the `cpu` attribute on them or, as it is written where the CPU changed,
   on an Enter or Leave before them on the location); rank-N.json's "probe" agrees with the trace (null and none
   in the trace, or the same count per thread and the same total time). With --probe-period-ms P
   the schedule is checked from the timestamps: probes on a thread start at least P apart, no
   traced call skipped a due probe (its entry is before the previous probe's start + P), hence
   at least span / (P + longest gap between calls) - 1 probes on a thread whose traced calls span
   `span`. No duration is asserted.
5. counters (PERFVAR_METRICS): each location's first Metric event is all zeros (where counting
   started), every later one comes at a segment's end (right after its Leave, same time) with
   totals that never decrease; rank-N.json's "metrics" names the members of the rank's metric
   class and counts its reads. With --metrics NAMES|none (and --metrics-rank R=NAMES|none for a rank
   configured otherwise) the counters each rank recorded; --min-metric-reads / --max-metric-reads
   bound the reads per location.

A rank is a location group ("MPI Rank N"); its locations are its traced threads, thread k having
the location id (k << 32) | rank (docs/trace-format.md).

Prints one summary line; exits 1 with the reasons on any failure.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

import otf2

# K is capped in the C library; read the cap from its header rather than copy it.
PROBE_MAX_ADDS = int(re.search(
    r"#define PV_WORK_PROBE_MAX_ADDS (\d+)u",
    (Path(__file__).resolve().parents[2] / "src/calib/work_probe.h").read_text()).group(1))

def rank_of(location) -> int:
    return int(location.group.name.rsplit(" ", 1)[1])


def world_ranks(comm) -> list[int]:
    """MPI_COMM_WORLD ranks of a communicator's members, in its rank order (its group's members
    index the COMM_LOCATIONS group, whose k-th member is world rank k)."""
    return [m if isinstance(m, int) else rank_of(m) for m in comm.group.members]


def thread_of(location) -> int:
    return int(location._ref) >> 32


CPU_UNKNOWN = 0xFFFFFFFF  # the `cpu` value that says the CPU is not known
PROBE = "perfvar:probe"
SEGMENT = "perfvar:segment:"


def counts(spec: str) -> list[tuple[str, int]]:
    return [(k, int(v)) for k, v in (item.split("=") for item in filter(None, spec.split(",")))]


def check_probe_meta(r: int, meta, threads: list[int], probes, probe_ticks, period_ms,
                     resolution: float, t_min_adds: int) -> list[str]:
    """rank-N.json's "probe" against the probes of rank r's threads in the trace, and its K
    against the calibration's flush-0 t_min (t_min_adds, 0: none found)."""
    in_trace = sum(probes[(r, k)] for k in threads)
    if meta is None:
        return [f"rank {r}: {in_trace} probes in the trace, rank-{r}.json says probes are off"] \
            if in_trace else []
    errors = []
    if period_ms is not None and meta.get("period_ms") != period_ms:
        errors.append(f"rank {r}: probe period_ms {meta.get('period_ms')}, expected {period_ms}")
    k, source = meta.get("adds"), meta.get("k_source")
    capped = min(t_min_adds, PROBE_MAX_ADDS) if t_min_adds else 0
    if not (source == "calibration t_min" and t_min_adds and k == capped
            or source == "default" and not t_min_adds and isinstance(k, int) and k > 0):
        errors.append(f"rank {r}: probe K {k} ADDs from {source!r}, the calibration's t_min is "
                      f"{t_min_adds} ADDs")
    if meta.get("count") != in_trace:
        errors.append(f"rank {r}: rank-{r}.json counts {meta.get('count')} probes, the trace has "
                      f"{in_trace}")
    per_thread = {x.get("thread"): x.get("count") for x in meta.get("threads", [])}
    if per_thread != {k: probes[(r, k)] for k in threads}:
        errors.append(f"rank {r}: probes per thread {per_thread} in rank-{r}.json, the trace has "
                      f"{ {k: probes[(r, k)] for k in threads} }")
    if resolution:
        # The same clock differences, converted with the rank's own rate and the trace's.
        ns = sum(probe_ticks[(r, k)] for k in threads) * 1e9 / resolution
        if abs(ns - meta.get("total_ns", -1)) > 0.01 * ns + 1000:
            errors.append(f"rank {r}: probes total {meta.get('total_ns')} ns in rank-{r}.json, "
                          f"{ns:.1f} ns in the trace")
    return errors


def check_metric(ev, prev, where: str, last: dict, loc) -> list[str]:
    """A Metric event: zeros first on its location, then at a segment's end, never decreasing."""
    values = list(ev.values)
    before = last.get(loc)
    if before is None:
        return [] if not any(values) else [f"{where}: first counters at {ev.time} are not 0: {values}"]
    errors = []
    if any(v < b for v, b in zip(values, before)):
        errors.append(f"{where}: counters went back at {ev.time}: {before} -> {values}")
    if not (isinstance(prev, otf2.events.Leave) and prev.time == ev.time
            and prev.region.canonical_name.startswith(SEGMENT)):
        errors.append(f"{where}: counters at {ev.time} not at a segment's end")
    return errors


def check_metrics_meta(args, nranks: int, locs: dict, names: dict, reads) -> list[str]:
    """rank-N.json "metrics" against the trace, and the counters the command line expects."""
    want = {r: args.metrics for r in range(nranks)}
    for item in args.metrics_rank:
        r, _, spec = item.partition("=")
        want[int(r)] = spec
    errors = []
    for r in range(nranks):
        meta = args.trace_dir / "perfvar" / f"rank-{r}.json"
        doc = json.loads(meta.read_text()) if meta.exists() else {}
        said = (doc.get("metrics") or {}).get("events") or []
        seen = sorted(names.get(r, ()))
        if seen and [list(x) for x in seen] != [said]:
            errors.append(f"rank {r}: counters {seen} in the trace, rank-{r}.json says {said}")
        total = sum(reads[(r, k)] for k in locs.get(r, ()))
        # A rebuilt trace's rank-N.json is the one the start wrote: no reads counted yet.
        if doc.get("metrics") and doc.get("complete") and doc["metrics"].get("reads") != total:
            errors.append(f"rank {r}: {total} counter reads in the trace, rank-{r}.json says "
                          f"{doc['metrics'].get('reads')}")
        if want[r] is not None:
            expect = [] if want[r] == "none" else want[r].split(",")
            # The default set counts in the kernel too where it may (":k=1"), else without.
            if [n.removesuffix(":k=1") for n in said] != expect:
                errors.append(f"rank {r}: counters {said}, expected {expect}")
        for k in locs.get(r, ()):
            n = reads[(r, k)]
            if n < args.min_metric_reads or (args.max_metric_reads is not None
                                             and n > args.max_metric_reads):
                errors.append(f"rank {r} thread {k}: {n} counter reads, expected "
                              f"{args.min_metric_reads}..{args.max_metric_reads}")
    return errors


def check_records(trace_dir: Path, nranks: int, expect: str | None) -> list[str]:
    """The raw records against what rank-N.json says of them ("records_kept") and, when given,
    against expect: removed, none of them (nor their directory) is left; kept, every rank's
    definitions and first thread's records are there."""
    errors: list[str] = []
    records = trace_dir / "perfvar" / "records"
    for r in range(nranks):
        meta = trace_dir / "perfvar" / f"rank-{r}.json"
        doc = json.loads(meta.read_text()) if meta.exists() else {}
        left = [p.name for p in (records.glob(f"rank-{r}.*") if records.is_dir() else [])]
        kept = doc.get("records_kept")
        if kept is False and left:
            errors.append(f"rank {r}: rank-{r}.json says its records were removed, {left} are left")
        if expect == "removed" and (left or kept is not False):
            errors.append(f"rank {r}: records expected removed, rank-{r}.json records_kept {kept}, "
                          f"left {left}")
        want = {f"rank-{r}.defs", f"rank-{r}.thread-0.pvr"}
        if expect == "kept" and (not want <= set(left) or kept is not True):
            errors.append(f"rank {r}: records expected kept, rank-{r}.json records_kept {kept}, "
                          f"found {left}")
    if expect == "removed" and records.exists():
        errors.append(f"{records} is left after a clean finish")
    return errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace_dir", type=Path)
    ap.add_argument("--ranks", type=int, help="expected number of ranks")
    ap.add_argument("--threads", type=int, default=1, help="expected locations per rank")
    ap.add_argument("--calls", default="", help="NAME=COUNT,... expected Enter count per rank "
                    "(all its threads)")
    ap.add_argument("--thread-calls", default="", help="NAME=COUNT,... expected Enter count on "
                    "every thread but the master thread")
    ap.add_argument("--counted", default="",
                    help="NAME=COUNT,... calls perfvar counted per rank (rank-N.json, traced or not)")
    ap.add_argument("--layer", help="the perfvar MPI layer expected (openmpi, mpich)")
    ap.add_argument("--min-comms", type=int, default=0,
                    help="communicators with message or collective records, at least")
    ap.add_argument("--min-segments", type=int, default=1, help="per location")
    ap.add_argument("--messages", action="store_true", help="require >= 1 matched message")
    ap.add_argument("--cut", action="store_true",
                    help="the job was killed: a message or collective in flight at the kill may "
                         "lack its other side")
    ap.add_argument("--min-flushes", type=int, default=0, help="buffer-full flushes per rank")
    ap.add_argument("--probe-period-ms", type=int,
                    help="PERFVAR_PROBE period: check the probes' schedule (see above)")
    ap.add_argument("--min-probes", type=int, default=0, help="probes per rank, at least")
    ap.add_argument("--probe-k-source", choices=("calibration t_min", "default"),
                    help="where every rank's probe length K must come from")
    ap.add_argument("--metrics", help="the counters every rank records, comma list, or none")
    ap.add_argument("--metrics-rank", action="append", default=[],
                    help="R=NAMES|none: rank R's counters, where they differ from --metrics")
    ap.add_argument("--min-metric-reads", type=int, default=0, help="per location")
    ap.add_argument("--max-metric-reads", type=int, help="per location")
    ap.add_argument("--records", choices=("removed", "kept"),
                    help="the raw records (DIR/perfvar/records) after the run: removed (a clean "
                         "finish) or kept (PERFVAR_KEEP_RECORDS=1, or a rank died)")
    args = ap.parse_args()
    archive = args.trace_dir / "traces.otf2"
    errors: list[str] = []

    p = subprocess.run(["otf2-print", "-Werror", str(archive)], capture_output=True, text=True)
    if p.returncode != 0:
        errors.append(f"otf2-print -Werror failed: {p.stderr.strip()[:500]}")

    sends: collections.Counter = collections.Counter()
    recvs: collections.Counter = collections.Counter()
    colls: collections.Counter = collections.Counter()  # (communicator, world rank) -> count
    comm_members: dict[str, list[int]] = {}
    comms_used: set[str] = set()
    # (rank, kind, request id) -> started - completed: every request completes exactly once
    requests: collections.Counter = collections.Counter()
    # per location, keyed (rank, thread)
    calls: dict[tuple[int, int], collections.Counter] = collections.defaultdict(collections.Counter)
    segments: collections.Counter = collections.Counter()
    last_t: dict[tuple[int, int], int] = {}
    stacks: dict[tuple[int, int], list] = collections.defaultdict(list)
    open_colls: collections.Counter = collections.Counter()
    locs: dict[int, set] = collections.defaultdict(set)  # rank -> its threads
    nevents = 0
    # probes per location: count, ticks, and what the schedule check needs
    probes: collections.Counter = collections.Counter()
    probe_ticks: collections.Counter = collections.Counter()
    prev_ev: dict[tuple[int, int], object] = {}  # the location's previous event
    cpu_now: dict[tuple[int, int], int] = {}  # the location's last `cpu` attribute
    after_probe: dict[tuple[int, int], int] = {}  # a probe's Leave time, until the next event
    probe_start: dict[tuple[int, int], int] = {}  # the open or last probe's Enter time
    call_entries: dict[tuple[int, int], list[int]] = collections.defaultdict(list)
    metric_names: dict[int, set] = collections.defaultdict(set)  # rank -> its classes' members
    metric_last: dict[tuple[int, int], list[int]] = {}  # the location's last totals
    metric_reads: collections.Counter = collections.Counter()
    period = None
    resolution = 0.0
    try:
        with otf2.reader.open(str(archive)) as trace:
            cp = trace.definitions.clock_properties
            resolution = cp.timer_resolution
            lo, hi = cp.global_offset, cp.global_offset + cp.trace_length
            if args.probe_period_ms:
                period = args.probe_period_ms * cp.timer_resolution / 1e3  # ticks
                slack = period * 1e-3 + 2  # the rank's own tick rate and the readers' rounding
            for location in trace.definitions.locations:
                locs[rank_of(location)].add(thread_of(location))
            for location, ev in trace.events:
                nevents += 1
                r = rank_of(location)
                loc = (r, thread_of(location))
                t = ev.time
                if t < last_t.get(loc, 0):
                    errors.append(f"rank {r} thread {loc[1]}: time goes back at {t}")
                last_t[loc] = t
                if not lo <= t <= hi:
                    errors.append(f"rank {r}: time {t} outside [{lo}, {hi}]")
                prev = prev_ev.get(loc)
                where = f"rank {r} thread {loc[1]}"
                if isinstance(ev, otf2.events.Metric):  # not an event the others are placed by
                    errors += check_metric(ev, prev, where, metric_last, loc)
                    metric_names[r].add(tuple(m.name for m in ev.metric.members))
                    metric_reads[loc] += loc in metric_last  # the first is the zeros
                    metric_last[loc] = list(ev.values)
                    continue
                prev_ev[loc] = ev
                if isinstance(ev, (otf2.events.Enter, otf2.events.Leave)):
                    for attr, value in (ev.attributes or {}).items():
                        if attr.name == "cpu":  # written where it changed, carried forward
                            cpu_now[loc] = value
                if loc in after_probe:  # the event right after a probe: its MPI call's Enter
                    left = after_probe.pop(loc)
                    if not (isinstance(ev, otf2.events.Enter)
                            and ev.region.paradigm == otf2.Paradigm.MPI and t >= left):
                        errors.append(f"{where}: a probe is followed by {type(ev).__name__} "
                                      f"{getattr(ev, 'region', None)}, not an MPI region's Enter")
                if isinstance(ev, otf2.events.Enter):
                    canonical = ev.region.canonical_name
                    if canonical == PROBE:
                        outer = [x.name for x in stacks[loc]
                                 if not x.canonical_name.startswith("perfvar:user:")]
                        if outer:
                            errors.append(f"{where}: probe inside {outer}")
                        if not (isinstance(prev, otf2.events.Leave)
                                and prev.region.canonical_name.startswith(SEGMENT)):
                            errors.append(f"{where}: probe at {t} not right after a segment's Leave")
                        if cpu_now.get(loc, CPU_UNKNOWN) == CPU_UNKNOWN:
                            errors.append(f"{where}: probe Enter with no CPU known")
                        if period is not None and isinstance(prev, otf2.events.Leave):
                            # prev.time is the entry read that found the probe due
                            last = probe_start.get(loc)
                            if last is not None and prev.time < last + period - slack:
                                errors.append(f"{where}: probe at {t} only "
                                              f"{(t - last) / period:.4f} periods after the last")
                            call_entries[loc].append(prev.time)
                        probe_start[loc] = t
                    elif (period is not None and ev.region.paradigm == otf2.Paradigm.MPI
                          and isinstance(prev, otf2.events.Leave)
                          and prev.region.canonical_name.startswith(SEGMENT)):
                        # a traced call that ran no probe: none was due at its entry read (t)
                        last = probe_start.get(loc)
                        if last is not None and t >= last + period + slack:
                            errors.append(f"{where}: no probe at the call {ev.region.name} at {t}, "
                                          f"{(t - last) / period:.4f} periods after the last")
                        call_entries[loc].append(t)
                    stacks[loc].append(ev.region)
                    if canonical.startswith(SEGMENT):
                        segments[loc] += 1
                    elif canonical == PROBE:
                        probes[loc] += 1
                    else:
                        calls[loc][ev.region.name] += 1
                elif isinstance(ev, otf2.events.Leave):
                    if not stacks[loc] or stacks[loc][-1] != ev.region:
                        errors.append(f"{where}: Leave {ev.region.name} does not "
                                      "match the open region")
                    else:
                        stacks[loc].pop()
                    if ev.region.canonical_name == PROBE:
                        if cpu_now.get(loc, CPU_UNKNOWN) == CPU_UNKNOWN:
                            errors.append(f"{where}: probe Leave with no CPU known")
                        if loc in probe_start:
                            probe_ticks[loc] += t - probe_start[loc]
                        after_probe[loc] = t
                elif isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiIsend)):
                    peer = world_ranks(ev.communicator)[ev.receiver]
                    comms_used.add(ev.communicator.name)
                    sends[(r, peer, ev.msg_tag, ev.msg_length)] += 1
                    if isinstance(ev, otf2.events.MpiIsend):
                        requests[(r, "isend", ev.request_id)] += 1
                elif isinstance(ev, otf2.events.MpiIsendComplete):
                    requests[(r, "isend", ev.request_id)] -= 1
                elif isinstance(ev, otf2.events.MpiIrecvRequest):
                    requests[(r, "irecv", ev.request_id)] += 1
                elif isinstance(ev, (otf2.events.MpiRecv, otf2.events.MpiIrecv)):
                    peer = world_ranks(ev.communicator)[ev.sender]
                    recvs[(peer, r, ev.msg_tag, ev.msg_length)] += 1
                    if isinstance(ev, otf2.events.MpiIrecv):
                        requests[(r, "irecv", ev.request_id)] -= 1
                elif isinstance(ev, otf2.events.NonBlockingCollectiveRequest):
                    requests[(r, "icoll", ev.request_id)] += 1
                elif isinstance(ev, otf2.events.NonBlockingCollectiveComplete):
                    requests[(r, "icoll", ev.request_id)] -= 1
                    members = world_ranks(ev.communicator)
                    comm_members[ev.communicator.name] = members
                    colls[(ev.communicator.name, r)] += 1
                    comms_used.add(ev.communicator.name)
                elif isinstance(ev, otf2.events.MpiCollectiveBegin):
                    open_colls[loc] += 1
                elif isinstance(ev, otf2.events.MpiCollectiveEnd):
                    open_colls[loc] -= 1
                    members = world_ranks(ev.communicator)
                    if r not in members:
                        errors.append(f"rank {r}: collective on {ev.communicator.name}, "
                                      f"which it is not a member of")
                    comm_members[ev.communicator.name] = members
                    colls[(ev.communicator.name, r)] += 1
                    comms_used.add(ev.communicator.name)
    except Exception as exc:  # the reader's own failure is the finding
        errors.append(f"python otf2 reader failed: {type(exc).__name__}: {exc}")
        for r, k in last_t:
            locs[r].add(k)
    nranks = len(locs)

    for (r, k) in after_probe:
        errors.append(f"rank {r} thread {k}: the last event is a probe's Leave")
    if period is not None:
        for (r, k), entries in call_entries.items():
            # Consecutive probes are at most P + one gap between calls apart, whatever the load.
            if len(entries) < 2:
                continue
            span = entries[-1] - entries[0]
            gap = max(b - a for a, b in zip(entries, entries[1:]))
            least = int(span // (period + gap + slack)) - 1
            if probes[(r, k)] < least:
                errors.append(f"rank {r} thread {k}: {probes[(r, k)]} probes, expected >= {least} "
                              f"(calls span {span / period:.1f} periods, longest gap "
                              f"{gap / period:.2f})")
    for (r, k), st in stacks.items():
        if st:
            errors.append(f"rank {r} thread {k}: regions left open: {[x.name for x in st]}")
    for (r, k), n in open_colls.items():
        if n:
            errors.append(f"rank {r} thread {k}: {n} collective begin(s) without end")
    if sends != recvs and not args.cut:
        diff = (sends - recvs) + (recvs - sends)
        errors.append(f"unmatched messages: {dict(list(diff.items())[:5])}")
    # A request may stay incomplete (MPI_Request_free, an unmatched MPI_ANY_SOURCE in Waitsome), but
    # never complete twice or without having been started.
    unpaired = {k: v for k, v in requests.items() if v < 0}
    if unpaired:
        errors.append(f"non-blocking requests completed without a start or twice: "
                      f"{dict(list(unpaired.items())[:5])}")
    for name, members in comm_members.items():
        per_member = {m: colls[(name, m)] for m in members}
        if len(set(per_member.values())) > 1 and not args.cut:
            errors.append(f"the members of {name} disagree on its number of collectives: "
                          f"{per_member}")
    if args.ranks is not None and nranks != args.ranks:
        errors.append(f"{nranks} ranks, expected {args.ranks}")
    for r in range(nranks):
        threads = sorted(locs.get(r, ()))
        if threads != list(range(args.threads)):
            errors.append(f"rank {r}: threads {threads}, expected 0..{args.threads - 1}")
        for name, count in counts(args.calls):
            n = sum(calls[(r, k)][name] for k in threads)
            if n != count:
                errors.append(f"rank {r}: {n} x {name}, expected {count}")
        for name, count in counts(args.thread_calls):
            for k in threads[1:]:
                if calls[(r, k)][name] != count:
                    errors.append(f"rank {r} thread {k}: {calls[(r, k)][name]} x {name}, "
                                  f"expected {count}")
        for k in threads:
            if segments[(r, k)] < args.min_segments:
                errors.append(f"rank {r} thread {k}: {segments[(r, k)]} segments, expected >= "
                              f"{args.min_segments}")
        meta = args.trace_dir / "perfvar" / f"rank-{r}.json"
        if not meta.exists():
            errors.append(f"missing {meta}")
            continue
        doc = json.loads(meta.read_text())
        events = doc["events"]
        if events["lost"]:
            errors.append(f"rank {r}: events lost")
        if events["buffer_flushes"] < args.min_flushes:
            errors.append(f"rank {r}: {events['buffer_flushes']} buffer flushes, "
                          f"expected >= {args.min_flushes}")
        counted = doc["mpi"]["calls"]
        for item in filter(None, args.counted.split(",")):
            name, count = item.split("=")
            if counted.get(name, 0) != int(count):
                errors.append(f"rank {r}: perfvar counted {counted.get(name, 0)} x {name}, "
                              f"expected {count}")
        if args.layer and doc["mpi"]["layer"] != args.layer:
            errors.append(f"rank {r}: layer {doc['mpi']['layer']}, expected {args.layer}")
        # Both layers know their library's status layout: a receive's size read from the status
        # fields must have agreed with MPI_Get_count at the start.
        if args.layer and doc["mpi"].get("status_sizes") != "fields":
            errors.append(f"rank {r}: status sizes by {doc['mpi'].get('status_sizes')}, expected fields")
        if doc.get("untraced_thread_calls"):
            errors.append(f"rank {r}: {doc['untraced_thread_calls']} untraced thread calls")
        rank_probes = sum(probes[(r, k)] for k in threads)
        if rank_probes < args.min_probes:
            errors.append(f"rank {r}: {rank_probes} probes, expected >= {args.min_probes}")
        errors += check_probe_meta(r, doc.get("probe"), threads, probes, probe_ticks,
                                   args.probe_period_ms, resolution,
                                   doc.get("calibration", {}).get("t_min_adds", 0))
        if args.probe_k_source:
            probe = doc.get("probe") or {}
            if probe.get("k_source") != args.probe_k_source:
                errors.append(f"rank {r}: probe K from {probe.get('k_source')!r}, expected "
                              f"{args.probe_k_source!r}")

        # A trace rebuilt by perfvar-recover: rank-N.json is the one the start wrote (no threads
        # yet); ended-rank-N.json describes the threads whose records were converted.
        ended = args.trace_dir / "perfvar" / f"ended-rank-{r}.json"
        if doc.get("complete") is False and ended.exists():
            doc = dict(doc, threads=json.loads(ended.read_text())["threads"])
        described = sorted(x["thread"] for x in doc.get("threads", []))
        if described != threads:
            errors.append(f"rank {r}: rank-{r}.json describes threads {described}, the trace has "
                          f"{threads}")
    errors += check_metrics_meta(args, nranks, locs, metric_names, metric_reads)
    errors += check_records(args.trace_dir, nranks, args.records)
    if args.messages and not sum(sends.values()):
        errors.append("no messages recorded")
    if len(comms_used) < args.min_comms:
        errors.append(f"records on {len(comms_used)} communicators {sorted(comms_used)}, expected "
                      f">= {args.min_comms}")

    if errors:
        print(f"check_trace: {args.trace_dir}: FAILED", file=sys.stderr)
        for e in errors[:20]:
            print(f"  {e}", file=sys.stderr)
        return 1
    nlocs = sum(len(x) for x in locs.values())
    print(f"check_trace: {args.trace_dir}: ok ({nranks} ranks, {nlocs} locations, {nevents} events, "
          f"{sum(sends.values())} messages matched, {sum(colls.values())} collective records, "
          f"{sum(segments.values())} segments, {sum(probes.values())} probes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
