"""API parity: every fastplan twin module mirrors its refimpl.planner module (style §6.8.4).

A pair is ``fastplan.<room>.<module>`` and ``refimpl.planner.<room>.<module>``, for each
``"<room>.<module>"`` of ``fastplan.PLANNER_TWINS``. For each pair: the same ``__all__`` (same
order), the same signatures (``inspect.signature``; a ``cdef class`` constructor from its
``__init__`` in the .pyx source), the same public methods on each class and the same first
docstring line, checked in both directions; twins defined in fastplan (not re-exported refimpl
objects) say ``Mirrors refimpl.planner.<room>.<module>.<name>.`` and are defined in the same
order as in refimpl's file.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import inspect
import re
from pathlib import Path

import pytest

import fastplan

ROOT = Path(__file__).resolve().parents[2]
REQUIRE_EXTENSIONS = __import__("os").environ.get("FASTPLAN_REQUIRE_EXTENSIONS", "") not in (
    "", "0")

if not fastplan.COMPILED:
    if REQUIRE_EXTENSIONS:
        raise RuntimeError("fastplan is not compiled (FASTPLAN_REQUIRE_EXTENSIONS=1)")
    pytest.skip("fastplan is not compiled", allow_module_level=True)

MODULES = fastplan.PLANNER_TWINS


def pair(module: str):
    """refimpl's module and its twin, for a ``"<room>.<module>"`` of ``PLANNER_TWINS``: the same
    name under refimpl.planner and under fastplan."""
    return (importlib.import_module(f"refimpl.planner.{module}"),
            importlib.import_module(f"fastplan.{module}"))


# --- signatures -----------------------------------------------------------------------------------

_EMBEDDED = re.compile(r"^(?P<name>[\w.]+)\((?P<params>.*)\)(?: -> .*)?$")


def _default(node, namespace) -> object:
    """An embedded default: a literal, or a module-level name of the twin (``MAX_BLOCKS``)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return getattr(namespace, node.id, None)
    return None


def _init_source(cls) -> str | None:
    """The parameter list of a ``cdef class``'s ``__init__``, from its .pyx source (Cython's
    embedded class signature misplaces a bare ``*``, so the source is the reference)."""
    path = ROOT.joinpath(*cls.__module__.split(".")).with_suffix(".pyx")
    source = path.read_text() if path.is_file() else ""
    start = source.find(f"cdef class {cls.__name__}")
    if start < 0:
        return None
    line_end = source.index("\n", start) + 1
    following = re.search(r"^[a-zA-Z_]", source[line_end:], re.MULTILINE)  # next top level
    body = source[start:line_end + following.start()] if following else source[start:]
    init = re.search(r"\n    def __init__\(self,?\s*(.*?)\):\n", body, re.DOTALL)
    return init.group(1) if init else ""


def _embedded_params(obj) -> list[tuple]:
    """Parameters of a ``cdef class`` constructor, from its source (or Cython's embedded
    signature in the class docstring)."""
    text = _init_source(obj)
    if text is None:
        first = (obj.__doc__ or "").splitlines()[0] if obj.__doc__ else ""
        match = _EMBEDDED.match(first)
        assert match and match["name"] == obj.__name__, f"{obj!r}: no embedded signature"
        text = match["params"]
    args = ast.parse(f"def f({text}): pass").body[0].args
    namespace = importlib.import_module(obj.__module__)
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [(a.arg, "POSITIONAL_OR_KEYWORD", d is not None, _default(d, namespace))
              for a, d in zip(positional, defaults)]
    if args.vararg:
        params.append((args.vararg.arg, "VAR_POSITIONAL", False, None))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        params.append((a.arg, "KEYWORD_ONLY", d is not None, _default(d, namespace)))
    if args.kwarg:
        params.append((args.kwarg.arg, "VAR_KEYWORD", False, None))
    return params


