#!/usr/bin/env python3
"""Write both sides of the C/Python contracts from src/spec/contracts.py.

  gen_spec.py --c OUT.h            the C header libperfvar is built with (pv_spec.h)
  gen_spec.py --python OUT.py      the package's perfvar/_spec.py
  gen_spec.py --check-python FILE  exit 1, with a diff, when FILE is not what --python
                                   writes now (ctest spec.python_in_sync)

CMake runs --c at build time (CMakeLists.txt, the perfvar_spec target); _spec.py is
committed, so after editing contracts.py run
``python3 src/spec/gen_spec.py --python postproc/perfvar/_spec.py`` (or build the
spec_python target). Python 3.9 stdlib only; a file is rewritten only when its text
changes, so an unchanged spec rebuilds nothing.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import os
import re
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTICE = "generated from src/spec/contracts.py by src/spec/gen_spec.py: do not edit"


def load_spec():
    """contracts.py as a module, whatever the current directory."""
    loader = importlib.util.spec_from_file_location("contracts", HERE / "contracts.py")
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


def c_string(text: str) -> str:
    """A C string literal of text (ASCII)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\t", "\\t").replace("\n", "\\n") + '"'


def c_char(text: str) -> str:
    return (
        "'" + text.replace("\\", "\\\\").replace("\t", "\\t").replace("'", "\\'") + "'"
    )


def x_macro(name: str, params: str, rows: list[str]) -> list[str]:
    """#define NAME(X) with one X(...) row per line, continued with backslashes."""
    lines = [f"#define {name}(X)"] + [f"    X({row})" for row in rows]
    width = max(len(line) for line in lines) + 1
    out = [line.ljust(width) + "\\" for line in lines[:-1]] + [lines[-1]]
    return [f"/* X({params}) */"] + out


def or_list(names: list[str]) -> str:
    """'a, b or c'."""
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight")


# ---------------------------------------------------------------- C: timers, groups


def c_timers(spec) -> list[str]:
    rows = [f"{e}, {v}, {c_string(n)}, {c_string(u)}" for e, v, n, u in spec.TIMERS]
    return [
        "/* The timers of perfvar_calib.h: PERFVAR_TIMER_<ENUM> = value, its name and unit;",
        " * PV_SPEC_CHECK_TIMERS (where perfvar_calib.h is included) pins the enum to it. */",
        *x_macro("PV_SPEC_TIMERS", "ENUM, value, name, unit", rows),
        f"#define PV_SPEC_TIMER_COUNT {len(spec.TIMERS)}",
        "#define PV_SPEC_TIMER_CHECK_(E, V, N, U) \\",
        "    _Static_assert(PERFVAR_TIMER_##E == (V), "
        + '"PERFVAR_TIMER_" #E ": not as in src/spec/contracts.py");',
        "#define PV_SPEC_CHECK_TIMERS                                                     \\",
        "    PV_SPEC_TIMERS(PV_SPEC_TIMER_CHECK_)                                         \\",
        "    _Static_assert(PERFVAR_TIMER_COUNT == PV_SPEC_TIMER_COUNT,                   \\",
        '                   "perfvar_calib.h has timers src/spec/contracts.py lacks");',
        "",
    ]


def c_groups(spec) -> list[str]:
    rows = [f"{n.upper()}, {c_string(n)}, {int(d)}" for n, d, _ in spec.MPI_GROUPS]
    return [
        "/* MPI function groups, in the order of PERFVAR_BOUNDARIES' bit mask (src/config). */",
        *x_macro("PV_SPEC_MPI_GROUPS", "ENUM, name, traced by default", rows),
        "",
    ]


# ---------------------------------------------------------------- C: struct layouts


def c_decl(field: str, ctype: str) -> str:
    """The declaration of a field of C type ctype ("char[32]": char field[32])."""
    if "[" in ctype:
        base, dim = ctype.split("[", 1)
        return f"{base} {field}[{dim}"
    return f"{ctype} {field}"


def c_generic_type(ctype: str) -> str:
    """The type _Generic sees for a field of ctype (arrays decay to pointers)."""
    return ctype.split("[", 1)[0] + " *" if "[" in ctype else ctype


