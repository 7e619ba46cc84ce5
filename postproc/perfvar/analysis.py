"""Orchestrate an analysis: read -> filter_cost -> filter_os -> detectors -> result.

:func:`analyze` returns the result (perfvar.result.Analysis, the content of
analysis.json) that the reports render. Times are ns. Raises
:class:`~perfvar.errors.TraceError` when the trace cannot be read at all; broken
ranks and missing metadata are reported inside the result instead. Not thread-safe
(the OTF2 reader redirects stderr).
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any, Callable, Optional

import numpy as np

from perfvar import __version__, heap, partition
from perfvar.calibration import ranks as calibration_ranks
from perfvar.calibration.machine_file import read_file
from perfvar.detect import (
    Place,
    code_kinds,
    describe,
    kinds_json,
    naming_kinds,
    run_all,
    subject,
    summary_keys,
    transient_kinds,
    verdict_kind,
)
from perfvar.detect.finding import PLACEMENT
from perfvar.detect.levels import member_ranks
from perfvar.detect.noisy_core import RankNoise, rank_noise
from perfvar.parallel import engine
from perfvar.progress import Progress
from perfvar.read.distinct_labels import distinct_ends
from perfvar.read.families import judged_share, merge_families
from perfvar.read.meta import RunMeta, read_meta
from perfvar.read.modes import split_modes
from perfvar.read.otf2 import trace_ranks
from perfvar.read.recover import endings_json, ensure_trace, read_endings
from perfvar.read.samples import (
    TraceSamples,
    class_totals,
    durations_only,
    timing_only,
)
from perfvar.read.segments import SegmentKey, parse_segment_key
from perfvar.read.symbolize import Symbol, symbolize
from perfvar.read.trace import read_trace
from perfvar.result import (
    FORMAT,
    Analysis,
    Consequence,
    Ended,
    Finding,
    JudgementRow,
    Params,
    RankRow,
    SegmentClass,
    Summary,
)
from perfvar.stats import cpu_time, cpu_use, decompose, work
from perfvar.stats.cells import (
    NO_CALIBRATION,
    cell_inputs,
    make_cells,
    with_states_of,
)
from perfvar.stats.filters import (
    MIN_SAMPLES_OS,
    N_ESTIMATORS,
    RANDOM_STATE,
    OsFilterInfo,
    filter_os_many,
)
from perfvar.stats.model import (
    Anomaly,
    Cell,
    DetectParams,
    Judgement,
    Prepared,
)
from perfvar.stats.probes import with_probes
from perfvar.verdict import neighbours, time_slicing
from perfvar.verdict.headline import DEFAULT_MIN_COST, rank_findings

GENERATED_BY = f"perfvar {__version__} (postproc)"
# Below this many ranks, local parts cost more to start than they save: one process
# reads, judges and filters.
PARALLEL_MIN_RANKS = 8
FILTER_BATCH = 64  # cells whose forests are grown together (bounds the batch's memory)


def _filter_all(
    tasks: list[np.ndarray], progress: Optional[Progress] = None
) -> list[tuple[np.ndarray, OsFilterInfo]]:
    """filter_os on every cell, FILTER_BATCH cells' forests at a time; ``progress``
    advances by one per cell filtered."""

    def filtered() -> Iterator[tuple[np.ndarray, OsFilterInfo]]:
        for at in range(0, len(tasks), FILTER_BATCH):
            yield from filter_os_many(tasks[at : at + FILTER_BATCH])

    progress = progress or Progress.off()
    return list(progress.track(filtered(), "OS-noise filter", len(tasks)))


def prepare(
    trace: TraceSamples,
    meta: RunMeta,
    segment_ids: dict[int, str],
    progress: Optional[Progress] = None,
    cells: Optional[dict[tuple[int, int], Cell]] = None,
) -> Prepared:
    """Group samples into (segment, rank) cells and filter each one.

    filter_cost uses the rank's own timer_overhead_ns (0 when unknown); filter_os is
    applied per cell (see perfvar.stats.filters), unless ``cells`` already holds every
    cell (made where its samples were, perfvar.partition). Each cell gets the rank's
    calibrated cache state closest to its context (see perfvar.read.cache_state).
    ``progress`` counts the cells filtered.
    """
    if cells is None:
        inputs = cell_inputs(trace.samples, meta)
        results = _filter_all([v for _, _, v in inputs], progress)
        cells = make_cells(trace, meta, inputs, results)
    ids = [segment_ids.get(i, f"?{i}") for i in range(len(trace.segments))]
    return Prepared(
        cells=dict(sorted(cells.items())),
        calibration={r: m.calibration for r, m in meta.ranks.items()},
        hosts={r: m.host for r, m in meta.ranks.items()},
        samples=trace.samples,
        segment_ids=ids,
    )


def _timing_only(trace: TraceSamples, prep: Prepared) -> tuple[TraceSamples, Any]:
    """``trace`` with only its samples' timing (read.samples.timing_only), once
    ``prep``'s CPU table is made from the whole samples: nothing after the cells
    reads a sample's CPUs or context. Returns (trace, samples)."""
    cpu_use.of(prep)
    return _narrowed(trace, timing_only)


