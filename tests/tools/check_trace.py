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
6. rank-N.json's "neighbours" (what else ran on the rank's CPUs): one entry per CPU the rank
   ran on, its times within the span, tasks of other processes only, on those CPUs, most time
   first; --neighbour RANK:COMM:SHARE asks for a task COMM on that rank's CPU for SHARE of it.
7. With --calibrated-at WHEN, rank-N.json's "calibration" ran at WHEN (start-up, or MPI_Finalize
   when the start-up one found nothing) and found t_min and t_diff.
8. The system tree: machine > node > socket > core (classes "machine", "node", "socket", "core",
   with the OTF2 domains MACHINE, SHARED_MEMORY, SOCKET, CORE); each rank's location group under
   the node named by its rank-N.json "host", and under the socket and core its rank-N.json
   "topology" gives when all the CPUs of its mask share them ("socket P", "core C").

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
from dataclasses import dataclass, field
from pathlib import Path

import otf2

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "postproc"))
from perfvar import _spec  # noqa: E402
from perfvar._spec import TraceName  # noqa: E402

import json_keys  # noqa: E402  (beside this file)


def header_constant(header: str, name: str) -> int:
    """An integer #define of one of the C library's headers (src/...), read rather than copied."""
    text = (Path(__file__).resolve().parents[2] / "src" / header).read_text()
    return int(re.search(rf"#define {name} (\d+)u?\b", text).group(1))


# K is one constant of the C library, the same on every rank: so many ADDs a lane, in so many
# lanes.
PROBE_LANES = header_constant("calib/add_lanes.h", "PV_ADD_LANES")
PROBE_ADDS = header_constant("calib/work_probe.h", "PV_WORK_PROBE_LANE_ADDS") * PROBE_LANES

def rank_of(location) -> int:
    return int(location.group.name.rsplit(" ", 1)[1])


def world_ranks(comm) -> list[int]:
    """MPI_COMM_WORLD ranks of a communicator's members, in its rank order (its group's members
    index the COMM_LOCATIONS group, whose k-th member is world rank k)."""
    return [m if isinstance(m, int) else rank_of(m) for m in comm.group.members]


def thread_of(location) -> int:
    return int(location._ref) >> 32


CPU_UNKNOWN = 0xFFFFFFFF  # the `cpu` value that says the CPU is not known
PROBE = TraceName.PROBE_REGION
SEGMENT = TraceName.SEGMENT_PREFIX


def counts(spec: str) -> list[tuple[str, int]]:
    return [(k, int(v)) for k, v in (item.split("=") for item in filter(None, spec.split(",")))]


def check_probe_k(r: int, meta: dict) -> list[str]:
    """The probe's K (ADDs) and lanes: the library's one fixed kernel, on every rank."""
    k, lanes, source = meta.get("adds"), meta.get("lanes"), meta.get("k_source")
    if k != PROBE_ADDS or lanes != PROBE_LANES or source != "fixed":
        return [f"rank {r}: probe K {k} ADDs in {lanes} lanes from {source!r}, expected "
                f"{PROBE_ADDS} in {PROBE_LANES} from 'fixed'"]
    return []


def check_probe_counts(r: int, meta: dict, threads: list[int], probes) -> list[str]:
    """rank-N.json's probe count, in all and per thread, against the trace's."""
    errors = []
    in_trace = sum(probes[(r, k)] for k in threads)
    if meta.get("count") != in_trace:
        errors.append(f"rank {r}: rank-{r}.json counts {meta.get('count')} probes, the trace has "
                      f"{in_trace}")
    per_thread = {x.get("thread"): x.get("count") for x in meta.get("threads", [])}
    if per_thread != {k: probes[(r, k)] for k in threads}:
        errors.append(f"rank {r}: probes per thread {per_thread} in rank-{r}.json, the trace has "
                      f"{ {k: probes[(r, k)] for k in threads} }")
    return errors


def check_probe_time(r: int, meta: dict, threads: list[int], probe_ticks,
                     resolution: float) -> list[str]:
    """rank-N.json's total probe time against the trace's (none to compare without a clock)."""
    if not resolution:
        return []
    # The same clock differences, converted with the rank's own rate and the trace's.
    ns = sum(probe_ticks[(r, k)] for k in threads) * 1e9 / resolution
    if abs(ns - meta.get("total_ns", -1)) > 0.01 * ns + 1000:
        return [f"rank {r}: probes total {meta.get('total_ns')} ns in rank-{r}.json, "
                f"{ns:.1f} ns in the trace"]
    return []


