"""One namespace of PERFVAR_* variables: every one the Python package reads is one the
C library knows (src/config/config.c layer_vars and tool_vars), so exporting it for `perfvar
analyze` or `perfvar calibrate` does not make a traced program run uninstrumented."""

import os
import re

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def _known_to_the_library() -> set:
    with open(os.path.join(ROOT, "src", "config", "config.c")) as fh:
        text = fh.read()
    tables = re.findall(r"(?:layer|tool)_vars\[\] = \{(.*?)NULL\}", text, re.S)
    assert len(tables) == 2, "layer_vars and tool_vars not found in config.c"
    return set(re.findall(r'"(PERFVAR_[A-Z0-9_]+)"', "".join(tables)))


def _read_by_the_package() -> set:
    names = set()
    package = os.path.join(ROOT, "postproc", "perfvar")
    for name in os.listdir(package):
        # _spec.py is constants only (it reads no variable); its RunJson.PERFVAR_VERSION
        # is run.json's key "perfvar_version".
        if name.endswith(".py") and name != "_spec.py":
            with open(os.path.join(package, name)) as fh:
                names |= set(re.findall(r"\bPERFVAR_[A-Z0-9_]+\b", fh.read()))
    return names


def test_every_variable_the_package_reads_is_known_to_the_library():
    known = _known_to_the_library()
    assert {"PERFVAR_OUTPUT", "PERFVAR_PROBE"} <= known  # the table was found
    read = _read_by_the_package()
    assert "PERFVAR_LIB" in read and "PERFVAR_DEBUG" in read
    assert read - known == set()