def _narrowed(
    trace: TraceSamples, only: Callable[[np.ndarray], np.ndarray]
) -> tuple[TraceSamples, Any]:
    """``trace`` with its samples narrowed by ``only`` (read.samples.timing_only,
    durations_only: a copy of fewer columns, unless it has no more), and those
    samples."""
    narrow = dataclasses.replace(trace, samples=only(trace.samples))
    return narrow, narrow.samples


def _let_go_of_cells(prep: Prepared) -> None:
    """Drops ``prep``'s cells and what the detectors derived from them (their
    samples: 20 bytes each kept one), once the detectors and the result's tables
    have read them; the wait states that follow read the trace's samples."""
    prep.cells = {}
    prep.derived.clear()


def _class_label(
    parsed: SegmentKey, start_label: Optional[str], end_label: Optional[str]
) -> str:
    """``FROM -> TO``, and for one side of a class split by duration the side (e.g.
    "[above 2.4 ms]"); the raw key where the ends are not parsed."""
    if not start_label:
        return parsed.key
    return f"{start_label} -> {end_label}{parsed.side()}"


def _segment_row(
    seg_id: str,
    parsed: SegmentKey,
    cells: list[Cell],
    total_ns: float,
    symbols: dict,
    labels: Optional[tuple[str, str]],
) -> SegmentClass:
    """One class of analysis.json's ``segments``: its call sites (named where
    addr2line could; ``labels``: FROM and TO where distinct_ends tells them apart
    from another class's), sample counts, median, total time and cache state."""
    # The class's kept samples in one array, its median taken in place: one copy of
    # them (the largest class is much of the trace), not a concatenation and a copy
    # for the median beside it.
    kept = np.empty(sum(c.n for c in cells))
    at = 0
    for c in cells:
        kept[at : at + c.n] = c.samples_ns
        at += c.n
    start: Optional[Symbol] = symbols.get(parsed.start) if parsed.start else None
    end: Optional[Symbol] = symbols.get(parsed.end) if parsed.end else None
    start_label = start.label if start else None
    end_label = end.label if end else None
    if labels is not None:
        start_label, end_label = labels
    states = Counter(c.state.label for c in cells if c.state is not None)
    contexts = [c.context_bytes for c in cells if c.context_bytes is not None]
    return SegmentClass(
        id=seg_id,
        key=parsed.key,
        from_=start_label,
        to=end_label,
        label=_class_label(parsed, start_label, end_label),
        from_site=start.to_json() if start else None,
        to_site=end.to_json() if end else None,
        n=int(sum(c.raw_n for c in cells)),
        n_kept=int(kept.size),
        os_noise_removed=int(sum(c.os_info.n_removed for c in cells)),
        n_ranks=len(cells),
        median_ns=float(np.median(kept, overwrite_input=True)) if kept.size else None,
        total_ns=total_ns,
        # The cache state its cells were judged with (the most common one; per rank
        # in cache_states) and the context that chose it.
        context_bytes=int(np.median(contexts)) if contexts else None,
        cache_state=states.most_common(1)[0][0] if states else None,
        cache_states=dict(sorted(states.items())),
    )