def check_probe_meta(r: int, meta, threads: list[int], probes, probe_ticks, period_ms,
                     resolution: float, complete: bool = True) -> list[str]:
    """rank-N.json's "probe" against the probes of rank r's threads in the trace, and its K;
    the counts and time only where the rank finished (``complete``: a rank that did not
    leaves the file it wrote at start-up, before any probe)."""
    if meta is None:
        in_trace = sum(probes[(r, k)] for k in threads)
        return [f"rank {r}: {in_trace} probes in the trace, rank-{r}.json says probes are off"] \
            if in_trace else []
    errors = []
    if period_ms is not None and meta.get("period_ms") != period_ms:
        errors.append(f"rank {r}: probe period_ms {meta.get('period_ms')}, expected {period_ms}")
    errors += check_probe_k(r, meta)
    if complete:
        errors += check_probe_counts(r, meta, threads, probes)
        errors += check_probe_time(r, meta, threads, probe_ticks, resolution)
    return errors


def ends_segment(ev) -> bool:
    """Whether ev is a segment's Leave."""
    return isinstance(ev, otf2.events.Leave) and ev.region.canonical_name.startswith(SEGMENT)


def check_metric(ev, prev, where: str, last: dict, loc) -> list[str]:
    """A Metric event: zeros first on its location, then at a segment's end, never decreasing."""
    values = list(ev.values)
    before = last.get(loc)
    if before is None:
        return [] if not any(values) else [f"{where}: first counters at {ev.time} are not 0: {values}"]
    errors = []
    if any(v < b for v, b in zip(values, before)):
        errors.append(f"{where}: counters went back at {ev.time}: {before} -> {values}")
    if not (ends_segment(prev) and prev.time == ev.time):
        errors.append(f"{where}: counters at {ev.time} not at a segment's end")
    return errors


def rank_meta(trace_dir: Path, r: int) -> dict:
    """Rank r's rank-N.json, or {} if there is none."""
    meta = trace_dir / "perfvar" / f"rank-{r}.json"
    return json.loads(meta.read_text()) if meta.exists() else {}


def expected_metrics(args, nranks: int) -> dict:
    """Rank -> the counters the command line expects (comma list, "none", or None: any)."""
    want = {r: args.metrics for r in range(nranks)}
    for item in args.metrics_rank:
        r, _, spec = item.partition("=")
        want[int(r)] = spec
    return want


def check_rank_metrics(r: int, doc: dict, want, seen: list, total: int) -> list[str]:
    """Rank r's rank-N.json "metrics" against the counters the trace has (seen, and total reads
    over its threads) and the command line wants."""
    errors = []
    said = (doc.get("metrics") or {}).get("events") or []
    if seen and [list(x) for x in seen] != [said]:
        errors.append(f"rank {r}: counters {seen} in the trace, rank-{r}.json says {said}")
    # A rebuilt trace's rank-N.json is the one the start wrote: no reads counted yet.
    if doc.get("metrics") and doc.get("complete") and doc["metrics"].get("reads") != total:
        errors.append(f"rank {r}: {total} counter reads in the trace, rank-{r}.json says "
                      f"{doc['metrics'].get('reads')}")
    if want is not None:
        expect = [] if want == "none" else want.split(",")
        # The default set counts in the kernel too where it may (":k=1"), else without.
        if [n.removesuffix(":k=1") for n in said] != expect:
            errors.append(f"rank {r}: counters {said}, expected {expect}")
    return errors


def check_metric_reads(args, r: int, threads, reads) -> list[str]:
    """Counter reads per location of rank r within --min/--max-metric-reads."""
    errors = []
    for k in threads:
        n = reads[(r, k)]
        if n < args.min_metric_reads or (args.max_metric_reads is not None
                                         and n > args.max_metric_reads):
            errors.append(f"rank {r} thread {k}: {n} counter reads, expected "
                          f"{args.min_metric_reads}..{args.max_metric_reads}")
    return errors


def check_metrics_meta(args, nranks: int, locs: dict, names: dict, reads) -> list[str]:
    """rank-N.json "metrics" against the trace, and the counters the command line expects."""
    want = expected_metrics(args, nranks)
    errors = []
    for r in range(nranks):
        doc = rank_meta(args.trace_dir, r)
        total = sum(reads[(r, k)] for k in locs.get(r, ()))
        errors += check_rank_metrics(r, doc, want[r], sorted(names.get(r, ())), total)
        errors += check_metric_reads(args, r, locs.get(r, ()), reads)
    return errors


def check_records(trace_dir: Path, nranks: int, expect: str | None) -> list[str]:
    """The raw records against what rank-N.json says of them ("records_kept") and, when given,
    against expect: removed, none of them (nor their directory) is left; kept, every rank's
    definitions and first thread's records are there."""
    errors: list[str] = []
    records = trace_dir / "perfvar" / "records"
    for r in range(nranks):
        doc = rank_meta(trace_dir, r)
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


