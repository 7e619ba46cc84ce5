"""Read compute-segment samples from a perfvar OTF2 archive (DIR/traces.otf2).

The global definitions are read with the high-level ``otf2`` reader. Events are read per
location (a broken event file affects only its own location) by the C event loop of
libperfvar_read when it is found (perfvar.read.native, about 15x faster), else through
the low-level ``_otf2`` API with Python callbacks (about 7x faster than the high-level
event iterator); ``PERFVAR_READER=native|python`` forces one. Both give the same
TraceSamples. :func:`read_trace` can read a subset of ranks or locations. Messages the
OTF2 C library prints on its standard error are captured and folded into our error
messages.

Errors: :func:`read_trace` raises :class:`~perfvar.errors.TraceError` with one line
when the directory, the anchor file or the global definitions cannot be read, or when
no location's events can be read. Locations whose event files are missing or corrupt
are excluded and reported in ``TraceSamples.locations`` / ``warnings``. Not thread-safe
(it redirects file descriptor 2 while OTF2 runs).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Optional

import numpy as np

from perfvar.errors import TraceError
from perfvar.read.otf2 import (
    TraceDefinitions,
    _anchor,
    _CStderr,
    _global_definitions,
    _open_reader,
)
from perfvar.read.python_loop import _read_events
from perfvar.read.samples import (
    PROBE_DTYPE,
    SAMPLE_DTYPE,
    LocationRead,
    LocationReport,
    TraceSamples,
)


def read_trace(
    directory: str,
    ranks: Optional[Iterable[int]] = None,
    locations: Optional[Iterable[int]] = None,
) -> TraceSamples:
    """Read the segment samples of DIR/traces.otf2.

    ``ranks``: read only the locations of these ranks (location group ids, see
    :func:`location_rank`); ``locations``: only these OTF2 location ids (see
    :func:`trace_locations`); both: the locations in both. None reads everything.
    Reports, samples and probes keep definition order; a location's thread index is
    its position in its rank whatever is selected. Selecting a rank or location the
    archive does not define, or nothing, raises TraceError.

    The events are read by the native reader (perfvar.read.native, libperfvar_read)
    when it is found, else in Python; ``PERFVAR_READER=python`` or ``native`` forces
    one (``native`` fails when the library is missing). Both give the same result.

    Returns a TraceSamples whose ``samples`` hold the intact locations only. Raises
    TraceError (one line) if nothing usable can be read; see the module docstring.
    """
    from perfvar.read import native as reader_native

    native = reader_native.library()  # validates PERFVAR_READER first
    anchor = _anchor(directory)
    import _otf2

    # The definitions as this process read them already (the analysis asks for the
    # ranks first): reading them through OTF2's callbacks takes seconds at thousands
    # of ranks, and the event loops open the archive themselves.
    defs = _global_definitions(directory)
    chosen = _select(defs, ranks, locations)
    sizes = _event_file_sizes(anchor, chosen)
    whole_read = None  # every location's samples and probes, when read as one
    with _CStderr() as cerr:
        chunk_bytes = _chunk_bytes(anchor, _otf2)
        whole = [size >= chunk_bytes for size in sizes]
        loop = _Loops(anchor, defs, chosen, whole, cerr, _otf2)
        try:
            if native is None:
                read = loop.python(list(range(len(chosen))))
            else:
                read, whole_read = loop.native_first(native, sizes, chunk_bytes)
        finally:
            loop.close()
    return _trace_samples(defs, read, whole_read)


def _chunk_bytes(anchor: str, _otf2: Any) -> int:
    """The archive's event chunk size (bytes), from its anchor file (no definition
    read)."""
    try:
        handle = _otf2.Reader_Open(anchor)
    except Exception:
        return 1 << 20  # OTF2's default, and what perfvar writes
    try:
        return int(_otf2.Reader_GetChunkSize(handle)[0])
    except Exception:
        return 1 << 20
    finally:
        _otf2.Reader_Close(handle)


class _Loops:
    """The chosen locations read by the native loop where it can, by the Python loop
    where it cannot. ``reader``: the Python reader, opened when that loop first
    reads, closed before the native one runs (which opens the archive itself) and
    by :meth:`close`."""

    def __init__(self, anchor, defs, chosen, whole, cerr, _otf2) -> None:
        self.anchor, self.reader, self.defs = anchor, None, defs
        self.chosen, self.whole, self.cerr, self._otf2 = chosen, whole, cerr, _otf2

    def close(self) -> None:
        """Close the Python reader if it is open."""
        reader, self.reader = self.reader, None
        try:
            if reader is not None:
                reader.close()
        except Exception:
            pass

    def python(self, indices: list[int]) -> list:
        """The Python loop over these of the chosen locations."""
        if self.reader is None:
            self.reader = _open_reader(self.anchor, self.cerr)
        return _read_events(
            self.reader.handle,
            self.defs,
            [self.chosen[i] for i in indices],
            [self.whole[i] for i in indices],
            self.cerr,
            self._otf2,
        )

    def native_first(
        self, native: Any, sizes: list[int], chunk_bytes: int
    ) -> tuple[list, Optional[tuple]]:
        """(each chosen location's read, the samples and probes of all when the native
        loop read them as one array in order, else None)."""
        from perfvar.read import native as reader_native

        # OTF2 3.0's reader (Debian's, under the native loop) does not see that a
        # file ending at a chunk boundary was cut there: it decodes its stale buffer
        # again without end. The Python loop's OTF2 says "This is no chunk header!";
        # it reads those (rare: a whole file ends inside its last chunk).
        boundary = [0 < size and size % chunk_bytes == 0 for size in sizes]
        mine = [i for i, b in enumerate(boundary) if b]
        py = self.python(mine) if mine else []
        self.close()  # the native reader opens the archive itself
        rest = [i for i, b in enumerate(boundary) if not b]
        nat = reader_native.read_locations(
            native,
            self.defs,
            [self.chosen[i] for i in rest],
            [self.whole[i] for i in rest],
            self.cerr,
        )
        by_index = dict(zip(mine, py)) | dict(zip(rest, nat.locations))
        declined = [i for i in rest if by_index[i] is None]
        if declined:  # see read_locations: cut files OTF2 3.0 overruns
            by_index |= dict(zip(declined, self.python(declined)))
        read = [by_index[i] for i in range(len(self.chosen))]
        if not mine and not declined:  # all in one array already, in order
            return read, (nat.samples, nat.probes)
        return read, None


def _select(
    defs: TraceDefinitions,
    ranks: Optional[Iterable[int]],
    locations: Optional[Iterable[int]],
) -> list[tuple[int, str, int, int, int]]:
    chosen = defs.locations
    if ranks is not None:
        want = {int(r) for r in ranks}
        missing = sorted(want - {loc[3] for loc in chosen})
        if missing:
            raise TraceError(
                f"{defs.anchor}: no rank {', '.join(map(str, missing))} in the archive"
            )
        chosen = [loc for loc in chosen if loc[3] in want]
    if locations is not None:
        want = {int(x) for x in locations}
        missing = sorted(want - {loc[0] for loc in defs.locations})
        if missing:
            raise TraceError(
                f"{defs.anchor}: no location {', '.join(map(str, missing))} in the "
                "archive"
            )
        chosen = [loc for loc in chosen if loc[0] in want]
    if not chosen:
        raise TraceError(f"{defs.anchor}: no location selected to read")
    return chosen


def _event_file_sizes(
    anchor: str, chosen: list[tuple[int, str, int, int, int]]
) -> list[int]:
    """Per location: the size of its event file in bytes (0 when it is missing)."""
    out = []
    for loc_id, *_ in chosen:
        evt = os.path.join(os.path.dirname(anchor), "traces", f"{loc_id}.evt")
        try:
            out.append(os.path.getsize(evt))
        except OSError:
            out.append(0)
    return out


def _trace_samples(
    defs: TraceDefinitions,
    read: list[LocationRead],
    whole_read: Optional[tuple[np.ndarray, np.ndarray]] = None,
) -> TraceSamples:
    """The TraceSamples of these outcomes; ``whole_read``: their samples and probes
    already in one array each (else they are concatenated)."""
    reports = [report for report, _, _ in read]
    arrays = [arr for _, arr, _ in read if arr is not None]
    probe_arrays = [arr for _, _, arr in read if arr is not None]
    good = [r for r in reports if r.ok]
    if not good:
        first = reports[0]
        raise TraceError(
            f"no readable event data in {os.path.dirname(defs.anchor)}/traces/: none "
            f"of the {len(reports)} locations could be read (rank {first.rank}: "
            f"{first.error})"
        )
    warnings = reading_warnings(reports, defs.segments, defs.threads_per_rank())
    if whole_read is not None:
        samples, probes = whole_read
    else:
        samples = np.concatenate(arrays) if arrays else np.empty(0, dtype=SAMPLE_DTYPE)
        probes = (
            np.concatenate(probe_arrays)
            if probe_arrays
            else np.empty(0, dtype=PROBE_DTYPE)
        )
    return TraceSamples(
        defs.anchor,
        defs.resolution,
        defs.segments,
        samples,
        reports,
        warnings,
        defs.offset,
        probes,
        defs.metric_names,
    )


def reading_warnings(
    reports: list[LocationReport],
    segments: list[str],
    threads: Optional[dict[int, int]] = None,
) -> list[str]:
    """The warnings of TraceSamples for these location reports. ``threads``: the
    number of locations each rank defines (default: counted in ``reports``, right
    when they hold whole ranks); a rank with one is named without its thread."""
    out: list[str] = []
    per_rank: dict[int, int] = {}
    for r in reports:
        per_rank[r.rank] = per_rank.get(r.rank, 0) + 1
    if threads is not None:
        per_rank = {rank: threads.get(rank, n) for rank, n in per_rank.items()}
    for r in reports:
        single = per_rank[r.rank] == 1
        where = f"rank {r.rank}" + ("" if single else f" thread {r.thread}")
        if not r.ok:
            out.append(
                f"{where}: events unreadable, {'rank' if single else 'thread'} "
                f"excluded from the analysis ({r.error})"
            )
            continue
        if r.cut:
            out.append(
                f"{where}: its event file breaks off ({r.cut}); its events up to there "
                "were read"
            )
        elif r.events_defined and r.events_read < r.events_defined:
            out.append(
                f"{where}: read {r.events_read} of {r.events_defined} events "
                "announced in the definitions (trace cut short?)"
            )
        if r.unclosed or r.unmatched_leaves:
            out.append(
                f"{where}: {r.unclosed} Enter without Leave, "
                f"{r.unmatched_leaves} Leave without Enter (ignored)"
            )
    for rank, count in sorted(per_rank.items()):
        if count > 1:
            out.append(
                f"rank {rank}: {count} threads; the slow-segment judgement pools "
                "their samples per segment class"
            )
    if not segments:
        out.append("the archive defines no perfvar:segment regions: nothing to judge")
    return out