def _segment_table(
    totals: np.ndarray,
    order: list[int],
    parsed: list[SegmentKey],
    prep: Prepared,
    symbols: dict,
) -> list[SegmentClass]:
    """analysis.json's ``segments``, in ``order`` (by total time; ``parsed``: their
    keys, in that order; ``totals``: each class's compute time, class_totals)."""
    by_segment: dict[int, list[Cell]] = {}
    for (seg, _), cell in sorted(prep.cells.items()):
        by_segment.setdefault(seg, []).append(cell)
    labels = distinct_ends(parsed, symbols)
    return [
        _segment_row(
            prep.segment_ids[seg],
            key,
            by_segment.get(seg, []),
            float(totals[seg]),
            symbols,
            labels.get(i),
        )
        for i, (seg, key) in enumerate(zip(order, parsed))
    ]


def _resolution(judgements: list[Judgement]) -> dict[str, float]:
    """Segment id -> what the run could tell in that class: the half-width of the
    widest 95 % interval of a rank's excess over the blocks among its tested ranks
    (0.02: a rank 2 % slower in it is at the edge of what the blocks resolve). A
    class none of whose ranks was tested has none (a tested cell's interval is two of
    its blocks' shifts, finite)."""
    out: dict[str, float] = {}
    for j in judgements:
        if j.excess_ci_rel is None:
            continue
        half = (j.excess_ci_rel[1] - j.excess_ci_rel[0]) / 2
        out[j.segment] = max(out.get(j.segment, 0.0), half)
    return out


def _rank_verdict(
    statuses: Counter, broken: bool, calibrated: bool, kinds: list[str], shared: bool
) -> str:
    if broken:
        return "unreadable"
    if kinds:
        return ", ".join(k.replace("_", " ") for k in kinds)
    if shared:  # what it showed is time-slicing (perfvar.verdict.time_slicing)
        return "shared cpu"
    if statuses["ok"]:
        return "ok"
    if not calibrated:
        return NO_CALIBRATION
    if statuses["below precision"]:
        return "below precision"
    return "not judged"


def _rank_table(
    trace: TraceSamples,
    prep: Prepared,
    meta: RunMeta,
    judgements: list[Judgement],
    anomalies: list[Anomaly],
    noise: dict[int, RankNoise],
    places: dict[int, Place],
) -> list[RankRow]:
    errors = {loc.rank: loc.error for loc in trace.locations if not loc.ok}
    use = cpu_use.of(prep)
    counts: Counter = Counter()
    for (rank, _), mine in use.items():
        counts[rank] += mine.segments
    cpus = cpu_use.rank_cpus(use)
    statuses: dict[int, Counter] = {}
    for j in judgements:
        statuses.setdefault(j.rank, Counter())[j.status] += 1
    kinds: dict[int, list[str]] = {}
    for a in anomalies:
        for r in member_ranks(a.rank, a.evidence) if verdict_kind(a.kind) else []:
            if a.kind not in kinds.setdefault(r, []):
                kinds[r].append(a.kind)
    migrated = {a.rank for a in anomalies if subject(a.kind) == PLACEMENT}
    shared = time_slicing.sharing(anomalies)
    rows = []
    for rank in trace.ranks:
        m = meta.ranks[rank]
        mine = statuses.get(rank, Counter())
        c = m.calibration
        rn = noise.get(rank)
        rows.append(
            RankRow(
                rank=rank,
                host=m.host,
                cpus=m.cpus or cpus.get(rank, []),
                # its socket, for the views by node and socket (None: not known)
                socket=places[rank].socket if rank in places else None,
                t_min_ns=c.t_min_ns,
                t_diff_ns=c.t_diff_ns,
                timer_overhead_ns=c.timer_overhead_ns,
                calibration_status=c.status,
                calibration_source=c.source,
                calibration_states=[st.to_json() for st in c.states],
                calibration_cycles=c.cycles.to_json(),
                n_segments=int(counts.get(rank, 0)),
                verdict=_rank_verdict(
                    mine,
                    rank in errors,
                    m.calibrated,
                    kinds.get(rank, []),
                    rank in shared,
                ),
                anomalies=kinds.get(rank, []),
                migrated=rank in migrated,
                interruptions=rn.count if rn else 0,
                interrupted_ns=rn.lost_ns if rn else 0.0,
                interrupted_fraction=rn.fraction if rn else 0.0,
                # What the counters measured of its time off the CPU (None: no reads).
                cpu_time=(
                    prep.cpu_time[rank].to_json() if rank in prep.cpu_time else None
                ),
                judgements=dict(sorted(mine.items())),
                problem=errors.get(rank) or m.problem,
            )
        )
    return rows