def _simple(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def params(obj) -> list[tuple]:
    """(name, kind, has a default, the default when it is a plain literal) per parameter."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return _embedded_params(obj)
    result = []
    for p in signature.parameters.values():
        has_default = p.default is not inspect.Parameter.empty
        value = p.default if has_default and _simple(p.default) else None
        result.append((p.name, p.kind.name, has_default, value))
    return result


def same_params(reference, twin) -> bool:
    """Equal names and kinds; defaults compared where both are plain literals (a dataclass
    ``field(default_factory=...)`` twin uses ``None``)."""
    ref, fast = params(reference), params(twin)
    if [p[:3] for p in ref] != [p[:3] for p in fast]:
        return False
    return all(r[3] == f[3] or not (_simple(r[3]) and r[3] is not None)
               for r, f in zip(ref, fast))


# --- docstrings -----------------------------------------------------------------------------------


def first_line(obj) -> str | None:
    """The first line of ``obj``'s own docstring (an embedded signature skipped)."""
    doc = inspect.getdoc(obj) if not isinstance(obj, type) else obj.__doc__
    if not doc:
        return None
    lines = inspect.cleandoc(doc).splitlines()
    if _EMBEDDED.match(lines[0]) and len(lines) > 1:
        lines = lines[1:]
        while lines and not lines[0].strip():
            lines = lines[1:]
    return lines[0] if lines else None


def public_methods(cls) -> dict[str, object]:
    """Public routines a class defines or inherits (``object``'s own left out)."""
    names = [n for n in dir(cls) if not n.startswith("_") and not hasattr(object, n)]
    found = {}
    for name in names:
        attr = inspect.getattr_static(cls, name)
        if isinstance(attr, (staticmethod, classmethod)) or inspect.isroutine(attr):
            found[name] = getattr(cls, name)
    return found


def defined_here(reference, twin, name: str) -> bool:
    """Whether ``name`` is defined by fastplan (not a re-exported refimpl object)."""
    return getattr(twin, name) is not getattr(reference, name, object())


# --- the tests ------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", MODULES)
def test_mirror_twin_is_compiled(module):
    _, twin = pair(module)
    assert twin.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)), twin.__file__
    assert fastplan.planner_module(module) is twin


@pytest.mark.parametrize("module", MODULES)
def test_mirror_same_all(module):
    reference, twin = pair(module)
    assert list(twin.__all__) == list(reference.__all__)
    for name in reference.__all__:
        assert hasattr(twin, name), name


@pytest.mark.parametrize("module", MODULES)
def test_mirror_same_signatures(module):
    reference, twin = pair(module)
    for name in reference.__all__:
        ref, fast = getattr(reference, name), getattr(twin, name)
        if ref is fast:
            continue  # a refimpl object shared as is
        if callable(ref):
            assert callable(fast), name
            assert same_params(ref, fast), f"{name}: {params(fast)} != {params(ref)}"
        else:
            assert fast == ref, name


@pytest.mark.parametrize("module", MODULES)
def test_mirror_same_methods_both_directions(module):
    reference, twin = pair(module)
    for name in reference.__all__:
        ref, fast = getattr(reference, name), getattr(twin, name)
        if ref is fast or not isinstance(ref, type):
            continue
        ref_methods, fast_methods = public_methods(ref), public_methods(fast)
        assert sorted(fast_methods) == sorted(ref_methods), name  # refimpl's, and no others
        for method, ref_method in ref_methods.items():
            where = f"{name}.{method}"
            assert same_params(ref_method, fast_methods[method]), where
            if first_line(ref_method) is not None:
                assert first_line(fast_methods[method]) == first_line(ref_method), where


@pytest.mark.parametrize("module", MODULES)
def test_mirror_same_first_docstring_line(module):
    reference, twin = pair(module)
    for name in reference.__all__:
        ref, fast = getattr(reference, name), getattr(twin, name)
        if ref is fast or not callable(ref):
            continue
        assert first_line(fast) == first_line(ref), name
        mirrors = f"Mirrors refimpl.planner.{module}.{name}."
        assert mirrors in (fast.__doc__ or ""), f"{name}: no {mirrors!r}"


def _definition_order(path: Path, names) -> list[str]:
    """The order ``names`` are defined in (``def``/``class``/``cdef class`` or assigned)."""
    pattern = re.compile(r"^(?:cdef class|class|def|cpdef) (\w+)|^(\w+)\s*=", re.MULTILINE)
    seen = []
    for match in pattern.finditer(path.read_text()):
        name = match.group(1) or match.group(2)
        if name in names and name not in seen:
            seen.append(name)
    return seen


def _twin_sources(module: str) -> list[Path]:
    """The .pyx files of a twin: its own, then those of the parts it was split into along its
    seams (``<twin>_<seam>.pyx`` whose docstring says it is part of that twin)."""
    own = ROOT.joinpath("fastplan", *module.split(".")).with_suffix(".pyx")
    marker = f"Part of fastplan's twin of ``refimpl/planner/{module.replace('.', '/')}.py``"
    return [own] + [path for path in sorted(own.parent.glob(own.stem + "_*.pyx"))
                    if marker in path.read_text()]