def parse_args() -> argparse.Namespace:
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
    ap.add_argument("--metrics", help="the counters every rank records, comma list, or none")
    ap.add_argument("--metrics-rank", action="append", default=[],
                    help="R=NAMES|none: rank R's counters, where they differ from --metrics")
    ap.add_argument("--min-metric-reads", type=int, default=0, help="per location")
    ap.add_argument("--max-metric-reads", type=int, help="per location")
    ap.add_argument("--neighbour", action="append", default=[], metavar="RANK:COMM:SHARE",
                    help="rank-N.json lists a task COMM on rank RANK's CPU that ran at least "
                         "SHARE (0..1) of the rank's traced time")
    ap.add_argument("--calibrated-at", choices=("start-up", "MPI_Finalize"),
                    help="every rank's rank-N.json calibration ran then and found t_min and t_diff")
    ap.add_argument("--records", choices=("removed", "kept"),
                    help="the raw records (DIR/perfvar/records) after the run: removed (a clean "
                         "finish) or kept (PERFVAR_KEEP_RECORDS=1, or a rank died)")
    return ap.parse_args()


# The system tree's levels, root first, with the OTF2 domain of each (Score-P's).
TREE_DOMAINS = {"machine": "MACHINE", "node": "SHARED_MEMORY", "socket": "SOCKET", "core": "CORE"}


def check_otf2_print(archive: Path) -> list[str]:
    p = subprocess.run(["otf2-print", "-Werror", str(archive)], capture_output=True, text=True)
    if p.returncode != 0:
        return [f"otf2-print -Werror failed: {p.stderr.strip()[:500]}"]
    return []


Loc = tuple[int, int]  # a location: (rank, thread)


@dataclass(frozen=True)
class At:
    """Where an event is: its location, how messages name it, the location's previous event."""
    loc: Loc
    where: str
    prev: object