def _described(anomalies: list[Anomaly], segments: list[SegmentClass]) -> list[Finding]:
    """The anomalies as analysis.json holds them, each with its sentence
    (``description``, as the text report prints it)."""
    labels = {s.id: s.label for s in segments}
    out = [a.to_json() for a in anomalies]
    return [Finding.from_json(a | {"description": describe(a, labels)}) for a in out]


def _decomposition(prep: Prepared, order: list[int]) -> dict[str, Any]:
    """Median polish of the cells' median log-durations (perfvar.stats.decompose)."""
    ranks = sorted({r for _, r in prep.cells})
    matrix = np.full((len(order), len(ranks)), np.nan)
    for i, seg in enumerate(order):
        for j, rank in enumerate(ranks):
            cell = prep.cells.get((seg, rank))
            if cell is not None and cell.n >= 2:
                matrix[i, j] = cell.log_median
    dec = decompose.median_polish(matrix)
    return decompose.to_json(dec, [prep.segment_ids[g] for g in order], ranks)


def judged_classes(trace: TraceSamples) -> tuple[TraceSamples, dict[int, list[str]]]:
    """``trace`` with its classes as the serial analysis judges them, and its families
    (representative segment -> member keys; perfvar.read.families): classes that
    differ only by the helper a rank calls (which neighbour) merged into one, and a
    class whose segments are two kinds of work far apart in duration (a loop over MPI
    calls inside one helper) split in two (perfvar.read.modes). A parallel analysis's
    parts make their cells on the classes as recorded (perfvar.partition.cells_as_judged
    brings them to these)."""
    merged, families = merge_families(trace)
    return split_modes(merged), families


def _machine_file(path: Optional[str]) -> Optional[tuple[dict, str]]:
    """(document, path) of a `perfvar calibrate --json` file, None without one."""
    return (read_file(path), path) if path is not None else None


def _read_serial(
    directory: str,
    paper_check: bool,
    progress: Progress,
    machine: Optional[tuple[dict, str]] = None,
) -> tuple[TraceSamples, RunMeta, dict[int, list[str]], None, None, None]:
    """The whole trace in this process: (trace with its classes as judged, judged
    metadata, families: representative segment -> member keys, no cells yet, no CPU
    use, no parts). ``machine``: a calibrate file (document, path) for ranks with no
    t_min/t_diff on their host."""
    trace, families = judged_classes(read_trace(directory))
    progress.step(
        "checking the calibration" if paper_check else "reading the calibration"
    )
    meta = calibration_ranks.judged_meta(directory, trace.ranks, paper_check, machine)
    return trace, meta, families, None, None, None


