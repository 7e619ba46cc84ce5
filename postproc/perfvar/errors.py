"""Exceptions perfvar raises on bad input.

A :class:`TraceError` carries one human-readable line; the CLI prints it as
``perfvar: error: <message>`` and exits with status 2.
"""


class TraceError(Exception):
    """A trace directory, archive or metadata file cannot be used for analysis."""
