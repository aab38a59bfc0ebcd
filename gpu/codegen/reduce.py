"""Reduction kernels: per-axis (SumDim ... AllDim, ArgMax, ArgMin) and full (Sum ... All).

burn counterpart: cubek's reduce (``burn-cubecl/src/kernel/reduce``: ``ReduceInstruction``s
``Sum``, ``Prod``, ``Mean``, ``MaxAbs``, ``ArgMax``, ``ArgMin``, ``Max``, ``Min``, ``Any``,
``All``). That kernel picks among plane/shared strategies with autotune; ours is the simple
correct baseline:

* per-axis: one invocation per output element, looping over the reduced axis in order
  (axis length and stride are runtime words, so one kernel serves every axis);
* full: a workgroup reduction — each invocation accumulates a grid-stride share, the
  workgroup combines its ``WG_SIZE`` partials in ``var<workgroup>`` memory with a tree of
  ``workgroupBarrier()`` steps (``WG_SIZE`` must be a power of two), one partial per
  workgroup; a second launch of the rank-1 ``final`` kernel reduces the partials.

Accumulation: f16 sums/products/means accumulate in f32 and round once (the oracle's rule);
ints wrap. Max/Min/MaxAbs start from a runtime identity word (−inf or the int minimum: no
inf constant in WGSL), ArgMax/ArgMin from the first element, first index wins ties.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable, Mapping

from refimpl.dtypes import DType
from gpu.codegen.literals import literal
from gpu.codegen.render import Binding, Schema, coords_lines, render_kernel, scalar_load
from gpu.codegen.types import WGSL_TYPE

__all__ = ["Reducer", "REDUCERS", "ReduceDimKernel", "ReduceFullKernel", "ArgKernel",
           "accumulator", "identity_word_value"]


@dataclass(frozen=True, slots=True)
class Reducer:
    """How one reduction maps, combines and finishes values (WGSL over names)."""

    identity: str  # "zero", "one", "lowest", "highest": literal or runtime word
    combine: Callable[[str, str], str]
    prepare: Callable[[str, DType], str] = lambda v, dtype: v
    mean: bool = False  # divide by the element count at the end
    logical: bool = False  # bool result: the accumulator is u32 0/1


def _truthy(v: str, dtype: DType) -> str:
    zero = literal(0, dtype)
    return f"select(0u, 1u, {v} != {zero})"


def _abs(v: str, dtype: DType) -> str:
    return v if WGSL_TYPE[dtype] == "u32" else f"abs({v})"


REDUCERS: Mapping[str, Reducer] = MappingProxyType({
    "Sum": Reducer("zero", lambda a, b: f"{a} + {b}"),
    "Mean": Reducer("zero", lambda a, b: f"{a} + {b}", mean=True),
    "Prod": Reducer("one", lambda a, b: f"{a} * {b}"),
    "Max": Reducer("lowest", lambda a, b: f"max({a}, {b})"),
    "Min": Reducer("highest", lambda a, b: f"min({a}, {b})"),
    "MaxAbs": Reducer("lowest", lambda a, b: f"max({a}, {b})", prepare=_abs),
    "Any": Reducer("zero", lambda a, b: f"{a} | {b}", prepare=_truthy, logical=True),
    "All": Reducer("one", lambda a, b: f"{a} & {b}", prepare=_truthy, logical=True),
})

_RUNTIME_IDENTITY = ("lowest", "highest")


def accumulator(reducer: Reducer, dtype: DType) -> DType:
    """The dtype partial results live in: u32 for logical, f32 for f16 sums, else ``dtype``."""
    if reducer.logical:
        return DType.U32
    if dtype is DType.F16 and reducer.identity in ("zero", "one"):
        return DType.F32
    return dtype


def identity_word_value(reducer: Reducer, dtype: DType) -> float | int:
    """The runtime identity of Max/Min/MaxAbs: ∓inf for floats, the int min/max."""
    lowest = reducer.identity == "lowest"
    if dtype.is_float:
        return float("-inf") if lowest else float("inf")
    info = {DType.I32: (-(2**31), 2**31 - 1), DType.U32: (0, 2**32 - 1)}[dtype]
    return info[0] if lowest else info[1]


def _identity(reducer: Reducer, acc: DType, word: int) -> str:
    if reducer.identity in _RUNTIME_IDENTITY:
        return scalar_load(word, acc)
    return literal(0 if reducer.identity == "zero" else 1, acc)


def _finish(reducer: Reducer, acc: DType, out: DType, count: str) -> str:
    value = "acc"
    if reducer.mean and acc.is_float:
        value = f"acc / {WGSL_TYPE[acc]}({count})"
    elif reducer.mean:
        value = f"acc / select({WGSL_TYPE[acc]}({count}), {literal(1, acc)}, {count} == 0u)"
    return value if WGSL_TYPE[acc] == WGSL_TYPE[out] else f"{WGSL_TYPE[out]}({value})"


@dataclass(frozen=True, slots=True)
class ReduceDimKernel:
    """One invocation per output element; loops over the axis (length, stride: words)."""

    variant: str  # key of REDUCERS
    dtype: DType
    out: DType
    rank: int

    @property
    def schema(self) -> Schema:
        return Schema(self.rank, 1, 3)  # scalars: axis length, axis stride, identity

    def source(self) -> str:
        r, s = REDUCERS[self.variant], self.schema
        acc = accumulator(r, self.dtype)
        length, stride = f"info[{s.scalar(0)}]", f"bitcast<i32>(info[{s.scalar(1)}])"
        value = r.prepare(f"{WGSL_TYPE[acc]}(src[u32(base + i32(k) * {stride})])"
                          if acc is not self.dtype and not r.logical
                          else f"src[u32(base + i32(k) * {stride})]", self.dtype)
        body = coords_lines(s) + [
            f"    let base = i32({s.offset_expr(0)});",
            f"    var acc = {_identity(r, acc, s.scalar(2))};",
            f"    for (var k = 0u; k < {length}; k = k + 1u) {{",
            f"        acc = {r.combine('acc', value)};",
            "    }",
            f"    dst[pos] = {_finish(r, acc, self.out, length)};",
        ]
        bindings = [Binding("src", self.dtype), Binding("dst", self.out, writable=True)]
        return render_kernel("elementwise", f"{self.variant}Dim {self.dtype.value} -> "
                             f"{self.out.value} rank {self.rank}", bindings, (), body)


@dataclass(frozen=True, slots=True)
class ArgKernel:
    """ArgMax / ArgMin along an axis: the first index of the extreme."""

    variant: str  # "ArgMax" or "ArgMin"
    dtype: DType
    out: DType
    rank: int

    @property
    def schema(self) -> Schema:
        return Schema(self.rank, 1, 2)  # scalars: axis length, axis stride

    def source(self) -> str:
        s = self.schema
        better = ">" if self.variant == "ArgMax" else "<"
        length, stride = f"info[{s.scalar(0)}]", f"bitcast<i32>(info[{s.scalar(1)}])"
        body = coords_lines(s) + [
            f"    let base = i32({s.offset_expr(0)});",
            "    var best = src[u32(base)];",
            "    var index = 0u;",
            f"    for (var k = 1u; k < {length}; k = k + 1u) {{",
            f"        let v = src[u32(base + i32(k) * {stride})];",
            f"        if (v {better} best) {{",
            "            best = v;",
            "            index = k;",
            "        }",
            "    }",
            f"    dst[pos] = {WGSL_TYPE[self.out]}(index);",
        ]
        bindings = [Binding("src", self.dtype), Binding("dst", self.out, writable=True)]
        return render_kernel("elementwise", f"{self.variant} {self.dtype.value} -> "
                             f"{self.out.value} rank {self.rank}", bindings, (), body)


@dataclass(frozen=True, slots=True)
class ReduceFullKernel:
    """A workgroup reduction of ``info[0]`` elements to one partial per workgroup.

    ``final`` kernels finish (mean, output dtype) and are launched with one workgroup.
    """

    variant: str
    dtype: DType  # element dtype read (the accumulator dtype for a second stage)
    out: DType  # written dtype: the accumulator's unless final
    rank: int
    final: bool

    @property
    def schema(self) -> Schema:
        return Schema(self.rank, 1, 2)  # scalars: identity, element count of the whole input

    def source(self) -> str:
        r, s = REDUCERS[self.variant], self.schema
        acc = accumulator(r, self.dtype)
        load = f"src[{s.offset_expr(0)}]"
        if acc is not self.dtype and not r.logical:
            load = f"{WGSL_TYPE[acc]}({load})"
        result = _finish(r, acc, self.out, f"info[{s.scalar(1)}]") if self.final else "acc"
        body = ["    let stride = groups * WG_SIZE;",
                f"    var acc = {_identity(r, acc, s.scalar(0))};",
                "    for (var i = group * WG_SIZE + lid; i < info[0]; i = i + stride) {"]
        body += coords_lines(s, index="i", indent="        ")
        body += [f"        acc = {r.combine('acc', r.prepare(load, self.dtype))};",
                 "    }",
                 "    scratch[lid] = acc;",
                 "    workgroupBarrier();",
                 "    for (var half = WG_SIZE / 2u; half > 0u; half = half / 2u) {",
                 "        if (lid < half) {",
                 f"            scratch[lid] = {r.combine('scratch[lid]', 'scratch[lid + half]')};",
                 "        }",
                 "        workgroupBarrier();",
                 "    }",
                 "    if (lid == 0u) {",
                 "        let acc = scratch[0];",
                 f"        dst[group] = {result};",
                 "    }"]
        bindings = [Binding("src", self.dtype), Binding("dst", self.out, writable=True)]
        stage = "final" if self.final else "partial"
        return render_kernel("workgroup", f"{self.variant} {stage} {self.dtype.value} -> "
                             f"{self.out.value} rank {self.rank}", bindings, (), body,
                             scratch_type=WGSL_TYPE[acc])