@dataclass
class TraceScan:
    """One pass over a trace's events with the Python reader: the errors found on the way, and
    what the checks after it need. Per location, keyed (rank, thread), unless said."""
    errors: list[str] = field(default_factory=list)
    sends: collections.Counter = field(default_factory=collections.Counter)
    recvs: collections.Counter = field(default_factory=collections.Counter)
    # (communicator, world rank) -> count
    colls: collections.Counter = field(default_factory=collections.Counter)
    comm_members: dict[str, list[int]] = field(default_factory=dict)
    comms_used: set[str] = field(default_factory=set)
    # (rank, kind, request id) -> started - completed: every request completes exactly once
    requests: collections.Counter = field(default_factory=collections.Counter)
    calls: dict[Loc, collections.Counter] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter))
    segments: collections.Counter = field(default_factory=collections.Counter)
    last_t: dict[Loc, int] = field(default_factory=dict)
    stacks: dict[Loc, list] = field(default_factory=lambda: collections.defaultdict(list))
    open_colls: collections.Counter = field(default_factory=collections.Counter)
    # rank -> its threads
    locs: dict[int, set] = field(default_factory=lambda: collections.defaultdict(set))
    nevents: int = 0
    # probes: count, ticks, and what the schedule check needs
    probes: collections.Counter = field(default_factory=collections.Counter)
    probe_ticks: collections.Counter = field(default_factory=collections.Counter)
    prev_ev: dict[Loc, object] = field(default_factory=dict)  # the location's previous event
    cpu_now: dict[Loc, int] = field(default_factory=dict)  # the location's last `cpu` attribute
    after_probe: dict[Loc, int] = field(default_factory=dict)  # a probe's Leave, until the next
    probe_start: dict[Loc, int] = field(default_factory=dict)  # the open or last probe's Enter
    call_entries: dict[Loc, list[int]] = field(
        default_factory=lambda: collections.defaultdict(list))
    # rank -> its classes' members
    metric_names: dict[int, set] = field(default_factory=lambda: collections.defaultdict(set))
    metric_last: dict[Loc, list[int]] = field(default_factory=dict)  # the location's last totals
    metric_reads: collections.Counter = field(default_factory=collections.Counter)
    # the clock: ticks per second, the trace's time range, the probe period and slack in ticks
    resolution: float = 0.0
    lo: int = 0
    hi: int = 0
    period: float | None = None
    slack: float = 0.0
    # rank -> the (class, name) of the system tree nodes above its location group, root first
    tree: dict[int, list[tuple[str, str]]] = field(default_factory=dict)

    @property
    def nranks(self) -> int:
        return len(self.locs)

    def read(self, archive: Path, probe_period_ms: int | None) -> None:
        try:
            with otf2.reader.open(str(archive)) as trace:
                self.set_clock(trace.definitions.clock_properties, probe_period_ms)
                self.note_tree(trace.definitions)
                for location in trace.definitions.locations:
                    self.locs[rank_of(location)].add(thread_of(location))
                for location, ev in trace.events:
                    self.on_event(location, ev)
        except Exception as exc:  # the reader's own failure is the finding
            self.errors.append(f"python otf2 reader failed: {type(exc).__name__}: {exc}")
            for r, k in self.last_t:
                self.locs[r].add(k)

    def note_tree(self, defs) -> None:
        """Each rank's path in the system tree, and a node whose domain is not its class's."""
        for d in defs.system_tree_node_domains:
            node, domain = d.system_tree_node, str(d.system_tree_node_domain)
            want = TREE_DOMAINS.get(node.class_name)
            if want is None or domain != f"SystemTreeDomain.{want}":
                self.errors.append(f"system tree node {node.name!r} of class "
                                   f"{node.class_name!r} has domain {domain}")
        for lg in defs.location_groups:
            m = re.fullmatch(r"MPI Rank (\d+)", lg.name)
            path, node = [], lg.system_tree_parent
            while node is not None and len(path) < 16:
                path.append((node.class_name, node.name))
                node = node.parent
            if m:
                self.tree[int(m.group(1))] = path[::-1]

    def set_clock(self, cp, probe_period_ms: int | None) -> None:
        self.resolution = cp.timer_resolution
        self.lo, self.hi = cp.global_offset, cp.global_offset + cp.trace_length
        if probe_period_ms:
            self.period = probe_period_ms * cp.timer_resolution / 1e3  # ticks
            self.slack = self.period * 1e-3 + 2  # the rank's own tick rate and readers' rounding

    def on_event(self, location, ev) -> None:
        self.nevents += 1
        r = rank_of(location)
        loc = (r, thread_of(location))
        self.check_time(loc, ev.time)
        at = At(loc, f"rank {r} thread {loc[1]}", self.prev_ev.get(loc))
        if isinstance(ev, otf2.events.Metric):  # not an event the others are placed by
            self.on_metric(ev, at)
            return
        self.prev_ev[loc] = ev
        if isinstance(ev, (otf2.events.Enter, otf2.events.Leave)):
            self.note_cpu(ev, loc)
        if loc in self.after_probe:  # the event right after a probe: its MPI call's Enter
            self.check_after_probe(ev, at)
        for types, handler in self.HANDLERS:
            if isinstance(ev, types):
                handler(self, ev, at)
                break

    def check_time(self, loc: Loc, t: int) -> None:
        r = loc[0]
        if t < self.last_t.get(loc, 0):
            self.errors.append(f"rank {r} thread {loc[1]}: time goes back at {t}")
        self.last_t[loc] = t
        if not self.lo <= t <= self.hi:
            self.errors.append(f"rank {r}: time {t} outside [{self.lo}, {self.hi}]")

    def on_metric(self, ev, at: At) -> None:
        loc = at.loc
        self.errors += check_metric(ev, at.prev, at.where, self.metric_last, loc)
        self.metric_names[loc[0]].add(tuple(m.name for m in ev.metric.members))
        self.metric_reads[loc] += loc in self.metric_last  # the first is the zeros
        self.metric_last[loc] = list(ev.values)

    def note_cpu(self, ev, loc: Loc) -> None:
        for attr, value in (ev.attributes or {}).items():
            if attr.name == TraceName.CPU_ATTRIBUTE:  # written where it changed, carried forward
                self.cpu_now[loc] = value

    def cpu_unknown(self, loc: Loc) -> bool:
        return self.cpu_now.get(loc, CPU_UNKNOWN) == CPU_UNKNOWN

    def check_after_probe(self, ev, at: At) -> None:
        left = self.after_probe.pop(at.loc)
        if not (isinstance(ev, otf2.events.Enter)
                and ev.region.paradigm == otf2.Paradigm.MPI and ev.time >= left):
            self.errors.append(f"{at.where}: a probe is followed by {type(ev).__name__} "
                               f"{getattr(ev, 'region', None)}, not an MPI region's Enter")

    # ---- Enter and Leave ----
    def on_enter(self, ev, at: At) -> None:
        canonical = ev.region.canonical_name
        if canonical == PROBE:
            self.check_probe_enter(ev, at)
        elif (self.period is not None and ev.region.paradigm == otf2.Paradigm.MPI
              and ends_segment(at.prev)):
            self.check_call_without_probe(ev, at)
        self.stacks[at.loc].append(ev.region)
        if canonical.startswith(SEGMENT):
            self.segments[at.loc] += 1
        elif canonical == PROBE:
            self.probes[at.loc] += 1
        else:
            self.calls[at.loc][ev.region.name] += 1

    def check_probe_enter(self, ev, at: At) -> None:
        loc, t, prev = at.loc, ev.time, at.prev
        outer = [x.name for x in self.stacks[loc]
                 if not x.canonical_name.startswith(TraceName.USER_PREFIX)]
        if outer:
            self.errors.append(f"{at.where}: probe inside {outer}")
        if not ends_segment(prev):
            self.errors.append(f"{at.where}: probe at {t} not right after a segment's Leave")
        if self.cpu_unknown(loc):
            self.errors.append(f"{at.where}: probe Enter with no CPU known")
        if self.period is not None and isinstance(prev, otf2.events.Leave):
            # prev.time is the entry read that found the probe due
            last = self.probe_start.get(loc)
            if last is not None and prev.time < last + self.period - self.slack:
                self.errors.append(f"{at.where}: probe at {t} only "
                                   f"{(t - last) / self.period:.4f} periods after the last")
            self.call_entries[loc].append(prev.time)
        self.probe_start[loc] = t

    def check_call_without_probe(self, ev, at: At) -> None:
        # a traced call that ran no probe: none was due at its entry read (t)
        t = ev.time
        last = self.probe_start.get(at.loc)
        if last is not None and t >= last + self.period + self.slack:
            self.errors.append(f"{at.where}: no probe at the call {ev.region.name} at {t}, "
                               f"{(t - last) / self.period:.4f} periods after the last")
        self.call_entries[at.loc].append(t)

    def on_leave(self, ev, at: At) -> None:
        loc = at.loc
        if not self.stacks[loc] or self.stacks[loc][-1] != ev.region:
            self.errors.append(f"{at.where}: Leave {ev.region.name} does not "
                               "match the open region")
        else:
            self.stacks[loc].pop()
        if ev.region.canonical_name == PROBE:
            if self.cpu_unknown(loc):
                self.errors.append(f"{at.where}: probe Leave with no CPU known")
            if loc in self.probe_start:
                self.probe_ticks[loc] += ev.time - self.probe_start[loc]
            self.after_probe[loc] = ev.time

    # ---- messages, requests and collectives ----
    def on_send(self, ev, at: At) -> None:
        r = at.loc[0]
        peer = world_ranks(ev.communicator)[ev.receiver]
        self.comms_used.add(ev.communicator.name)
        self.sends[(r, peer, ev.msg_tag, ev.msg_length)] += 1
        if isinstance(ev, otf2.events.MpiIsend):
            self.requests[(r, "isend", ev.request_id)] += 1

    def on_isend_complete(self, ev, at: At) -> None:
        self.requests[(at.loc[0], "isend", ev.request_id)] -= 1

    def on_irecv_request(self, ev, at: At) -> None:
        self.requests[(at.loc[0], "irecv", ev.request_id)] += 1

    def on_recv(self, ev, at: At) -> None:
        r = at.loc[0]
        peer = world_ranks(ev.communicator)[ev.sender]
        self.recvs[(peer, r, ev.msg_tag, ev.msg_length)] += 1
        if isinstance(ev, otf2.events.MpiIrecv):
            self.requests[(r, "irecv", ev.request_id)] -= 1

    def on_icoll_request(self, ev, at: At) -> None:
        self.requests[(at.loc[0], "icoll", ev.request_id)] += 1

    def on_icoll_complete(self, ev, at: At) -> None:
        self.requests[(at.loc[0], "icoll", ev.request_id)] -= 1
        self.note_collective(ev.communicator, at.loc[0], world_ranks(ev.communicator))

    def on_coll_begin(self, ev, at: At) -> None:
        self.open_colls[at.loc] += 1

    def on_coll_end(self, ev, at: At) -> None:
        r = at.loc[0]
        self.open_colls[at.loc] -= 1
        members = world_ranks(ev.communicator)
        if r not in members:
            self.errors.append(f"rank {r}: collective on {ev.communicator.name}, "
                               f"which it is not a member of")
        self.note_collective(ev.communicator, r, members)

    def note_collective(self, comm, r: int, members: list[int]) -> None:
        self.comm_members[comm.name] = members
        self.colls[(comm.name, r)] += 1
        self.comms_used.add(comm.name)

    # The first type that matches an event handles it.
    HANDLERS = (
        (otf2.events.Enter, on_enter),
        (otf2.events.Leave, on_leave),
        ((otf2.events.MpiSend, otf2.events.MpiIsend), on_send),
        (otf2.events.MpiIsendComplete, on_isend_complete),
        (otf2.events.MpiIrecvRequest, on_irecv_request),
        ((otf2.events.MpiRecv, otf2.events.MpiIrecv), on_recv),
        (otf2.events.NonBlockingCollectiveRequest, on_icoll_request),
        (otf2.events.NonBlockingCollectiveComplete, on_icoll_complete),
        (otf2.events.MpiCollectiveBegin, on_coll_begin),
        (otf2.events.MpiCollectiveEnd, on_coll_end),
    )


