"""perfvar post-processing: read a perfvar trace directory, find slow ranks.

The public entry point is :func:`perfvar.analysis.analyze`; the command line is
``perfvar analyze DIR`` (:mod:`perfvar.cli`). ``perfvar.open(DIR)``
(:mod:`perfvar.frames`) gives the same run as pandas DataFrames. All times are
nanoseconds (ns) unless a name says otherwise.
"""

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# "open" stays out of __all__ so that "from perfvar import *" never shadows the
# builtin open; it is meant as perfvar.open(DIR).
__all__ = ["__version__"]

if TYPE_CHECKING:
    from perfvar.frames import open  # noqa: F401


def __getattr__(name: str) -> Any:
    # perfvar.open imports pandas and the analysis on first use only, so that
    # "import perfvar" and the command line do not pay for them.
    if name == "open":
        from perfvar.frames import open

        return open
    raise AttributeError(f"module 'perfvar' has no attribute {name!r}")