def c_struct_check(name: str, packed: bool, fields) -> list[str]:
    """PV_SPEC_CHECK_<name>: a mirror of the struct as the spec has it and _Static_asserts
    that the real one (in scope where it is used) has its size, and each field its
    offset, size and type."""
    mirror = f"pv_spec_mirror_{name}"
    attr = " __attribute__((packed))" if packed else ""
    body = [f"    typedef struct{attr} {mirror} {{"]
    body += [f"        {c_decl(f, t)};" for f, t in fields]
    body += [
        f"    }} {mirror};",
        f"    _Static_assert(sizeof({mirror}) == sizeof({name}),",
        f'                   "{name}: not the size src/spec/contracts.py gives");',
    ]
    body += [
        f"    PV_SPEC_FIELD_({name}, {mirror}, {f}, {c_generic_type(t)})"
        for f, t in fields
    ]
    width = max(len(line) for line in body) + 1
    lines = [f"#define PV_SPEC_CHECK_{name}".ljust(width) + "\\"]
    return lines + [line.ljust(width) + "\\" for line in body[:-1]] + [body[-1]]


def c_structs(spec) -> list[str]:
    out = [
        "/* Structs Python reads. PV_SPEC_FIELDS_<struct>(X): X(struct, field) per field, in",
        " * declaration order. PV_SPEC_CHECK_<struct>, placed at file scope where the struct is",
        " * in view, fails the build when it is not laid out as the spec says (Python's copy is",
        " * made from the spec, so the two cannot drift). */",
        "/* Field F of struct T sits where it does in the mirror M and has its size and type",
        " * (arrays: their element type; their length is in the size). */",
        "#define PV_SPEC_FIELD_(T, M, F, TYPE)                                                \\",
        "    _Static_assert(offsetof(M, F) == offsetof(T, F) &&                              \\",
        "                       sizeof(((M *)0)->F) == sizeof(((T *)0)->F) &&                \\",
        "                       _Generic(((T *)0)->F, TYPE: 1, default: 0),                  \\",
        '                   #T "." #F ": not as in src/spec/contracts.py");',
    ]
    for name, header, packed, _, fields in spec.STRUCTS:
        rows = [f"{name}, {f}" for f, _ in fields]
        out += [f"/* {name} ({header}, {len(fields)} fields) */"]
        out += x_macro(f"PV_SPEC_FIELDS_{name}", "struct, field", rows)[1:]
        out += c_struct_check(name, packed, fields) + [""]
    return out


def c_region_kinds(spec) -> list[str]:
    rows = [f"{e}, {v}" for e, v in spec.READ_REGION_KINDS]
    return [
        "/* Region kinds of perfvar_read_open (read/read.h); PV_SPEC_CHECK_READ_REGION_KINDS",
        " * pins read.h's PERFVAR_READ_REGION_<ENUM> to them. */",
        *x_macro("PV_SPEC_READ_REGION_KINDS", "ENUM, value", rows),
        "#define PV_SPEC_READ_REGION_CHECK_(E, V) \\",
        "    _Static_assert(PERFVAR_READ_REGION_##E == (V), "
        + '"PERFVAR_READ_REGION_" #E ": not as in src/spec/contracts.py");',
        "#define PV_SPEC_CHECK_READ_REGION_KINDS "
        + "PV_SPEC_READ_REGION_KINDS(PV_SPEC_READ_REGION_CHECK_)",
        "",
    ]


# ---------------------------------------------------------------- C: trace names


def c_trace_names(spec) -> list[str]:
    return [
        "/* Names in the OTF2 archive the readers look for (read/segments.py, read/otf2.py). */",
        *[f"#define PV_TRACE_{name} {c_string(text)}" for name, text in spec.TRACE_NAMES],
        "",
    ]


# ---------------------------------------------------------------- C: markers


