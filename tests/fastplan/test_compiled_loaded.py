"""The compiled fastplan really is the one under test, unless FASTPLAN_NO_EXTENSIONS says not.

Without this check a broken build silently tests the pure-Python fallback against refimpl.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os

import fastplan
from fastplan import _pure

NO_EXTENSIONS = os.environ.get("FASTPLAN_NO_EXTENSIONS", "") not in ("", "0")


def test_compiled_loaded_unless_disabled():
    assert fastplan.NO_EXTENSIONS is NO_EXTENSIONS
    assert fastplan.COMPILED is not NO_EXTENSIONS, (
        "fastplan's extensions are not loaded: build them with `make build` "
        "(or set FASTPLAN_NO_EXTENSIONS=1 to test the pure-Python fallback)"
    )


def test_compiled_opinfo_is_an_extension_module():
    if NO_EXTENSIONS:
        assert fastplan.OP_TABLE is _pure.OP_TABLE
        assert fastplan.OpTable is _pure.OpTable
        return
    opinfo = importlib.import_module("fastplan.opinfo")
    assert opinfo.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert fastplan.OP_TABLE is opinfo.OP_TABLE
    assert fastplan.OpTable is opinfo.OpTable


def test_compiled_modules_come_from_the_bundle():
    """Every compiled module is loaded from the one library (its own PyInit there), under its
    full dotted name."""
    if NO_EXTENSIONS:
        return
    assert os.path.exists(fastplan._BUNDLE)
    for name in fastplan.COMPILED_MODULES:
        module = importlib.import_module(f"fastplan.{name}")
        assert module.__file__ == fastplan._BUNDLE, name
        assert module.__spec__.loader.name == module.__name__ == f"fastplan.{name}"
