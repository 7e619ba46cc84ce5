"""Where this installation's other files are: the paths ``cmake --install`` recorded in
the generated ``perfvar/_install_paths.py``, relative to the package (so the prefix can
be moved). A source checkout or a wheel has no such module. Thread-safe."""

from __future__ import annotations

import os
from typing import Optional


def installed_path(key: str) -> Optional[str]:
    """The absolute path of ``key`` ("LIBPERFVAR": libperfvar, "BINDIR": the programs),
    or None outside an installation."""
    try:
        from perfvar import _install_paths
    except ImportError:
        return None
    here = os.path.dirname(os.path.abspath(_install_paths.__file__))
    return os.path.normpath(os.path.join(here, getattr(_install_paths, key)))