@pytest.mark.parametrize("module", MODULES)
def test_mirror_same_order_in_the_file(module):
    """Each name is defined in one file of the twin (its own or one of its parts), and each file
    defines its names in refimpl's order."""
    reference, twin = pair(module)
    names = [n for n in reference.__all__
             if defined_here(reference, twin, n) and callable(getattr(twin, n))
             and getattr(reference, n).__module__ == reference.__name__]  # not re-exported
    ref_order = _definition_order(Path(reference.__file__), names)
    found = []
    for path in _twin_sources(module):
        fast_order = _definition_order(path, names)
        assert fast_order == [n for n in ref_order if n in fast_order], path.name
        found.extend(fast_order)
    assert sorted(found) == sorted(ref_order)


def test_mirror_every_twin_module_is_built():
    tree = ast.parse((ROOT / "setup.py").read_text())
    [modules] = [ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["MODULES"]]
    twins = {m for m in modules if m != "opinfo" and not m.rpartition(".")[2].startswith("_")}
    assert set(MODULES) <= twins
    # planner: refimpl/planner/__init__.py's twin; launch.handles: the planning half of
    # refimpl/planner/launch/handles.py; launch.execute: the walk of
    # refimpl.planner.launch.execute.launch_plan_stream (test_mirror_execute_*), with its memo
    # launch.launch_memo (no refimpl counterpart); ingest.*: the twins of refimpl.stream and
    # refimpl.validate (fastplan.INGEST_TWINS, tests/fastplan/test_ingest_parity.py);
    # frontend.*: the twins of refimpl.frontend's session, status and tensor
    # (fastplan.frontend.FRONTEND_TWINS, tests/fastplan/test_frontend_parity.py)
    import fastplan.frontend

    ingest = {f"ingest.{name}" for name in fastplan.INGEST_TWINS}
    frontend = {f"frontend.{name}" for name in fastplan.frontend.FRONTEND_TWINS}
    assert ingest <= twins and frontend <= twins
    others = {"planner", "launch.handles", "launch.execute", "launch.launch_memo", *ingest,
              *frontend}
    # a twin split along its seams keeps refimpl's name for the part with refimpl's API and
    # names each other part "<twin>_<seam>" (engine.builder_cores)
    parts = {m for m in twins for twin in set(MODULES) | others
             if m.startswith(twin + "_") and m not in MODULES}
    assert twins - set(MODULES) - parts <= others


def test_mirror_trace_fuser_handlers_match_refimpl():
    """fastplan dispatches on a handler code per op, computed by refimpl's rules: the code of
    every op of the table names the handler refimpl's ``_fuse_op`` would run (the handlers
    live in trace_fuser's cores)."""
    from refimpl.ops import FUSED_CATEGORIES, OPS, OpKind
    from refimpl.planner.engine import trace_fuser as reference

    twin = importlib.import_module("fastplan.engine.trace_fuser_cores")
    for op in OPS:
        if op.kind is OpKind.DROP:
            expected = "drop"
        elif op.category not in FUSED_CATEGORIES:
            expected = reference.REASON_UNSUPPORTED_VARIANT
        else:
            handler = reference._handler_for(op)
            # refimpl's Gather/Select handlers are closures made by ``_indexed``
            expected = reference.REASON_UNSUPPORTED_OP if handler is None else {
                "handler": "_indexed"}.get(handler.__name__, handler.__name__)
        assert twin.HANDLER_NAMES[twin.handler_code(op)] == expected, op.name


def _execute_functions(source: str, pattern: str) -> list[str]:
    return re.findall(pattern, source, re.MULTILINE)


def test_mirror_execute_has_refimpl_fuser_paths_in_order():
    """fastplan.launch.execute (the walk of refimpl.planner.launch.execute's
    ``launch_plan_stream``, not a PLANNER_TWINS twin: refimpl's module also holds the other
    backends' protocol) defines refimpl's ``execute_<fuser>`` functions, and their helpers, in
    refimpl's order, and dispatches on the same fuser names to the same functions."""
    from refimpl.planner.launch import execute as reference

    twin = importlib.import_module("fastplan.launch.execute")
    ref_source = Path(reference.__file__).read_text()
    fast_source = (ROOT / "fastplan" / "launch" / "execute.pyx").read_text()
    ref_paths = _execute_functions(ref_source, r"^def (execute_\w+|matmul_fallback|_reduce_\w+)\(")
    fast_paths = _execute_functions(
        fast_source, r"^cdef \w+ (execute_\w+|matmul_fallback|_reduce_\w+)\(")
    assert fast_paths == ref_paths
    assert list(twin.FUSERS) == list(reference.FUSERS)
    table = dict(re.findall(r"^_EXECUTE\[(\d+)\] = (\w+)$", fast_source, re.MULTILINE))
    assert {name: table[str(at)] for name, at in twin.FUSERS.items()} == {
        name: function.__name__ for name, function in reference.FUSERS.items()}
    assert sorted(int(at) for at in table) == list(range(len(reference.FUSERS)))