def c_markers(spec) -> list[str]:
    m = spec.MARKERS
    fields = m["fields"]
    severities = [n for n, _ in m["severities"]]
    sep = m["scope_id_separator"]
    forms = [n + (f"{sep}<id>" if has_id else "") for n, _, has_id in m["scopes"]]
    sev_rows = [f"{n}, {c_string(n)}, {v}" for n, v in m["severities"]]
    scope_rows = [f"{n}, {c_string(n)}, {v}, {int(i)}" for n, v, i in m["scopes"]]
    tab_form = "<TAB>".join(fields)
    return [
        "/* perfvar-markers' input lines (report/markers.py writes them). */",
        f"#define PV_MARKER_GROUP {c_string(m['group'])}",
        f"#define PV_MARKER_SEPARATOR {c_char(m['separator'])}",
        f"#define PV_MARKER_NFIELDS {len(fields)}",
        f"#define PV_MARKER_NFIELDS_WORD {c_string(NUMBER_WORDS[len(fields)])}",
        "enum {",
        *[f"    PV_MARKER_FIELD_{f.upper()}," for f in fields],
        "};",
        f"#define PV_MARKER_WHOLE_RUN {c_string(m['whole_run'])}",
        f"#define PV_MARKER_SCOPE_ID_SEPARATOR {c_char(sep)}",
        *x_macro("PV_MARKER_SEVERITIES", "ENUM, name, OTF2_MarkerSeverity", sev_rows),
        *x_macro(
            "PV_MARKER_SCOPES", "ENUM, name, OTF2_MarkerScope, takes an id", scope_rows
        ),
        "/* The same, as messages spell them. */",
        f"#define PV_MARKER_LINE_FORM {c_string(tab_form)}",
        f"#define PV_MARKER_SEVERITY_NAMES_OR {c_string(or_list(severities))}",
        f"#define PV_MARKER_SEVERITY_NAMES_BAR {c_string('|'.join(severities))}",
        f"#define PV_MARKER_SCOPE_FORMS_OR {c_string(or_list(forms))}",
        "",
    ]


# ---------------------------------------------------------------- C: rank-N.json


def key_ident(key: str) -> str:
    """The identifier of a key: "t_min_{unit}" -> T_MIN_UNIT."""
    return key.replace("{", "").replace("}", "").upper()


def c_json_file(filename: str, c: str, table) -> list[str]:
    out = [
        f"/* The keys of DIR/perfvar/{filename}. PV_{c}_<OBJECT>_<KEY> opens a member in a",
        ' * format string ("\\"key\\": "; a {unit} in the key is a %s), PV_'
        + c
        + "N_<OBJECT>_<KEY> is",
        " * the key alone. The top level's keys have no <OBJECT>. */",
    ]
    for section in table:
        infix = section["c"] + "_" if section["c"] else ""
        where = ", ".join(p or "the top level" for p in section["paths"])
        out.append(f"/* {section['name']}: {where} */")
        for key, *_ in section["keys"]:
            ident = key_ident(key)
            member = c_string('"' + key.replace("{unit}", "%s") + '": ')
            out.append(f"#define PV_{c}_{infix}{ident} {member}")
            if "{" not in key:
                out.append(f"#define PV_{c}N_{infix}{ident} {c_string(key)}")
    return out + [""]


def c_json_files(spec) -> list[str]:
    out = []
    for filename, c, _, table in spec.JSON_FILES:
        out += c_json_file(filename, c, table)
    return out


def c_header(spec) -> str:
    lines = [
        "/*",
        f" * pv_spec.h — {NOTICE}.",
        " * The names and layouts perfvar's C library shares with its Python package",
        " * (postproc/perfvar/_spec.py is written from the same table). Internal: built",
        " * into the library, never installed. Constants only; thread-safe.",
        " */",
        "#ifndef PV_SPEC_H",
        "#define PV_SPEC_H",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
    ]
    parts = (c_timers, c_groups, c_structs, c_region_kinds, c_trace_names, c_markers)
    for part in parts + (c_json_files,):
        lines += part(spec)
    return "\n".join(lines + ["#endif"]) + "\n"


# ---------------------------------------------------------------- Python


CTYPES = {
    "char": "ctypes.c_char",
    "int": "ctypes.c_int",
    "double": "ctypes.c_double",
    "int32_t": "ctypes.c_int32",
    "int64_t": "ctypes.c_int64",
    "uint64_t": "ctypes.c_uint64",
}


def py_ctype(ctype: str) -> str:
    if "[" in ctype:
        base, dim = ctype.rstrip("]").split("[")
        return f"{CTYPES[base]} * {dim}"
    return CTYPES[ctype]


