"""Parse perfvar segment keys (OTF2 region canonical names).

A compute segment runs from the exit of one MPI call to the entry of the next one on
the same thread. Its region's canonical name is

    perfvar:segment:<FROM_FN>@<module path>+0x<hex>;<TO_FN>@<module path>+0x<hex>

FROM is the MPI call whose exit starts the segment, TO the call whose entry ends it.
Each offset is a return address relative to the module's load bias, in bytes (see
docs/trace-format.md). Pure functions, no I/O, thread-safe.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Optional

SEGMENT_PREFIX = "perfvar:segment:"
USER_PREFIX = "perfvar:user:"

# One end: FN@MODULE+0xHEX; MODULE may contain '@' or '+', so the offset is taken
# from the last "+0x" and the function from the first '@'.
_END_RE = re.compile(r"^(?P<fn>[^@;]+)@(?P<module>.+)\+0x(?P<off>[0-9A-Fa-f]+)$")
# The two ends are split at the first ';' that follows "+0x<hex>".
_KEY_RE = re.compile(r"^(?P<a>.+?\+0x[0-9A-Fa-f]+);(?P<b>.+)$")


@dataclass(frozen=True)
class CallSite:
    """One end of a segment: MPI function name, module path, return-address offset."""

    function: str
    module: str
    offset: int  # bytes from the module's load bias (a return address)

    @property
    def module_basename(self) -> str:
        return os.path.basename(self.module)

    def fallback_site(self) -> str:
        """``<module basename>+0x<offset>``, used when no line info is available."""
        return f"{self.module_basename}+0x{self.offset:x}"


@dataclass(frozen=True)
class SegmentKey:
    """A parsed segment key; ``start``/``end`` are None when the key is malformed."""

    key: str
    start: Optional[CallSite]  # FROM: the MPI call whose exit starts the segment
    end: Optional[CallSite]  # TO: the MPI call whose entry ends the segment


def is_segment(canonical_name: str) -> bool:
    """True if an OTF2 region canonical name denotes a perfvar compute segment."""
    return canonical_name.startswith(SEGMENT_PREFIX)


def parse_call_site(text: str) -> Optional[CallSite]:
    """Parse ``FN@MODULE+0xHEX``; returns None if the text does not match."""
    m = _END_RE.match(text)
    if m is None:
        return None
    return CallSite(m.group("fn"), m.group("module"), int(m.group("off"), 16))


def parse_segment_key(key: str) -> SegmentKey:
    """Parse a canonical segment key.

    Never raises: a key that does not follow the format gives a SegmentKey whose
    ``start`` and ``end`` are None (the raw key is then used as its label).
    """
    body = key[len(SEGMENT_PREFIX) :] if key.startswith(SEGMENT_PREFIX) else key
    m = _KEY_RE.match(body)
    if m is None:
        return SegmentKey(key, None, None)
    start, end = parse_call_site(m.group("a")), parse_call_site(m.group("b"))
    if start is None or end is None:
        return SegmentKey(key, None, None)
    return SegmentKey(key, start, end)
