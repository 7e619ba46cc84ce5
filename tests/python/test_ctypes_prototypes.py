"""The ctypes prototypes the Python package declares for perfvar's C libraries, against
the C declarations in their headers: every function the package calls through ctypes
(libperfvar's kernels, libperfvar_read, libperfvar_stats) has, where the package sets
them, as many arguments as the header's, each of the same C type (a pointer to the same
scalar, an opaque handle as a void pointer), and the header's return type. A prototype
that drifted from its header passes the wrong bits without any error; this is what
finds it.

Skipped where a library is not built.
"""

from __future__ import annotations

import ctypes
import os
import re
from pathlib import Path
from typing import Optional

import numpy as np
import pytest

from perfvar.calibration import kernels
from perfvar.read import native as reader_native
from perfvar.stats import isolation

ROOT = Path(__file__).resolve().parents[2]
HEADERS = (
    "include/perfvar.h",
    "include/perfvar_calib.h",
    "src/read/read.h",
    "src/stats/isolation.h",
)
# C scalar types as the canonical names compared; ctypes' aliases (c_long for
# c_int64 on LP64) resolve to the same.
C_SCALARS = {
    "int": "int32",
    "int32_t": "int32",
    "unsigned": "uint32",
    "uint32_t": "uint32",
    "long": "int64",
    "int64_t": "int64",
    "uint64_t": "uint64",
    "size_t": "uint64",
    "double": "double",
    "char": "char",
    "void": "void",
}
CTYPES_SCALARS = {
    ctypes.c_int: "int32",
    ctypes.c_int32: "int32",
    ctypes.c_uint32: "uint32",
    ctypes.c_int64: "int64",
    ctypes.c_long: "int64",
    ctypes.c_uint64: "uint64",
    ctypes.c_ulong: "uint64",
    ctypes.c_size_t: "uint64",
    ctypes.c_double: "double",
    ctypes.c_char: "char",
}
NUMPY_SCALARS = {
    np.dtype(np.int32): "int32",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.int64): "int64",
    np.dtype(np.uint64): "uint64",
    np.dtype(np.float64): "double",
}


def c_declarations() -> dict[str, tuple[str, list[str]]]:
    """name -> (return type, argument types) of every perfvar_ function the headers
    declare (not the static inline ones), each type canonical (c_type)."""
    out = {}
    for header in HEADERS:
        text = (ROOT / header).read_text()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = re.sub(r"//[^\n]*|^\s*#[^\n]*", " ", text, flags=re.M)
        for statement in re.split(r"[;{}]", text):
            m = re.fullmatch(
                r"\s*([A-Za-z_][\w \*]*?)\b(perfvar_\w+)\s*\(([^()]*)\)\s*", statement
            )
            if m is None or "static" in m.group(1) or "typedef" in m.group(1):
                continue
            ret, name, params = m.group(1), m.group(2), m.group(3)
            args = [] if params.strip() in ("", "void") else params.split(",")
            out[name] = (c_type(ret), [c_type(a, named=True) for a in args])
    return out


def c_type(decl: str, named: bool = False) -> str:
    """The canonical type of a C declaration ("const uint64_t *locations" ->
    "uint64*"; a pointer to a type that is no scalar -> "opaque*")."""
    decl = decl.replace("const", " ").strip()
    stars = decl.count("*")
    words = decl.replace("*", " ").split()
    if named and len(words) > 1:
        words = words[:-1]  # the parameter's name
    base = C_SCALARS.get(" ".join(words), "opaque")
    return base + "*" * stars


def ctypes_type(t: Optional[type]) -> str:
    """The canonical type of a ctypes argument or return type."""
    if t is None:
        return "void"
    if t is ctypes.c_char_p:
        return "char*"
    if t is ctypes.c_void_p:
        return "void*"
    if t in CTYPES_SCALARS:
        return CTYPES_SCALARS[t]
    if hasattr(t, "_dtype_"):  # numpy.ctypeslib.ndpointer
        return NUMPY_SCALARS.get(np.dtype(t._dtype_), "opaque") + "*"
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        return ctypes_type(t._type_) + "*"
    if isinstance(t, type) and issubclass(t, ctypes.Structure):
        return "opaque"
    return f"ctypes {getattr(t, '__name__', t)}"  # no C type of the headers


def same(c: str, py: str) -> bool:
    """Whether the header's type and the package's are the same: equal, or an opaque
    pointer (a handle, a struct) passed as a void pointer."""
    return c == py or (c.startswith("opaque*") and py == "void" + c[len("opaque"):])


def declared(lib: ctypes.CDLL) -> dict[str, ctypes._CFuncPtr]:
    """The functions of ``lib`` the package looked up (ctypes keeps each on the library
    once asked for)."""
    return {k: v for k, v in vars(lib).items() if k.startswith("perfvar_")}


def loaded() -> list[ctypes.CDLL]:
    libs = []
    lib = os.environ.get("PERFVAR_LIB")
    if lib and os.path.exists(lib):
        k = kernels.Kernels(lib)
        k.clock_info()  # declares perfvar_clock_info_get
        libs.append(k.lib)
    read = reader_native._load(tuple(reader_native.candidates()))
    stats = isolation.native()
    return libs + [x for x in (read, stats) if x is not None]


def test_the_headers_are_parsed():
    decls = c_declarations()
    assert decls["perfvar_read_open"] == (
        "int32",
        ["char*", "uint64*", "uint64", "uint32*", "int32*", "uint64", "int32", "uint32",
         "double", "opaque**", "int32*", "int32*", "int32*"],
    )  # fmt: skip
    assert decls["perfvar_read_free"] == ("void", ["void*", "int64", "uint64"])
    assert decls["perfvar_cache_size"] == ("uint64", ["int32"])


def test_a_drifted_prototype_is_caught():
    assert not same("int64", ctypes_type(ctypes.c_int))
    assert not same("double*", ctypes_type(ctypes.POINTER(ctypes.c_float)))
    assert same("opaque*", ctypes_type(ctypes.c_void_p))
    assert same("double*", ctypes_type(np.ctypeslib.ndpointer(np.float64)))


def test_every_ctypes_prototype_is_its_headers():
    libs = loaded()
    if not libs:
        pytest.skip("no perfvar library built")
    decls = c_declarations()
    checked, wrong = 0, []
    for lib in libs:
        for name, fn in declared(lib).items():
            assert name in decls, f"{name}: called through ctypes, declared in no header"
            ret, args = decls[name]
            if not same(ret, ctypes_type(fn.restype)):
                wrong.append(f"{name}: returns {ret}, restype {ctypes_type(fn.restype)}")
            if fn.argtypes is not None:
                got = [ctypes_type(t) for t in fn.argtypes]
                if len(got) != len(args) or not all(map(same, args, got)):
                    wrong.append(f"{name}: {args} in its header, argtypes {got}")
            checked += 1
    assert not wrong, "\n".join(wrong)
    assert checked >= 10
