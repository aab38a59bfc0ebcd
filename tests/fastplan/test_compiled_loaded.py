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


def test_compiled_modules_come_from_the_built_layout():
    """With the bundle in place every compiled module is loaded from it (its own PyInit in
    the one library); without it, each from a library of its own."""
    if NO_EXTENSIONS:
        return
    for name in fastplan.COMPILED_MODULES:
        module = importlib.import_module(f"fastplan.{name}")
        if os.path.exists(fastplan._BUNDLE):
            assert module.__file__ == fastplan._BUNDLE, name
            assert module.__spec__.loader.name == f"fastplan.{name}"
        else:
            assert os.path.basename(module.__file__).startswith(f"{name.rpartition('.')[2]}."), \
                module.__file__
