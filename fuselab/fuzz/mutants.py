"""Injected bugs (mutants) in the planner and the WGSL code generation, to measure what the
fuzzer finds: ``fuselab fuzz --mutant NAME`` (a hidden option of the test build).

burn counterpart: none. Nothing in the planner or codegen knows about mutants: ``apply(name)``
patches the running process only. A source mutant rewrites one snippet of one function
(``old`` → ``new``, which must occur in the current source: a stale mutant raises
``MutantError``) and swaps the function's code object in place, so every reference to the
function sees the change; a table mutant replaces entries of the WGSL expression tables; a
constant mutant rebinds a module constant. Planner mutants change refimpl's planner (a
campaign with a mutant plans with refimpl's modules, ``--planner ref``; fastplan's compiled
twin stays the unmutated reference of the ``plan`` and ``launch`` checks).

Two are real bugs this project had: ``signed-rem-lowering-off`` (WGSL's ``%`` on signed ints,
wrong on NVIDIA's driver; right on lavapipe) and ``broadcast-view-strides-reverted`` (the
broadcast-input-with-a-view lane stride, ``gpu/runtime/fused_launch._broadcast_strides``).
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from refimpl.errors import FuselabError

__all__ = ["MUTANTS", "Mutant", "MutantError", "apply", "names", "stale"]


class MutantError(FuselabError):
    """An unknown mutant, or one whose snippet no longer occurs in the source."""


@dataclass(frozen=True)
class Mutant:
    """One injected bug: where, what, and the campaign settings it is measured with."""

    name: str
    area: str  # "planner" or "codegen"
    what: str
    target: str = ""  # "module:qualname" of a source mutant
    old: str = ""
    new: str = ""
    patch: Callable[[], None] | None = None
    more: tuple[tuple[str, str, str], ...] = ()  # further (target, old, new) edits
    checks: tuple[str, ...] = ("launch", "interp", "plan-space", "plan")
    max_ops: int = 12
    long_chains: int = 200
    devices: tuple[str, ...] = ("metal",)


def _resolve(target: str) -> Any:
    module, _, qualname = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _mutate_source(target: str, old: str, new: str) -> None:
    func = _resolve(target)
    source = textwrap.dedent(inspect.getsource(func))
    if old not in source:
        raise MutantError(f"mutant of {target}: {old!r} is not in its source")
    namespace = dict(func.__globals__)
    exec(compile(source.replace(old, new, 1), f"<mutant {target}>", "exec"), namespace)
    made = namespace[func.__name__]
    made = getattr(made, "fget", None) or getattr(made, "__func__", None) or made
    func.__code__ = made.__code__


def _table_entry(table: Any, key: str, entry: Any) -> None:
    """Replace ``key`` of a ``MappingProxyType`` table (and of ``WGSL_EXPR`` where it holds
    the same entry)."""
    from gpu.codegen import ops

    old = table[key]
    for proxy in (table, ops.WGSL_EXPR):
        backing = next(r for r in gc.get_referents(proxy) if isinstance(r, dict))
        for name, value in list(backing.items()):
            if value is old or (proxy is table and name == key):
                backing[name] = entry


def _expr(key: str, kinds: tuple[str, ...], render: Callable, keep: tuple[str, ...] = ()) \
        -> Callable[[], None]:
    def patch() -> None:
        from gpu.codegen import ops

        old = ops.FUSE_EXPR[key]
        variants = {k: v for k, v in old.variants.items() if k in keep}
        variants.update({k: (render, None) for k in kinds})
        _table_entry(ops.FUSE_EXPR, key, dataclasses.replace(
            old, variants=__import__("types").MappingProxyType(variants)))
    return patch


def _reduce_read_broadcasts() -> None:
    from refimpl.planner.fusers import reduce

    reduce.REDUCE_READ_SETTINGS = dataclasses.replace(reduce.REDUCE_READ_SETTINGS,
                                                      broadcast=True)


def _guard_removed() -> None:
    from string import Template

    from gpu.codegen import render

    original = render._skeleton

    def skeleton(name: str) -> Template:
        text = original(name).template
        # info[0] stays read (an unused binding would change the pipeline layout)
        return Template(text.replace("if (pos >= info[0]) {", "if (pos >= info[0] + 4096u) {"))
    render._skeleton = skeleton


_GPU = ("gpu",)
# vector widths: a binding's vector size is in its launch plan (``launch``); the interpreter
# computes every lane from its own coordinates, so a wrong width shows in the GPU's vector
# loads, and in the plan where it changes a block's width
_VECTOR = ("launch", "interp", "plan", "gpu")
_TF = "refimpl.planner.engine.trace_fuser"
_LP = "refimpl.planner.launch.launch_planners"
_VEC = "refimpl.planner.launch.vectorization"

MUTANTS: dict[str, Mutant] = {m.name: m for m in (
    # --- planner ---------------------------------------------------------------------------
    Mutant("max-ops-ge", "planner", "max_ops compared with >= (a block closes one op early)",
           f"{_TF}:TryTraceFuser.fuse", "num_ops_fused() > self.max_ops",
           "num_ops_fused() >= self.max_ops", checks=("plan",), long_chains=5),
    Mutant("first-op-bindings-unchecked", "planner", "the binding check skips a block's "
           "first op", f"{_TF}:TryTraceFuser.fuse",
           "return _run(add_ops, self.fuser) or self._bindings_refusal(self.fuser)",
           "return _run(add_ops, self.fuser)", devices=("webgpu-default",)),
    Mutant("alias-readonly-input", "planner", "an output aliased into a held (ReadOnly) input",
           f"{_LP}:_analyze_normal", "if relative.status is TensorStatus.ReadWrite and ",
           "if ", more=((f"{_LP}:plan_inputs",
                         "can_mut = state.memory.users(handle.buffer) == 0 and",
                         "can_mut = True and"),)),
    Mutant("inplace-multi-reader", "planner", "an in-place candidate read by several blocks",
           f"{_LP}:_analyze_normal", "if len(readers) != 1:", "if not readers:"),
    Mutant("inplace-shape-unchecked", "planner", "an in-place output of another shape",
           f"{_LP}:_inplace_candidate",
           "candidate.dtype != glob.dtype or candidate.shape != relative.shape",
           "candidate.dtype != glob.dtype"),
    Mutant("inplace-dtype-unchecked", "planner", "an in-place output of another dtype",
           f"{_LP}:_inplace_candidate",
           "candidate.dtype != glob.dtype or candidate.shape != relative.shape",
           "candidate.shape != relative.shape"),
    Mutant("broadcast-operand-block-width", "planner", "a broadcast operand given the "
           "block's vector width", f"{_VEC}:vectorization_input",
           "return BROADCASTED", "return _first(sizes, lambda s: True)"),
    Mutant("vector-width-not-dividing", "planner", "a read's vector width need not divide "
           "its axis", f"{_VEC}:vectorization_input",
           "lambda s: shape_axis % s == 0 and next_stride % s == 0",
           "lambda s: next_stride % s == 0", checks=_VECTOR),
    Mutant("swap-view-vector-unchecked", "planner", "a multi-read swap view vectorized "
           "though the swapped dim is strided", f"{_VEC}:vectorization_swapped",
           "(strides[axis] != 1 or strides[dim_index] != 1)", "(strides[axis] != 1)",
           checks=_VECTOR),
    Mutant("multi-read-width-kept", "planner", "a view read at another width than its "
           "original keeps the original's", f"{_VEC}:merge_multi_reads",
           "if new.broadcast or new.size != existing.size:\n        return Vect(1)",
           "if new.broadcast or new.size != existing.size:\n        return existing",
           checks=_VECTOR),
    Mutant("reduce-read-broadcasts", "planner", "a reduce read block that broadcasts",
           patch=_reduce_read_broadcasts),
    Mutant("swap-dims-identity", "planner", "a fused swap_dims view recorded as swapping a dim "
           "with itself", f"{_TF}:_swap_dims", "(d.dim1, d.dim2)", "(d.dim1, d.dim1)",
           checks=_VECTOR),
    Mutant("output-shape-updates-ignored", "planner", "a block's reference shape grows though "
           "its settings forbid it (a matmul epilogue)",
           f"{_TF}:TraceOperationFuser.output_is_compatible",
           "if curr == 0 and self.settings.output_shape_updates:", "if curr == 0:"),
    # --- codegen ---------------------------------------------------------------------------
    Mutant("signed-rem-lowering-off", "codegen", "WGSL % on signed ints (the lowering off; "
           "right on lavapipe, wrong on NVIDIA)", "gpu.codegen.helpers:int_rem_helper",
           '"let r = a - s * (a / s);"', '"let r = a % s;"', checks=_GPU),
    Mutant("int-rem-truncated", "codegen", "integer Rem without the floor correction",
           "gpu.codegen.helpers:int_rem_helper", "return select(r, r + s, ", "return select(r, r, ",
           checks=_GPU),
    Mutant("broadcast-view-strides-reverted", "codegen", "a broadcast input read through a "
           "view steps its lanes off its size-1 axis (the fix reverted)",
           "gpu.runtime.fused_launch:_broadcast_strides",
           "return tuple(0 if d == 1 else s for d, s in zip(shape, strides))",
           "return tuple(strides)", checks=_GPU),
    Mutant("swap-remap-stride", "codegen", "a swap view's index remap uses the unswapped "
           "stride", "gpu.codegen.fuse_io:BodyWriter.offset_fn",
           "{self.info(lay.slot_stride(slot, j))}", "{self.info(lay.slot_stride(slot, i))}",
           checks=_GPU),
    Mutant("reshape-remap-order", "codegen", "a reshape view's linear index ignores the "
           "reshaped dims' sizes", "gpu.codegen.fuse_io:BodyWriter.reshaped_fn",
           "stride.append(dim)", "stride.append('1u')", checks=_GPU),
    Mutant("missing-bounds-guard", "codegen", "the bounds guard of element-wise kernels lets 4096 "
           "positions too many through",
           patch=_guard_removed, checks=_GPU),
    Mutant("scalar-metadata-slot", "codegen", "a scalar read from the next metadata word",
           "gpu.codegen.fused_signature:MetadataLayout.scalar",
           "return self.reshape(self.reshapes) + k", "return self.reshape(self.reshapes) + k + 1",
           checks=_GPU),
    Mutant("clamp-swapped", "codegen", "clamp as max(min(x, lo), hi)",
           patch=_expr("Clamp", ("float", "sint", "uint"),
                       lambda ctx, a, lo, hi: f"max(min({a}, {lo}), {hi})"), checks=_GPU),
    Mutant("lower-inclusive", "codegen", "Lower rendered as <=",
           patch=_expr("Lower", ("float", "sint", "uint"),
                       lambda ctx, a, b: ctx.to_u32_bool(f"{a} <= {b}")), checks=_GPU),
    Mutant("float-rem-truncated", "codegen", "float Rem with trunc instead of floor",
           patch=_expr("Rem", ("float",), lambda ctx, a, b: f"({a} - {b} * trunc({a} / {b}))",
                       keep=("sint", "uint")), checks=_GPU),
    Mutant("float-to-int-rounds", "codegen", "float to int conversion rounds",
           "gpu.codegen.helpers:float_to_int_helper",
           'f"let t = {out_ty}(clamp(v, {c(lo)}, {c(hi)}));"',
           'f"let t = {out_ty}(round(clamp(v, {c(lo)}, {c(hi)})));"',
           checks=_GPU),
    Mutant("matmul-skips-last-k", "codegen", "the matmul kernel's K loop stops one early",
           "gpu.codegen.matmul:MatmulKernel.source", "k < info[", "k + 1u < info[",
           checks=_GPU),
    Mutant("reduce-max-identity-zero", "codegen", "Max/MaxAbs start from 0, not -inf",
           "gpu.codegen.reduce:identity_word_value",
           'return float("-inf") if lowest else float("inf")',
           'return 0.0 if lowest else float("inf")', checks=_GPU),
    Mutant("cat-segment-start", "codegen", "a fused cat's segment starts one element late",
           "gpu.codegen.emit:_cat", 'f"({coord} >= {start}) && "', 'f"({coord} > {start}) && "',
           checks=_GPU),
    Mutant("gather-dim-stride", "codegen", "a fused gather steps the index by the first "
           "dim's stride", "gpu.codegen.emit:_gather",
           'f"{k} * {body.info(lay.slot_stride(src, a.dim))}"',
           'f"{k} * {body.info(lay.slot_stride(src, 0))}"', checks=_GPU),
)}

_APPLIED: set[str] = set()


def names() -> tuple[str, ...]:
    return tuple(MUTANTS)


def stale() -> list[str]:
    """Source edits whose snippet is not in the current source (nothing is applied)."""
    found = []
    for mutant in MUTANTS.values():
        edits = ((mutant.target, mutant.old, mutant.new), *mutant.more) if mutant.target else ()
        for target, old, _ in edits:
            if old not in textwrap.dedent(inspect.getsource(_resolve(target))):
                found.append(f"{mutant.name}: {target}")
    return found


def apply(name: str) -> Mutant:
    """Switch mutant ``name`` on in this process (once)."""
    mutant = MUTANTS.get(name)
    if mutant is None:
        raise MutantError(f"unknown mutant {name!r} (known: {', '.join(MUTANTS)})")
    if name not in _APPLIED:
        if mutant.patch is not None:
            mutant.patch()
        else:
            for target, old, new in ((mutant.target, mutant.old, mutant.new), *mutant.more):
                _mutate_source(target, old, new)
        _APPLIED.add(name)
    return mutant
