"""Where perfvar's other files are: the paths ``cmake --install`` recorded in the
generated ``perfvar/_install_paths.py``, relative to the package (so the prefix can be
moved; a source checkout or a wheel has no such module), and perfvar's programs
wherever they are. Thread-safe."""

from __future__ import annotations

import ctypes.util
import importlib
import os
import shutil
from typing import Optional


def installed_path(key: str) -> Optional[str]:
    """The absolute path of ``key`` ("LIBPERFVAR": libperfvar, "BINDIR": the programs,
    "LIBPERFVAR_READ": the native trace reader, "LIBPERFVAR_STATS": the native
    statistics kernels), or None outside an installation or
    when the installation has no such file (empty, or recorded by an older one)."""
    try:
        # By name: the module exists only in an installation (cmake --install writes
        # it), and ``from perfvar import`` would read as an import of the whole package.
        _install_paths = importlib.import_module("perfvar._install_paths")
    except ImportError:
        return None
    relative = getattr(_install_paths, key, "")
    if not relative:
        return None
    here = os.path.dirname(os.path.abspath(_install_paths.__file__))
    return os.path.normpath(os.path.join(here, relative))


def library_candidates(filename: str, key: str) -> list[str]:
    """Where one of the package's private libraries (``filename``, recorded under
    ``key`` by ``cmake --install``) may be, in the order to try: beside
    ``$PERFVAR_LIB`` (a build tree's top or an installation's lib/); this package's
    installation; ``../lib`` and ``..`` of a ``perfvar-run`` on the PATH (an
    installation, a build tree's bin/); the linker's search path; this checkout's
    ``build/``."""
    found = []
    lib = os.environ.get("PERFVAR_LIB")
    if lib:
        found.append(os.path.join(os.path.dirname(os.path.abspath(lib)), filename))
    installed = installed_path(key)
    if installed:
        found.append(installed)
    launcher = shutil.which("perfvar-run")
    if launcher:
        bindir = os.path.dirname(os.path.realpath(launcher))
        found += [
            os.path.join(bindir, "..", "lib", filename),
            os.path.join(bindir, "..", filename),
        ]
    name = ctypes.util.find_library(filename.removeprefix("lib").removesuffix(".so"))
    if name:
        found.append(name)
    here = os.path.dirname(os.path.abspath(__file__))
    found.append(os.path.join(here, "..", "..", "build", filename))
    return found


def find_tool(name: str) -> Optional[str]:
    """One of perfvar's programs (perfvar-recover, perfvar-markers): in this package's
    installation, beside perfvar-run (an installation or a build's bin/), on PATH, in
    the build tree or installation of ``$PERFVAR_LIB``, or in this checkout's build
    tree; None when none is executable."""
    found = []
    bindir = installed_path("BINDIR")
    if bindir:
        found.append(os.path.join(bindir, name))
    launcher = shutil.which("perfvar-run")
    if launcher:
        found.append(os.path.join(os.path.dirname(os.path.realpath(launcher)), name))
    on_path = shutil.which(name)
    if on_path:
        found.append(on_path)
    lib = os.environ.get("PERFVAR_LIB")
    if lib:  # a build tree (the library at its top, programs in bin/) or a prefix
        libdir = os.path.dirname(os.path.abspath(lib))
        found += [
            os.path.join(libdir, "bin", name),
            os.path.join(libdir, "..", "bin", name),
        ]
    here = os.path.dirname(os.path.abspath(__file__))
    found.append(os.path.join(here, "..", "..", "build", "bin", name))
    return next((p for p in found if os.access(p, os.X_OK)), None)
