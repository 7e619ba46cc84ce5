"""Whether a JSON file of DIR/perfvar/ has the keys and types its table in src/spec/contracts.py
gives (perfvar._spec: RANK_JSON, RUN_JSON, ENDED_JSON): every key of each object, of its JSON
type, and no other key. Used by tests/python/test_spec.py on real and made-up files and by
check_trace.py on the files a run or a recovery wrote. Pure functions; thread-safe.
"""

from __future__ import annotations


def objects(doc: dict, path: str) -> list[dict]:
    """The objects at `path` of doc: "" the document, "a.b" a nested object, "a[]" each
    object of the array a."""
    nodes = [doc]
    for part in path.split(".") if path else []:
        each = part.endswith("[]")
        key = part[:-2] if each else part
        found = []
        for node in nodes:
            value = node.get(key)
            if each and isinstance(value, list):
                found += [v for v in value if isinstance(v, dict)]
            elif not each and isinstance(value, dict):
                found.append(value)
        nodes = found
    return nodes


JSON_TYPES = {
    "null": lambda v: v is None,
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def object_problems(obj: dict, where: str, keys, params: dict) -> list[str]:
    out, known = [], set()
    for key, jtype, when in keys:
        key = key.format(**params)
        known.add(key)
        if key not in obj:
            if when is None or obj.get(when[0]) == when[1]:
                out.append(f"{where}: no {key}")
        elif not any(JSON_TYPES[t](obj[key]) for t in jtype.split("|")):
            out.append(f"{where}.{key}: {obj[key]!r} is not {jtype}")
    return out + [f"{where}: {k} is not in the spec" for k in obj if k not in known]


def problems(doc: dict, table: dict) -> tuple[list[str], set[str]]:
    """What in ``doc`` differs from ``table`` (one of _spec's *_JSON), and the paths that
    held objects."""
    out, seen = [], set()
    for section in table.values():
        for path, params in section["paths"].items():
            for obj in objects(doc, path):
                seen.add(path)
                out += object_problems(obj, path or "top level", section["keys"], params)
    return out, seen
