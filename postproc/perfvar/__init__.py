"""perfvar post-processing: read a perfvar trace directory, find slow ranks.

The public entry point is :func:`perfvar.analysis.analyze`; the command line is
``perfvar analyze DIR`` (:mod:`perfvar.cli`). All times are nanoseconds (ns) unless a
name says otherwise.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
