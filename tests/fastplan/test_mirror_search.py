"""API parity of fastplan's search-side twins with refimpl's modules (style §6.8 item 4).

For the search room's ``strategy``, ``graph``, ``block``, ``merging``, ``repair``, ``search``
and the stream room's ``cache``, ``queue``, ``processor`` (``fastplan.<room>.<name>`` against
``refimpl.planner.<room>.<name>``) and ``planner`` (against ``refimpl.planner``): the same
``__all__``; for every public name that is not refimpl's own object (plain data is shared),
the same parameters (names, kinds, defaults: ``inspect`` for functions and methods, the
signature Cython embeds for constructors), the same first docstring line and a
``Mirrors refimpl.planner.<room>.<module>.<name>.`` line; every public method
and property of refimpl's class exists on the twin. Both directions: no public function or
class of the twin is missing from refimpl's ``__all__``.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

import fastplan

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

MODULES = ("search.strategy", "search.graph", "search.block", "search.merging", "search.repair",
           "search.search", "stream.cache", "stream.queue", "stream.processor", "planner")


def _fast(name: str) -> str:
    """The twin's module name for a ``"<room>.<module>"`` of MODULES (or ``planner``)."""
    return f"fastplan.{name}"


def pair(name: str):
    reference = importlib.import_module(
        "refimpl.planner" if name == "planner" else f"refimpl.planner.{name}")
    return reference, importlib.import_module(_fast(name))


def parameters(signature: inspect.Signature) -> list[tuple]:
    """What must match: names, kinds and defaults (annotations live in the .pyi)."""
    return [(p.name, p.kind, repr(p.default)) for p in signature.parameters.values()]


def doc_lines(obj) -> list[str]:
    """The docstring's lines, less the signature Cython embeds as its first line."""
    lines = (inspect.getdoc(obj) or "").splitlines()
    name = getattr(obj, "__name__", "")
    if lines and lines[0].startswith(f"{name}(") and lines[0].endswith(")"):
        lines = lines[1:]
        while lines and not lines[0].strip():
            lines = lines[1:]
    return lines


def embedded_parameters(cls, module) -> list[tuple]:
    """A compiled class's constructor parameters (names and defaults), from the signature
    Cython embeds as the first docstring line, defaults evaluated in the twin module.

    Kinds are left out: Cython 3.3 embeds ``*`` one place late in a ``cdef class``
    constructor (``test_mirror_keyword_only_constructor_arguments`` checks the behaviour)."""
    first = (cls.__doc__ or "").splitlines()[0]
    assert first.startswith(f"{cls.__name__}(") and first.endswith(")"), first
    text = first[len(cls.__name__) + 1:-1]
    return names_defaults(inspect.signature(eval(f"lambda {text}: None", vars(module))))


def names_defaults(signature: inspect.Signature) -> list[tuple]:
    return [(p.name, repr(p.default)) for p in signature.parameters.values()]


def public_members(cls) -> list[str]:
    return [k for k, v in vars(cls).items()
            if not k.startswith("_") and (callable(v) or isinstance(v, property))]


@pytest.mark.parametrize("name", MODULES)
def test_mirror_same_all(name):
    reference, twin = pair(name)
    assert twin.__all__ == reference.__all__


@pytest.mark.parametrize("name", MODULES)
def test_mirror_nothing_public_beyond_all(name):
    reference, twin = pair(name)
    for key, value in vars(twin).items():
        if key.startswith("_") or inspect.ismodule(value):
            continue
        if getattr(value, "__module__", None) == twin.__name__:
            assert key in reference.__all__, f"fastplan.{name}.{key} is not in refimpl's __all__"


def _twins(name: str):
    """Names whose twin is fastplan's own (not shared, not re-exported from another twin)."""
    reference, twin = pair(name)
    for key in reference.__all__:
        ours, theirs = getattr(twin, key), getattr(reference, key)
        if ours is not theirs and getattr(ours, "__module__", None) == twin.__name__:
            yield key, theirs, ours


@pytest.mark.parametrize("name", MODULES)
def test_mirror_reexports_are_twins_of_the_reexported(name):
    reference, twin = pair(name)
    for key in reference.__all__:
        ours, theirs = getattr(twin, key), getattr(reference, key)
        home = getattr(ours, "__module__", twin.__name__)
        if ours is theirs or home == twin.__name__:
            continue
        assert home.startswith("fastplan."), f"fastplan.{name}.{key} comes from {home}"
        original_home = theirs.__module__.removeprefix("refimpl.planner.")
        assert home == _fast(original_home), f"{key}: {home} vs {theirs.__module__}"


def test_mirror_keyword_only_constructor_arguments():
    from fastplan.stream.processor import StreamPlanner

    with pytest.raises(TypeError):
        StreamPlanner([], 5)
    assert StreamPlanner([], max_blocks=3, max_explorations=1).processor.explorer \
        .max_explorations == 1


CASES = [(name, key) for name in MODULES for key, _, _ in _twins(name)] \
    if fastplan.COMPILED else []


@pytest.mark.parametrize("name, key", CASES, ids=[f"{n}.{k}" for n, k in CASES])
def test_mirror_signature_and_docstring(name, key):
    reference, twin = pair(name)
    theirs, ours = getattr(reference, key), getattr(twin, key)
    assert doc_lines(ours)[0] == doc_lines(theirs)[0]
    module = "refimpl.planner" if name == "planner" else f"refimpl.planner.{name}"
    assert f"Mirrors {module}.{key}." in doc_lines(ours)
    if inspect.isclass(theirs):
        assert embedded_parameters(ours, twin) == names_defaults(inspect.signature(theirs))
        for member in public_members(theirs):
            assert hasattr(ours, member), f"{key}.{member} is missing"
            original = vars(theirs)[member]
            if isinstance(original, property):
                continue
            assert parameters(inspect.signature(getattr(ours, member))) == \
                parameters(inspect.signature(original)), f"{key}.{member}"
    else:
        assert parameters(inspect.signature(ours)) == parameters(inspect.signature(theirs))


def test_mirror_twins_are_compiled():
    import importlib.machinery

    for name in MODULES:
        module = importlib.import_module(_fast(name))
        assert module.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    assert fastplan.plan is importlib.import_module("fastplan.planner").plan