def q(text: str) -> str:
    """A Python string literal as black writes it (double quotes)."""
    return json.dumps(text)


# Each py_* gives top-level blocks (lists of lines), written two blank lines apart.


def py_constants(cls: str, doc: str, pairs) -> list[str]:
    """class CLS with one NAME = "value" per pair; its docstring wrapped at 88 columns."""
    wrapped = textwrap.wrap(f'"""{doc}"""', width=84)
    lines = [f"class {cls}:"] + [f"    {line}" for line in wrapped] + [""]
    return lines + [f"    {ident} = {q(value)}" for ident, value in pairs]


def py_tuple(name: str, values, comment: str = "") -> list[str]:
    """NAME = (...) one value a line, as black writes a tuple that does not fit."""
    head = f"{name} = (" + (f"  # {comment}" if comment else "")
    return [head] + [f"    {q(v)}," for v in values] + [")"]


def py_timers(spec) -> list[list[str]]:
    units = ["TIMER_UNITS = {"] + [f"    {q(n)}: {q(u)}," for _, _, n, u in spec.TIMERS]
    pairs = [(e, n) for e, _, n, _ in spec.TIMERS]
    return [
        py_tuple("TIMERS", [n for _, _, n, _ in spec.TIMERS], "by enum value"),
        units + ["}"],
        py_constants("Timer", "Timer names (perfvar_timer_name).", pairs),
    ]


def py_groups(spec) -> list[list[str]]:
    names = [n for n, _, _ in spec.MPI_GROUPS]
    default = [n for n, d, _ in spec.MPI_GROUPS if d]
    return [
        py_tuple("MPI_GROUPS", names, "PERFVAR_BOUNDARIES' bit order"),
        py_tuple("MPI_GROUPS_DEFAULT", default, "traced unless configured"),
    ]


def py_struct(name, header, packed, cls, fields) -> list[str]:
    lines = [f"class {cls}(ctypes.Structure):", f'    """{name} ({header})."""', ""]
    if packed:
        lines += ["    _pack_ = 1"]
    lines += ["    _fields_ = ["]
    lines += [f"        ({q(f)}, {py_ctype(t)})," for f, t in fields]
    return lines + ["    ]"]


def py_structs(spec) -> list[list[str]]:
    table = ["# C name: (packed, ((field, C type), ...)), as declared.", "STRUCTS = {"]
    for name, _, packed, _, fields in spec.STRUCTS:
        table += [f"    {q(name)}: (", f"        {packed},", "        ("]
        table += [f"            ({q(f)}, {q(t)})," for f, t in fields]
        table += ["        ),", "    ),"]
    blocks = [table + ["}"]]
    for name, header, packed, cls, fields in spec.STRUCTS:
        if cls:
            blocks.append(py_struct(name, header, packed, cls, fields))
    kinds = ["class ReadRegion:", '    """Region kinds of perfvar_read_open."""', ""]
    kinds += [f"    {e} = {v}" for e, v in spec.READ_REGION_KINDS]
    return blocks + [kinds]


def py_trace_names(spec) -> list[list[str]]:
    doc = "Names in the OTF2 archive perfvar writes (src/trace, src/pmpi)."
    return [py_constants("TraceName", doc, spec.TRACE_NAMES)]


def py_markers(spec) -> list[list[str]]:
    m = spec.MARKERS
    scalars = [
        f"MARKER_GROUP = {q(m['group'])}",
        f"MARKER_SEPARATOR = {q(m['separator'])}",
        f"MARKER_WHOLE_RUN = {q(m['whole_run'])}",
        f"MARKER_SCOPE_ID_SEPARATOR = {q(m['scope_id_separator'])}",
    ]
    scopes = ["MARKER_SCOPES = {  # name: whether an id follows"]
    scopes += [f"    {q(n)}: {i}," for n, _, i in m["scopes"]] + ["}"]
    sev = [(n, n) for n, _ in m["severities"]]
    names = [(n, n) for n, _, _ in m["scopes"]]
    return [
        scalars,
        py_tuple("MARKER_FIELDS", m["fields"], "in this order"),
        py_tuple("MARKER_SEVERITIES", [n for n, _ in m["severities"]]),
        scopes,
        py_constants("MarkerSeverity", "perfvar-markers' severities.", sev),
        py_constants("MarkerScope", "perfvar-markers' scopes.", names),
    ]