# ---- the checks after the pass: each (args, scan) -> errors, in the order they are reported ----
def check_last_events(args, scan: TraceScan) -> list[str]:
    return [f"rank {r} thread {k}: the last event is a probe's Leave" for r, k in scan.after_probe]


def check_probe_schedule(args, scan: TraceScan) -> list[str]:
    """Enough probes on each thread for the span of its traced calls."""
    if scan.period is None:
        return []
    errors = []
    period = scan.period
    for (r, k), entries in scan.call_entries.items():
        # Consecutive probes are at most P + one gap between calls apart, whatever the load.
        if len(entries) < 2:
            continue
        span = entries[-1] - entries[0]
        gap = max(b - a for a, b in zip(entries, entries[1:]))
        least = int(span // (period + gap + scan.slack)) - 1
        if scan.probes[(r, k)] < least:
            errors.append(f"rank {r} thread {k}: {scan.probes[(r, k)]} probes, expected >= {least} "
                          f"(calls span {span / period:.1f} periods, longest gap "
                          f"{gap / period:.2f})")
    return errors


def check_open_regions(args, scan: TraceScan) -> list[str]:
    errors = [f"rank {r} thread {k}: regions left open: {[x.name for x in st]}"
              for (r, k), st in scan.stacks.items() if st]
    errors += [f"rank {r} thread {k}: {n} collective begin(s) without end"
               for (r, k), n in scan.open_colls.items() if n]
    return errors


def check_messages(args, scan: TraceScan) -> list[str]:
    errors = []
    sends, recvs = scan.sends, scan.recvs
    if sends != recvs and not args.cut:
        diff = (sends - recvs) + (recvs - sends)
        errors.append(f"unmatched messages: {dict(list(diff.items())[:5])}")
    # A request may stay incomplete (MPI_Request_free, an unmatched MPI_ANY_SOURCE in Waitsome), but
    # never complete twice or without having been started.
    unpaired = {k: v for k, v in scan.requests.items() if v < 0}
    if unpaired:
        errors.append(f"non-blocking requests completed without a start or twice: "
                      f"{dict(list(unpaired.items())[:5])}")
    return errors


def check_collectives(args, scan: TraceScan) -> list[str]:
    errors = []
    for name, members in scan.comm_members.items():
        per_member = {m: scan.colls[(name, m)] for m in members}
        if len(set(per_member.values())) > 1 and not args.cut:
            errors.append(f"the members of {name} disagree on its number of collectives: "
                          f"{per_member}")
    return errors


# ---- a rank in the trace: each (args, scan, r, threads) -> errors ----
def check_rank_threads(args, scan: TraceScan, r: int, threads: list[int]) -> list[str]:
    if threads != list(range(args.threads)):
        return [f"rank {r}: threads {threads}, expected 0..{args.threads - 1}"]
    return []


def check_rank_calls(args, scan: TraceScan, r: int, threads: list[int]) -> list[str]:
    """Enter counts: per rank (--calls), per thread but the master thread (--thread-calls)."""
    errors = []
    calls = scan.calls
    for name, count in counts(args.calls):
        n = sum(calls[(r, k)][name] for k in threads)
        if n != count:
            errors.append(f"rank {r}: {n} x {name}, expected {count}")
    for name, count in counts(args.thread_calls):
        for k in threads[1:]:
            if calls[(r, k)][name] != count:
                errors.append(f"rank {r} thread {k}: {calls[(r, k)][name]} x {name}, "
                              f"expected {count}")
    return errors


def check_rank_segments(args, scan: TraceScan, r: int, threads: list[int]) -> list[str]:
    return [f"rank {r} thread {k}: {scan.segments[(r, k)]} segments, expected >= "
            f"{args.min_segments}" for k in threads if scan.segments[(r, k)] < args.min_segments]


RANK_TRACE_CHECKS = (check_rank_threads, check_rank_calls, check_rank_segments)


# ---- rank-N.json of a rank: each (args, scan, r, threads, doc) -> errors ----
def check_events_doc(args, scan: TraceScan, r: int, threads: list[int], doc: dict) -> list[str]:
    errors = []
    events = doc["events"]
    if events["lost"]:
        errors.append(f"rank {r}: events lost")
    if events["buffer_flushes"] < args.min_flushes:
        errors.append(f"rank {r}: {events['buffer_flushes']} buffer flushes, "
                      f"expected >= {args.min_flushes}")
    return errors


def check_mpi_doc(args, scan: TraceScan, r: int, threads: list[int], doc: dict) -> list[str]:
    errors = []
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
        errors.append(f"rank {r}: status sizes by {doc['mpi'].get('status_sizes')}, "
                      "expected fields")
    if doc.get("untraced_thread_calls"):
        errors.append(f"rank {r}: {doc['untraced_thread_calls']} untraced thread calls")
    return errors


def check_probes_doc(args, scan: TraceScan, r: int, threads: list[int], doc: dict) -> list[str]:
    errors = []
    rank_probes = sum(scan.probes[(r, k)] for k in threads)
    if rank_probes < args.min_probes:
        errors.append(f"rank {r}: {rank_probes} probes, expected >= {args.min_probes}")
    errors += check_probe_meta(r, doc.get("probe"), threads, scan.probes, scan.probe_ticks,
                               args.probe_period_ms, scan.resolution, bool(doc.get("complete")))
    return errors


def check_threads_doc(args, scan: TraceScan, r: int, threads: list[int], doc: dict) -> list[str]:
    # A trace rebuilt by perfvar-recover: rank-N.json is the one the start wrote (no threads
    # yet); ended-rank-N.json describes the threads whose records were converted.
    ended = args.trace_dir / "perfvar" / f"ended-rank-{r}.json"
    if doc.get("complete") is False and ended.exists():
        how = json.loads(ended.read_text())
        wrong, _ = json_keys.problems(how, _spec.ENDED_JSON)
        if wrong:
            return [f"rank {r}: {ended.name} is not as src/spec/contracts.py says: {wrong}"]
        doc = dict(doc, threads=how[_spec.EndedJson.THREADS])
    described = sorted(x["thread"] for x in doc.get("threads", []))
    if described != threads:
        return [f"rank {r}: rank-{r}.json describes threads {described}, the trace has "
                f"{threads}"]
    return []


def check_neighbour_cpus(r: int, n: dict, cpus: list[int], doc: dict) -> list[str]:
    """Rank r's neighbours: one entry per CPU it ran on, each CPU's times of at least 0 that add
    up to the span within a tick per column."""
    errors = []
    if cpus != sorted(doc.get("cpus", [])):
        errors.append(f"rank {r}: neighbours of CPUs {cpus}, the rank ran on {doc.get('cpus')}")
    for c in n["cpus"]:
        times = {k: v for k, v in c.items() if k.endswith("_ns")}
        if min(times.values()) < 0 or sum(times.values()) > n["span_ns"] + 9 * n["tick_ns"]:
            errors.append(f"rank {r}: cpu {c['cpu']}'s times {times} do not fit in the span "
                          f"{n['span_ns']:.0f} ns")
    return errors


def check_neighbour_tasks(args, r: int, n: dict, cpus: list[int], pid: int) -> list[str]:
    """Rank r's neighbours: tasks of other processes on its CPUs, most time first, and the ones
    --neighbour asks for."""
    errors = []
    tasks = n["tasks"]
    if any(t["cpu"] not in cpus or t["pid"] == pid for t in tasks):
        errors.append(f"rank {r}: neighbour tasks {tasks}: own, or off the rank's CPUs {cpus}")
    if [t["ns"] for t in tasks] != sorted((t["ns"] for t in tasks), reverse=True):
        errors.append(f"rank {r}: neighbour tasks not most time first: {tasks}")
    for want in args.neighbour:
        rank, comm, share = want.split(":")
        enough = float(share) * n["span_ns"]
        if int(rank) == r and not any(t["comm"] == comm and t["ns"] >= enough for t in tasks):
            errors.append(f"rank {r}: no task {comm} on its CPU for {share} of the span "
                          f"{n['span_ns'] / 1e9:.2f} s: {tasks}")
    return errors


def check_neighbours_doc(args, scan: TraceScan, r: int, threads: list[int], doc: dict) -> list[str]:
    """rank-N.json "neighbours" of a rank that stopped (null before it, or without /proc)."""
    n = doc.get("neighbours")
    if n is None:
        if doc.get("complete") and Path("/proc/stat").exists():
            return [f"rank {r}: no neighbours in rank-{r}.json although /proc is there"]
        return []
    cpus = sorted(c["cpu"] for c in n["cpus"])
    return check_neighbour_cpus(r, n, cpus, doc) + check_neighbour_tasks(args, r, n, cpus,
                                                                        doc["pid"])


def check_calibration_doc(args, scan: TraceScan, r: int, threads: list[int], doc: dict) -> list[str]:
    """rank-N.json "calibration" with --calibrated-at: when it ran, and t_min/t_diff found."""
    if not args.calibrated_at:
        return []
    cal = doc.get("calibration") or {}
    errors = []
    if cal.get("at") != args.calibrated_at:
        errors.append(f"rank {r}: calibration at {cal.get('at')!r}, expected {args.calibrated_at!r}")
    if not (cal.get("t_min_adds") and cal.get("t_diff_adds")):
        errors.append(f"rank {r}: calibration found t_min {cal.get('t_min_adds')} ADDs, t_diff "
                      f"{cal.get('t_diff_adds')} ADDs (status {cal.get('status')!r})")
    return errors


RANK_DOC_CHECKS = (check_events_doc, check_mpi_doc, check_probes_doc, check_threads_doc,
                   check_neighbours_doc, check_calibration_doc)


def check_rank(args, scan: TraceScan, r: int) -> list[str]:
    """Rank r in the trace, then its rank-N.json."""
    threads = sorted(scan.locs.get(r, ()))
    errors = []
    for check in RANK_TRACE_CHECKS:
        errors += check(args, scan, r, threads)
    meta = args.trace_dir / "perfvar" / f"rank-{r}.json"
    if not meta.exists():
        return errors + [f"missing {meta}"]
    doc = json.loads(meta.read_text())
    for check in RANK_DOC_CHECKS:
        errors += check(args, scan, r, threads, doc)
    return errors


def check_ranks(args, scan: TraceScan) -> list[str]:
    errors = []
    if args.ranks is not None and scan.nranks != args.ranks:
        errors.append(f"{scan.nranks} ranks, expected {args.ranks}")
    for r in range(scan.nranks):
        errors += check_rank(args, scan, r)
    return errors


def check_metrics(args, scan: TraceScan) -> list[str]:
    return check_metrics_meta(args, scan.nranks, scan.locs, scan.metric_names, scan.metric_reads)


def check_raw_records(args, scan: TraceScan) -> list[str]:
    return check_records(args.trace_dir, scan.nranks, args.records)


def check_meta_docs(args, scan: TraceScan) -> list[str]:
    """run.json (rank 0 writes it) and each calibration-rank-N.json (a calibrating rank) have
    the keys and types of src/spec/contracts.py."""
    path = args.trace_dir / "perfvar" / "run.json"
    if not path.exists():
        return [f"missing {path}"]
    errors = []
    wrong, _ = json_keys.problems(json.loads(path.read_text()), _spec.RUN_JSON)
    if wrong:
        errors.append(f"run.json is not as src/spec/contracts.py says: {wrong}")
    for cal in sorted((args.trace_dir / "perfvar").glob("calibration-rank-*.json")):
        wrong, _ = json_keys.problems(json.loads(cal.read_text()), _spec.CALIBRATION_JSON)
        if wrong:
            errors.append(f"{cal.name} is not as src/spec/contracts.py says: {wrong[:5]}")
    return errors


def expected_place(doc: dict) -> list[str]:
    """The tree levels below the node that rank-N.json's "topology" puts the rank under."""
    cpus = (doc.get("topology") or {}).get("cpus") or []
    packages = {c["package"] for c in cpus}
    if len(packages) != 1 or min(packages) < 0:
        return []
    (package,) = packages
    cores = {c["core"] for c in cpus}
    if len(cores) != 1 or min(cores) < 0:
        return [f"socket {package}"]
    return [f"socket {package}", f"core {min(cores)}"]


def check_system_tree(args, scan: TraceScan) -> list[str]:
    errors = []
    for r in range(scan.nranks):
        path = scan.tree.get(r)
        if path is None:
            errors.append(f"rank {r}: no location group 'MPI Rank {r}'")
            continue
        classes = [c for c, _ in path]
        if classes != list(TREE_DOMAINS)[: len(classes)] or len(classes) < 2:
            errors.append(f"rank {r}: system tree path {path}, expected machine > node "
                          "[> socket [> core]]")
            continue
        meta = args.trace_dir / "perfvar" / f"rank-{r}.json"
        doc = json.loads(meta.read_text()) if meta.exists() else {}
        if "host" in doc and doc["host"] != path[1][1]:
            errors.append(f"rank {r}: under node {path[1][1]!r}, rank-{r}.json says host "
                          f"{doc['host']!r}")
        if "topology" in doc and [n for _, n in path[2:]] != expected_place(doc):
            errors.append(f"rank {r}: under {[n for _, n in path]}, its topology says "
                          f"{expected_place(doc)} below its node")
    return errors


def check_communication(args, scan: TraceScan) -> list[str]:
    errors = []
    if args.messages and not sum(scan.sends.values()):
        errors.append("no messages recorded")
    if len(scan.comms_used) < args.min_comms:
        errors.append(f"records on {len(scan.comms_used)} communicators "
                      f"{sorted(scan.comms_used)}, expected >= {args.min_comms}")
    return errors


AFTER_SCAN_CHECKS = (check_last_events, check_probe_schedule, check_open_regions, check_messages,
                     check_collectives, check_ranks, check_metrics, check_raw_records,
                     check_communication, check_meta_docs, check_system_tree)


def report(args, scan: TraceScan, errors: list[str]) -> int:
    if errors:
        print(f"check_trace: {args.trace_dir}: FAILED", file=sys.stderr)
        for e in errors[:20]:
            print(f"  {e}", file=sys.stderr)
        return 1
    nlocs = sum(len(x) for x in scan.locs.values())
    print(f"check_trace: {args.trace_dir}: ok ({scan.nranks} ranks, {nlocs} locations, "
          f"{scan.nevents} events, {sum(scan.sends.values())} messages matched, "
          f"{sum(scan.colls.values())} collective records, {sum(scan.segments.values())} segments, "
          f"{sum(scan.probes.values())} probes)")
    return 0


def main() -> int:
    args = parse_args()
    archive = args.trace_dir / "traces.otf2"
    errors = check_otf2_print(archive)
    scan = TraceScan()
    scan.read(archive, args.probe_period_ms)
    errors += scan.errors
    for check in AFTER_SCAN_CHECKS:
        errors += check(args, scan)
    return report(args, scan, errors)


if __name__ == "__main__":
    sys.exit(main())
