"""Dataclasses that read and write themselves as JSON objects, key for key.

A :class:`Record` subclass is a dataclass whose fields are the keys of its JSON
object, in declaration order (``key`` metadata renames one, e.g. ``from``, a Python
keyword). Two field options keep the objects analysis.json has always written:
``omit_none`` (the key is written only when the value is not None: a window's ends)
and ``splice`` (a ``dict`` field whose items are written in the field's place: keys
that come from a table others extend, such as the summary's ranks of each kind of
finding; reading, every key no other field claims goes there). Fields typed as a
Record, ``list[Record]``, ``Optional[Record]`` or ``dict[str, Record]`` are read
into those types; everything else is kept as JSON holds it. Values are written as
they are held (the writer, perfvar.report.json, makes them strict JSON). Pure;
thread-safe (the per-class plans are built once, idempotently).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, ClassVar, Optional

Json = dict[str, Any]


def field(
    *, key: Optional[str] = None, omit_none: bool = False, splice: bool = False, **kw
) -> Any:
    """A dataclass field with its JSON options (see the module docstring)."""
    meta = {"key": key, "omit_none": omit_none, "splice": splice}
    return dataclasses.field(metadata=meta, **kw)


def _reader(hint: Any) -> Optional[Callable[[Any], Any]]:
    """How to read a value of type ``hint`` from JSON; None: as it is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_json
    if origin is typing.Union:  # Optional[X]
        inner = [_reader(a) for a in args if a is not type(None)]
        read = inner[0] if len(inner) == 1 else None
        return (lambda v: None if v is None else read(v)) if read else None
    if origin is list and args:
        item = _reader(args[0])
        return (lambda v: [item(x) for x in v]) if item else None
    if origin is dict and len(args) == 2:
        value = _reader(args[1])
        return (lambda v: {k: value(x) for k, x in v.items()}) if value else None
    return None


def _dump(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: _dump(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class _Plan:
    """One field of a Record class: attribute, JSON key, options, reader."""

    name: str
    key: str
    omit_none: bool
    splice: bool
    read: Optional[Callable[[Any], Any]]
    nested: bool  # its values may hold Records (written through _dump)


class Record:
    """Base of the result's dataclasses: ``to_json()`` and ``from_json()``."""

    _plans: ClassVar[dict[type, tuple[_Plan, ...]]] = {}

    @classmethod
    def _plan(cls) -> tuple[_Plan, ...]:
        plan = Record._plans.get(cls)
        if plan is None:
            hints = typing.get_type_hints(cls)
            plan = tuple(
                _Plan(
                    f.name,
                    f.metadata.get("key") or f.name,
                    f.metadata.get("omit_none", False),
                    f.metadata.get("splice", False),
                    _reader(hints[f.name]),
                    _reader(hints[f.name]) is not None,
                )
                for f in dataclasses.fields(cls)
            )
            Record._plans[cls] = plan
        return plan

    def to_json(self) -> Json:
        """The JSON object, keys in field order; nested Records as objects."""
        out: Json = {}
        for p in self._plan():
            value = getattr(self, p.name)
            if p.splice:
                out.update(_dump(value) if p.nested else value)
            elif not (p.omit_none and value is None):
                out[p.key] = _dump(value) if p.nested else value
        return out

    @classmethod
    def from_json(cls, doc: Json) -> Any:
        """The Record of a JSON object; a key it lacks takes the field's default
        (TypeError when the field has none)."""
        plan = cls._plan()
        kwargs: dict[str, Any] = {}
        claimed = {p.key for p in plan if not p.splice}
        for p in plan:
            if p.splice:
                kwargs[p.name] = {k: v for k, v in doc.items() if k not in claimed}
            elif p.key in doc:
                value = doc[p.key]
                kwargs[p.name] = p.read(value) if p.read else value
        return cls(**kwargs)
