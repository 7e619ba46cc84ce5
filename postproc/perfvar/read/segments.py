"""Parse perfvar segment keys (OTF2 region canonical names) and group them in families.

A compute segment runs from the exit of one MPI call to the entry of the next one on
the same thread. Its region's canonical name is

    perfvar:segment:<FROM>;<TO>

and each end is ``<FN>@<module path>+0x<hex>``, followed at call-path depth > 1
(PERFVAR_CALLPATH) by ``<<module path>+0x<hex>`` for each caller frame, innermost
first. FROM is the MPI call whose exit starts the segment, TO the call whose entry ends
it. Each offset is a return address relative to the module's load bias, in bytes (see
docs/trace-format.md). The analysis may split a class of two kinds of work by duration
(perfvar.read.modes): each part's key is the class's followed by ``#below:<ns>`` or
``#above:<ns>``. Pure functions, no I/O, thread-safe.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Optional

from perfvar._spec import TraceName
from perfvar.units import fmt_ns

SEGMENT_PREFIX = TraceName.SEGMENT_PREFIX
USER_PREFIX = TraceName.USER_PREFIX

# One end: FN@MODULE+0xHEX; MODULE may contain '@' or '+', so the offset is taken
# from the last "+0x" and the function from the first '@'.
_END_RE = re.compile(r"^(?P<fn>[^@;]+)@(?P<module>.+)\+0x(?P<off>[0-9A-Fa-f]+)$")
# A call-path end: FN@ then frames MODULE+0xHEX separated by '<'.
_FN_RE = re.compile(r"^(?P<fn>[^@;]+)@(?P<rest>.+)$")
_FRAME_RE = re.compile(r"(?P<module>.+?)\+0x(?P<off>[0-9A-Fa-f]+)(?:<|$)")
# The two ends are split at the first ';' that follows "+0x<hex>".
_KEY_RE = re.compile(
    r"^(?P<a>.+?\+0x[0-9A-Fa-f]+)" + re.escape(TraceName.SITE_SEPARATOR) + r"(?P<b>.+)$"
)
# A duration mode's tag at the end of a key (perfvar.read.modes).
_MODE_RE = re.compile(r"^(?P<key>.+)#(?P<side>below|above):(?P<ns>[0-9]+)$")


@dataclass(frozen=True)
class Frame:
    """One frame of a call path: module path and return-address offset (bytes from
    the module's load bias)."""

    module: str
    offset: int

    @property
    def module_basename(self) -> str:
        return os.path.basename(self.module)

    def fallback_site(self) -> str:
        """``<module basename>+0x<offset>``, used when no symbol is available."""
        return f"{self.module_basename}+0x{self.offset:x}"


@dataclass(frozen=True)
class CallSite:
    """One end of a segment: MPI function name, module path, return-address offset,
    and at call-path depth > 1 the callers' frames above it (innermost first)."""

    function: str
    module: str
    offset: int  # bytes from the module's load bias (a return address)
    callers: tuple[Frame, ...] = ()

    @property
    def module_basename(self) -> str:
        return os.path.basename(self.module)

    @property
    def frames(self) -> tuple[Frame, ...]:
        """The call's own frame (the MPI call's return address), then its callers."""
        return (Frame(self.module, self.offset),) + self.callers

    def fallback_site(self) -> str:
        """``<module basename>+0x<offset>``, used when no line info is available."""
        return f"{self.module_basename}+0x{self.offset:x}"


@dataclass(frozen=True)
class SegmentKey:
    """A parsed segment key; ``start``/``end`` are None when the key is malformed."""

    key: str
    start: Optional[CallSite]  # FROM: the MPI call whose exit starts the segment
    end: Optional[CallSite]  # TO: the MPI call whose entry ends the segment
    # one side of a class split by duration (perfvar.read.modes): ("below" or
    # "above", the threshold in ns); None for a whole class
    mode: Optional[tuple[str, float]] = None

    def side(self) -> str:
        """ " [above 3.4 ms]" for one side of a class split by duration, "" for a
        whole class: what a class's label adds."""
        return f" [{self.mode[0]} {fmt_ns(self.mode[1])}]" if self.mode else ""


def mode_key(key: str, side: str, threshold_ns: float) -> str:
    """The key of one side ("below" or "above") of a class split at ``threshold_ns``."""
    return f"{key}#{side}:{threshold_ns:.0f}"


def is_segment(canonical_name: str) -> bool:
    """True if an OTF2 region canonical name denotes a perfvar compute segment."""
    return canonical_name.startswith(SEGMENT_PREFIX)


def parse_call_site(text: str) -> Optional[CallSite]:
    """Parse ``FN@MODULE+0xHEX`` and its caller frames ``<MODULE+0xHEX``...;
    returns None if the text does not match."""
    m = _END_RE.match(text)
    if m is not None and "<" not in m.group("module"):
        return CallSite(m.group("fn"), m.group("module"), int(m.group("off"), 16))
    m = _FN_RE.match(text)
    if m is None:
        return None
    rest, at, frames = m.group("rest"), 0, []
    while at < len(rest):
        f = _FRAME_RE.match(rest, at)
        if f is None:
            return None
        frames.append(Frame(f.group("module"), int(f.group("off"), 16)))
        at = f.end()
    if not frames or rest.endswith("<"):
        return None
    first = frames[0]
    return CallSite(m.group("fn"), first.module, first.offset, tuple(frames[1:]))


def segment_key(start: str, end: str) -> str:
    """The canonical key of the segment between call sites ``start`` and ``end``
    (``FN@MODULE+0xOFF``), as the trace writer names its region (TraceName)."""
    return f"{SEGMENT_PREFIX}{start}{TraceName.SITE_SEPARATOR}{end}"


def parse_segment_key(key: str) -> SegmentKey:
    """Parse a canonical segment key.

    Never raises: a key that does not follow the format gives a SegmentKey whose
    ``start`` and ``end`` are None (the raw key is then used as its label).
    """
    tag = _MODE_RE.match(key)
    mode = (tag.group("side"), float(tag.group("ns"))) if tag else None
    base = tag.group("key") if tag else key
    body = base[len(SEGMENT_PREFIX) :] if base.startswith(SEGMENT_PREFIX) else base
    m = _KEY_RE.match(body)
    if m is None:
        return SegmentKey(key, None, None, mode)
    start, end = parse_call_site(m.group("a")), parse_call_site(m.group("b"))
    if start is None or end is None:
        return SegmentKey(key, None, None, mode)
    return SegmentKey(key, start, end, mode)


def _helper_frames(a: CallSite, b: CallSite) -> Optional[int]:
    """How many innermost frames two ends differ in when they agree above them (0:
    equal ends); None when their MPI functions or depths differ, or when no outer
    frame agrees (the ends are not the same call path through other helpers)."""
    if a.function != b.function or len(a.frames) != len(b.frames):
        return None
    fa, fb = a.frames, b.frames
    differ = 0
    for i in range(len(fa)):
        if fa[i] != fb[i]:
            differ = i + 1
    return differ if differ < len(fa) else None


def _related(a: SegmentKey, b: SegmentKey) -> bool:
    """Both ends of a and b agree once their innermost differing frames are dropped,
    and at least one end differs."""
    if None in (a.start, a.end, b.start, b.end):
        return False
    d_start = _helper_frames(a.start, b.start)  # type: ignore[arg-type]
    d_end = _helper_frames(a.end, b.end)  # type: ignore[arg-type]
    return d_start is not None and d_end is not None and (d_start or d_end) > 0


def segment_families(
    keys: Sequence[str], ranks: Sequence[Collection[int]]
) -> list[int]:
    """Group segment classes that differ only in the application's helper routines
    (e.g. which neighbour a rank sends to) into families judged as one class.

    ``keys[i]`` is class i's canonical key, ``ranks[i]`` the ranks that have it.
    Classes present on fewer ranks than the most widespread class are merged when
    their keys agree once the innermost differing frames of each end are dropped
    (at least one caller frame must agree, so depth 1 never merges); the merge is
    transitive. Returns the family index of each class: families are numbered
    0, 1, ... in the order of their first class; a class on its own is its own
    family. Pure.
    """
    n = len(keys)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    widest = max((len(set(r)) for r in ranks), default=0)
    partial = [i for i in range(n) if len(set(ranks[i])) < widest]
    parsed = {i: parse_segment_key(keys[i]) for i in partial}
    for x, i in enumerate(partial):
        for j in partial[x + 1 :]:
            if root(i) != root(j) and _related(parsed[i], parsed[j]):
                parent[root(j)] = root(i)
    number: dict[int, int] = {}
    return [number.setdefault(root(i), len(number)) for i in range(n)]
