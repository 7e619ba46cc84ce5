"""Write the analysis result as JSON (DIR/analysis.json by default).

Top-level keys: ``format`` (the layout's version, perfvar.result.FORMAT),
``generated_by``, ``trace``, ``alpha``, ``params``,
``timer_resolution_hz``, ``run``, ``ranks``, ``segments``, ``kinds`` (what each
kind of finding is: perfvar.detect.KINDS), ``anomalies`` and ``minor`` (each with its
``description``), ``judgements``, ``summary``, ``warnings``. Times are ns (keys end
in ``_ns``). Non-finite floats are written as null so the file is strict JSON. Raises
OSError when the file cannot be written.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from typing import Any, Optional

import numpy as np

from perfvar.result import Analysis


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def default_path(result: Analysis) -> str:
    """DIR/analysis.json for the analysed trace directory."""
    return os.path.join(result.trace, "analysis.json")


def write_json(result: Analysis, path: Optional[str] = None) -> str:
    """Write ``result`` to ``path`` (default DIR/analysis.json); returns the path."""
    path = path or default_path(result)
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(_lines(_clean(result.to_json())))
    os.replace(tmp, path)
    return path


def _lines(doc: dict) -> Iterator[str]:
    """The document one top-level key a line, and a list of records (the ranks,
    the judgements, the findings) one record a line: what grep and a pager show
    whole, each line written by json's C encoder (an indented document goes through
    its Python one, seconds at thousands of ranks)."""
    encode = json.JSONEncoder(allow_nan=False).encode
    yield "{\n"
    last = len(doc) - 1
    for i, (key, value) in enumerate(doc.items()):
        end = ",\n" if i < last else "\n"
        if (
            isinstance(value, list)
            and value
            and all(isinstance(v, dict) for v in value)
        ):
            yield f" {encode(key)}: [\n"
            yield ",\n".join(f"  {encode(v)}" for v in value)
            yield f"\n ]{end}"
        else:
            yield f" {encode(key)}: {encode(value)}{end}"
    yield "}\n"