def _read_in_parts(
    directory: str,
    eng: Any,
    ranks: list[int],
    paper_check: bool,
    progress: Progress,
    machine: Optional[tuple[dict, str]] = None,
) -> Optional[tuple[TraceSamples, RunMeta, dict[int, list[str]], dict, dict, list]]:
    """The trace read, judged and filtered in parts by rank on ``eng``'s processes:
    (trace with its classes as judged, metadata, families, the parts' cells for those
    classes, their CPU use, the parts: where their samples are in the trace); None
    on the MPI processes that do not report.
    ``machine``: as _read_serial's."""
    progress.step(f"reading, judging and filtering in {eng.size} processes")
    blocks = partition.split(ranks or trace_ranks(directory), eng.size)
    tasks = [partition.PartTask(directory, b, paper_check) for b in blocks]
    # Under MPI each process keeps its parts for the wait states (partition.Calls),
    # and their samples' context: only their timing travels.
    mpi = eng.kind == "mpi"
    parts = eng.map(
        partition.analyse_part,
        tasks,
        keep=mpi,
        split=partition.split_context if mpi else None,
    )
    if parts is None:
        return None
    trace = partition.merge(directory, parts)
    meta = read_meta(directory, trace.ranks)
    judged = {r: j for p in parts for r, j in p.judged.items()}
    calibration_ranks.record(
        directory, {k: v for p in parts for k, v in p.made.items()}
    )
    calibration_ranks.apply(meta, judged)
    borrowers = calibration_ranks.lend_missing(meta, machine)  # all ranks: not in parts
    judged_trace, families = judged_classes(trace)
    context, let_go = partition.context_rows(eng, parts)
    cells = partition.cells_as_judged(
        trace,
        judged_trace,
        {k: v for p in parts for k, v in p.cells.items()},
        meta,
        context,
    )
    let_go()
    cells = with_states_of(cells, meta, borrowers)
    use = dict(sorted((k, v) for p in parts for k, v in p.cpu_use.items()))
    for p in parts:  # kept for where their rows are (partition.Calls), not the rest
        p.cells, p.cpu_use = {}, {}
    return judged_trace, meta, families, cells, use, parts