def table_name(py: str) -> str:
    """The Python name of a JSON file's table: RankJson -> RANK_JSON."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", py).upper()


def py_json_table(py: str, table) -> list[str]:
    out = [
        '# object: {"paths": {path: {placeholder: value}}, "keys": ((key, JSON type, when),',
        "# ...)}; when: None, or (sibling key, value) for a key written only then.",
        f"{table_name(py)} = {{",
    ]
    for s in table:
        out += [f"    {q(s['name'])}: {{", '        "paths": {']
        out += [f"            {q(p)}: {py_dict(v)}," for p, v in s["paths"].items()]
        out += ["        },", '        "keys": (']
        for key, jtype, *when in s["keys"]:
            cond = f"({q(when[0][0])}, {when[0][1]})" if when else "None"
            out.append(f"            ({q(key)}, {q(jtype)}, {cond}),")
        out += ["        ),", "    },"]
    return out + ["}"]


def py_dict(d: dict) -> str:
    return "{" + ", ".join(f"{q(k)}: {q(v)}" for k, v in d.items()) + "}"


def py_json_files(spec) -> list[list[str]]:
    blocks = []
    for filename, _, py, table in spec.JSON_FILES:
        for s in table:
            where = ", ".join(p or "the top level" for p in s["paths"])
            pairs = [(key_ident(k), k) for k, *_ in s["keys"]]
            blocks.append(py_constants(py + s["py"], f"{filename}: {where}.", pairs))
        blocks.append(py_json_table(py, table))
    return blocks


def python_module(spec) -> str:
    head = [
        f'"""{NOTICE[0].upper() + NOTICE[1:]}.',
        "",
        "The names and layouts perfvar's Python package shares with its C library (which",
        "is built with pv_spec.h, written from the same table): timer names, MPI groups,",
        "the ctypes structures of libperfvar and libperfvar_read (and its region kinds),",
        "the names in the OTF2 archive, perfvar-markers' input lines and the keys of",
        "DIR/perfvar/rank-N.json, run.json, ended-rank-N.json and",
        "calibration-rank-N.json. ctest spec.python_in_sync checks that this file is",
        "what the generator writes.",
        "Constants only; thread-safe.",
        '"""',
        "",
        "import ctypes",
    ]
    blocks = []
    parts = (py_timers, py_groups, py_structs, py_trace_names, py_markers, py_json_files)
    for part in parts:
        blocks += part(spec)
    body = "\n\n\n".join("\n".join(b) for b in blocks)
    return "\n".join(head) + "\n\n" + body + "\n"


# ---------------------------------------------------------------- files


def write_if_changed(path: str, text: str) -> None:
    """Write text to path unless it holds it already (its users are not rebuilt)."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def check_python(path: str, text: str) -> int:
    """0 when path holds text; else 1 with a unified diff on stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = os.path.join(tmp, "_spec.py")
        write_if_changed(fresh, text)
        with open(fresh, encoding="utf-8") as f:
            wanted = f.read()
    try:
        with open(path, encoding="utf-8") as f:
            have = f.read()
    except OSError as exc:
        have = ""
        sys.stderr.write(f"gen_spec: {exc}\n")
    if have == wanted:
        return 0
    diff = difflib.unified_diff(
        have.splitlines(True), wanted.splitlines(True), path, "generated now"
    )
    sys.stderr.writelines(diff)
    sys.stderr.write(
        f"gen_spec: {path} is not what src/spec/contracts.py gives: run "
        f"python3 src/spec/gen_spec.py --python {path}\n"
    )
    return 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--c", help="write the C header here")
    ap.add_argument("--python", help="write _spec.py here")
    ap.add_argument("--check-python", help="compare this _spec.py with a fresh one")
    args = ap.parse_args(argv)
    spec = load_spec()
    if args.c:
        write_if_changed(args.c, c_header(spec))
    if args.python:
        write_if_changed(args.python, python_module(spec))
    if args.check_python:
        return check_python(args.check_python, python_module(spec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