def analyze(
    directory: str,
    alpha: float = 0.05,
    symbolize_sites: bool = True,
    peers: str = "robust",
    min_samples: int = 8,
    jobs: int = 1,
    paper_check: bool = True,
    floors: Optional[dict[str, float]] = None,
    progress: Optional[Progress] = None,
    on_prepared: Optional[Callable[[Prepared], None]] = None,
    min_cost: float = DEFAULT_MIN_COST,
    calibration_file: Optional[str] = None,
) -> Optional[Analysis]:
    """Analyse a perfvar trace directory; returns the analysis.json content
    (perfvar.result.Analysis; None on the MPI processes other than rank 0, which
    only compute parts).

    ``alpha``: false discovery rate of each detector's family of tests;
    ``symbolize_sites``: run addr2line on call sites; ``peers``: "robust" or "all"
    (see perfvar.detect.slow_segment); ``min_samples``: filtered samples a (segment,
    rank) needs to be judged; ``jobs``: local processes (perfvar.parallel: under mpiexec
    the MPI processes instead); ``paper_check``:
    t_min/t_diff by the paper's statistics over the stored calibration samples (else
    the C search's estimates); ``floors``: DetectParams floors to override
    (segment_floor, core_floor, noise_floor, phase_floor; relative);
    ``progress``: told each step (perfvar.progress); ``on_prepared``: called once
    with the filtered cells, for reports that plot the samples (report_html; the
    cells are then held to the end, else let go once the detectors ran);
    ``min_cost``: the delay cost, as a share of wall time x ranks, a finding needs
    to be a headline finding (perfvar.verdict.headline; the others are minor);
    ``calibration_file``: a `perfvar calibrate --json` file of the machine, whose
    t_min/t_diff judge the ranks that have none of their own or from their host
    (perfvar.calibration.machine_file).
    """
    progress = progress or Progress.off()
    machine = _machine_file(calibration_file)  # first: a wrong path fails at once
    progress.step("reading the trace")
    eng = engine(jobs)
    if eng.reports:
        ensure_trace(directory)  # a job that died: its trace rebuilt from the records
    eng.share(None)  # the others read only once the trace is whole
    ranks = trace_ranks(directory) if eng.kind == "processes" else []
    if eng.kind == "processes" and len(ranks) < PARALLEL_MIN_RANKS:
        eng = engine(1)
    ended = endings_json(read_endings(directory)) if eng.reports else None
    if eng.kind == "serial":
        read = _read_serial(directory, paper_check, progress, machine)
    else:
        read = _read_in_parts(directory, eng, ranks, paper_check, progress, machine)
        if read is None:  # an MPI process that does not report: its calls serve
            partition.serve_calls(eng)
            return None
    calls = partition.Calls(eng, read[-1])
    # Under MPI the other processes keep their parts of the calls until closed.
    try:
        trace, meta, families, cells, use, _ = read
        del read  # its trace would keep the whole samples alive once narrowed below
        order = trace.class_order()
        segment_ids = {seg: f"S{i}" for i, seg in enumerate(order)}
        prep = prepare(trace, meta, segment_ids, progress=progress, cells=cells)
        del cells
        prep.cpu_use = use
        trace, prep.samples = _timing_only(trace, prep)
        # Before the detectors' derived data: its temporaries (the classes and the
        # durations as whole arrays, 16 bytes a sample) beside theirs were the peak.
        totals = class_totals(trace.samples, len(trace.segments))
        metrics = cpu_time.after_start(
            trace.metrics
        )  # the reads of the run, not its start
        ticks_per_ns = trace.timer_resolution_hz / 1e9
        prep.cpu_time = cpu_time.of_reads(metrics, trace.metric_names, ticks_per_ns)
        prep.counters = cpu_time.reads_by_rank(
            metrics, trace.metric_names, trace.trace_ns
        )
        prep.work = work.of_reads(
            metrics, trace.metric_names, trace.samples, ticks_per_ns
        )
        prep = with_probes(prep, trace, meta)
        if on_prepared is not None:
            on_prepared(prep)
        params = DetectParams(
            alpha=alpha, min_samples=min_samples, peers=peers, **(floors or {})
        )
        progress.step("detectors")
        anomalies, judgements = run_all(prep, params)
        progress.step("naming call sites")
        parsed = [parse_segment_key(trace.segments[seg]) for seg in order]
        sites = [site for k in parsed for site in (k.start, k.end) if site is not None]
        symbols = symbolize(sites, enabled=symbolize_sites)
        # What the result takes of the cells' samples, taken before they are let go.
        noise = rank_noise(prep)
        segments = _segment_table(totals, order, parsed, prep, symbols)
        decomposition = _decomposition(prep, order)
        resolution = _resolution(judgements)
        for seg, row in zip(order, segments):
            row.family = families.get(seg, [row.key])
            row.resolution_rel = resolution.get(row.id)
        if on_prepared is None:  # else report.html plots them once the result is made
            _let_go_of_cells(prep)
        # What the detectors and the cells freed, back to the system before this
        # process's timeline of calls is built beside the samples (perfvar.heap).
        heap.give_back()
        progress.step("wait states and delay costs")
        calls.take(trace)
        # The samples' ranks, threads and starts serve the timelines alone; their
        # classes and durations stay to the end, beside this process's calls and
        # their wait states.
        trace, prep.samples = _narrowed(trace, durations_only)
        parts = calls.build(trace)
        # A rank's socket: the one all the CPUs it may run on share (None: unbound).
        places = {
            r: Place(m.host, m.topology.place()[0] if m.topology else None)
            for r, m in meta.ranks.items()
        }
        ranked = rank_findings(
            anomalies,
            trace,
            prep.segment_ids,
            min_cost,
            alpha,
            min_samples,
            places,
            parts,
        )
        del parts  # the calls' arrays: the result keeps the wait states' summary
        anomalies = ranked.anomalies  # the headline verdicts by cost, then information
        neighbours.attach(anomalies + ranked.minor, meta.ranks)
        ranks = _rank_table(trace, prep, meta, judgements, anomalies, noise, places)
        run_params = Params(
            min_samples=min_samples,
            peers=peers,
            alpha_meaning="false discovery rate (Benjamini-Hochberg) per detector",
            segment_floor=params.segment_floor,
            core_floor=params.core_floor,
            noise_floor=params.noise_floor,
            phase_floor=params.phase_floor,
            min_cost=min_cost,
            min_samples_os_filter=MIN_SAMPLES_OS,
            # How it ran (the one entry a parallel run may differ in).
            engine=eng.describe(),
            os_filter=f"isolation forest of {N_ESTIMATORS} trees, seed "
            f"{RANDOM_STATE}, beta search from -0.6 in -0.01 steps (paper 5.4.2)",
        )
        summary = _summary(
            trace, totals, order, segment_ids, judgements, ranked, families
        )
        summary.ended_early_ranks = ended["ended_early_ranks"]
        return Analysis(
            format=FORMAT,
            generated_by=GENERATED_BY,
            trace=os.path.abspath(directory),
            alpha=alpha,
            params=run_params,
            timer_resolution_hz=trace.timer_resolution_hz,
            clock=meta.clock,
            run=meta.run,
            ranks=ranks,
            segments=segments,
            kinds=kinds_json(),
            anomalies=_described(anomalies, segments),
            minor=_described(ranked.minor, segments),
            consequences=[Consequence.from_json(c) for c in ranked.consequences],
            wait_states=ranked.waits,
            judgements=[JudgementRow.from_json(j.to_json()) for j in judgements],
            decomposition=decomposition,
            ended=Ended.from_json(ended),
            summary=summary,
            warnings=trace.warnings + meta.notes,
        )
    finally:
        calls.close()


def _summary(
    trace: TraceSamples,
    seg_totals: np.ndarray,
    order: list[int],
    segment_ids: dict[int, str],
    judgements: list[Judgement],
    ranked: Any,
    families: dict[int, list[str]],
) -> Summary:
    """analysis.json's summary: counts of ranks, classes and judgements, the judged
    share of compute time, and the ranks of each kind of finding (``ranked``:
    perfvar.verdict.headline.rank_findings' result; ``seg_totals``: each class's
    compute time, class_totals)."""
    anomalies = ranked.anomalies
    judged = {j.segment for j in judgements if j.status in ("ok", "slow")}

    def named(*kinds: str) -> list[int]:
        """The ranks findings of ``kinds`` name (a node's or socket's: its members)."""
        return sorted(
            {
                r
                for a in anomalies
                if a.kind in kinds
                for r in member_ranks(a.rank, a.evidence)
            }
        )

    return Summary(
        n_ranks=len(trace.ranks),
        unreadable_ranks=trace.broken_ranks,
        n_segment_classes=len(order),
        n_segment_classes_judged=len(judged),
        # Families: classes merged because they differ only by helper frames.
        n_segment_families=len(families),
        judged_compute_share=judged_share(
            seg_totals, {seg for seg in order if segment_ids[seg] in judged}
        ),
        judgements=dict(sorted(Counter(j.status for j in judgements).items())),
        anomalous_ranks=named(*naming_kinds()),
        # Ranks with a shift that came and went: reported, not named anomalous.
        transient_ranks=named(*transient_kinds()),
        # Ranks that do more work than their peers: the code's, not named anomalous.
        imbalance_ranks=named(*code_kinds()),
        minor_ranks=sorted(
            {r for a in ranked.minor for r in member_ranks(a.rank, a.evidence)}
            - set(named(*naming_kinds()))
        ),
        consequence_ranks=sorted({c["rank"] for c in ranked.consequences}),
        cost_known=ranked.cost_known,
        kind_ranks={key: named(kind) for key, kind in summary_keys().items()},
    )
