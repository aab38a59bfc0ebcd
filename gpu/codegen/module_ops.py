"""Standalone kernels of the module ops: max / average pooling, adaptive average pooling and
interpolation (nearest, bilinear) over the last two dims of an NCHW tensor.

burn counterpart: burn-cubecl's ``kernel/pool`` (``max_pool2d``, ``avg_pool2d``,
``adaptive_avg_pool2d``) and ``kernel/interpolate`` (``nearest``, ``bilinear``): one
invocation per output element, a loop over its window. The semantics are
``refimpl.semantics_module``'s (PyTorch's index formulas, which burn follows):

* ``MaxPool2d``: the largest element of the dilated window, padding never wins (it starts
  from the dtype's lowest value, a run-time word: WGSL has no infinite constant);
* ``AvgPool2d``: the window's in-range elements summed in window order (f16 in f32), divided
  by ``kh·kw`` (``count_include_pad``) or by how many were in range; ints wrap and truncate;
* ``AdaptiveAvgPool2d``: output ``i`` averages ``[⌊i·in/out⌋, ⌈(i+1)·in/out⌉)`` on each axis;
* ``Interpolate``: ``nearest`` reads ``min(⌊o·in/out⌋, in - 1)``; ``bilinear`` (half-pixel,
  clamped at 0) finds its taps with integer arithmetic — the source ``((2o+1)·in - out) /
  (2·out)`` is exact as a fraction — and weights ``1 - frac``, ``frac`` in the accumulator
  type, first along the width, then along the height. An int tensor's weights are truncated
  like the oracle's (``1`` on an exact tap, else ``0``).

The input is read through its offset and strides (any layout, i32 arithmetic); the output is
contiguous, indexed by the invocation. The window sizes, strides, padding, dilation and the
input's height and width are run-time words (``Schema`` scalars), so a new shape compiles
nothing. Per variant, the scalar words are ``SCALARS[variant]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from refimpl.dtypes import DType
from gpu.codegen.render import Binding, Schema, coords_lines, render_kernel
from gpu.codegen.types import WGSL_TYPE
from gpu.errors import UnsupportedDTypeError, UnsupportedOpError

__all__ = ["ModuleKernel", "SCALARS", "INTERPOLATE_MODES"]

SCALARS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "MaxPool2d": ("in_h", "in_w", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw", "lowest"),
    "AvgPool2d": ("in_h", "in_w", "kh", "kw", "sh", "sw", "ph", "pw"),
    "AdaptiveAvgPool2d": ("in_h", "in_w"),
    "Interpolate": ("in_h", "in_w"),
})
INTERPOLATE_MODES = ("nearest", "bilinear")


@dataclass(frozen=True, slots=True)
class ModuleKernel:
    """The kernel of one module op variant for a dtype and rank (``option``: ``AvgPool2d``'s
    ``"include_pad"`` / ``"exclude_pad"``, ``Interpolate``'s mode)."""

    variant: str
    dtype: DType
    rank: int
    option: str = ""

    @property
    def schema(self) -> Schema:
        return Schema(self.rank, 1, len(SCALARS[self.variant]))

    @property
    def accumulator(self) -> DType:
        return DType.F32 if self.dtype is DType.F16 else self.dtype

    def word(self, name: str) -> str:
        return f"info[{self.schema.scalar(SCALARS[self.variant].index(name))}]"

    def _check(self) -> None:
        if self.variant not in SCALARS:
            raise UnsupportedOpError(f"{self.variant}: not a module op with a GPU kernel")
        if self.dtype not in WGSL_TYPE or self.dtype is DType.BOOL:
            raise UnsupportedDTypeError(f"Module.{self.variant}: no kernel for "
                                        f"{self.dtype.value} tensors")
        if self.rank < 2:
            raise UnsupportedOpError(f"Module.{self.variant}: rank {self.rank} (needs ≥ 2)")
        if self.variant == "Interpolate" and self.option not in INTERPOLATE_MODES:
            raise UnsupportedOpError(f"Module.Interpolate: mode {self.option!r} has no kernel "
                                     f"(one of {', '.join(INTERPOLATE_MODES)})")

    # --- pieces ------------------------------------------------------------------------------

    def _prologue(self) -> list[str]:
        """Coordinates, the input's batch base and its h/w strides (i32)."""
        s, r = self.schema, self.rank
        terms = [f"bitcast<i32>(info[{s.offset(0)}])"]
        terms += [f"i32(c{d}) * bitcast<i32>(info[{s.stride(0, d)}])" for d in range(r - 2)]
        return coords_lines(s) + [
            f"    let base = {' + '.join(terms)};",
            f"    let s_h = bitcast<i32>(info[{s.stride(0, r - 2)}]);",
            f"    let s_w = bitcast<i32>(info[{s.stride(0, r - 1)}]);",
            f"    let in_h = {self.word('in_h')};",
            f"    let in_w = {self.word('in_w')};",
            f"    let o_h = c{r - 2};",
            f"    let o_w = c{r - 1};",
            f"    let out_h = info[{s.shape(r - 2)}];",
            f"    let out_w = info[{s.shape(r - 1)}];",
        ]

    def _at(self, h: str, w: str) -> str:
        return f"x[u32(base + i32({h}) * s_h + i32({w}) * s_w)]"

    def _widen(self, value: str) -> str:
        return value if self.accumulator is self.dtype else f"{WGSL_TYPE[self.accumulator]}({value})"

    def _narrow(self, value: str) -> str:
        return value if self.accumulator is self.dtype else f"{WGSL_TYPE[self.dtype]}({value})"

    def _window_loop(self, inner: list[str], dilated: bool) -> list[str]:
        dh, dw = (self.word("dh"), self.word("dw")) if dilated else ("1u", "1u")
        column = f"i32(o_w * {self.word('sw')} + j * {dw}) - i32({self.word('pw')})"
        return [
            f"    for (var i = 0u; i < {self.word('kh')}; i = i + 1u) {{",
            f"        let h = i32(o_h * {self.word('sh')} + i * {dh}) - i32({self.word('ph')});",
            f"        for (var j = 0u; j < {self.word('kw')}; j = j + 1u) {{",
            f"            let w = {column};",
            "            if (h >= 0 && h < i32(in_h) && w >= 0 && w < i32(in_w)) {",
            *[f"                {line}" for line in inner],
            "            }", "        }", "    }"]

    def _zero(self, dtype: DType) -> str:
        return {"f32": "0.0", "f16": "0.0h", "i32": "0i", "u32": "0u"}[WGSL_TYPE[dtype]]

    # --- the variants ------------------------------------------------------------------------

    def _max_pool(self) -> list[str]:
        ty = WGSL_TYPE[self.dtype]
        lowest = {"f32": f"bitcast<f32>({self.word('lowest')})",
                  "f16": f"f16(unpack2x16float({self.word('lowest')}).x)",
                  "i32": f"bitcast<i32>({self.word('lowest')})",
                  "u32": self.word("lowest")}[ty]
        return ([f"    var best = {lowest};"]
                + self._window_loop([f"best = max(best, {self._at('h', 'w')});"], True)
                + ["    out[pos] = best;"])

    def _avg_pool(self) -> list[str]:
        acc = WGSL_TYPE[self.accumulator]
        divisor = (f"{self.word('kh')} * {self.word('kw')}" if self.option == "include_pad"
                   else "count")
        return ([f"    var total = {self._zero(self.accumulator)};", "    var count = 0u;"]
                + self._window_loop([f"total = total + {self._widen(self._at('h', 'w'))};",
                                     "count = count + 1u;"], False)
                + [f"    out[pos] = {self._narrow(f'total / {acc}({divisor})')};"])

    def _adaptive(self) -> list[str]:
        acc = WGSL_TYPE[self.accumulator]
        return [
            "    let h0 = o_h * in_h / out_h;",
            "    let h1 = ((o_h + 1u) * in_h + out_h - 1u) / out_h;",
            "    let w0 = o_w * in_w / out_w;",
            "    let w1 = ((o_w + 1u) * in_w + out_w - 1u) / out_w;",
            f"    var total = {self._zero(self.accumulator)};",
            "    for (var h = h0; h < h1; h = h + 1u) {",
            "        for (var w = w0; w < w1; w = w + 1u) {",
            f"            total = total + {self._widen(self._at('h', 'w'))};",
            "        }", "    }",
            f"    out[pos] = {self._narrow(f'total / {acc}((h1 - h0) * (w1 - w0))')};",
        ]

    def _nearest(self) -> list[str]:
        return ["    let h = min(o_h * in_h / out_h, in_h - 1u);",
                "    let w = min(o_w * in_w / out_w, in_w - 1u);",
                f"    out[pos] = {self._at('h', 'w')};"]

    def _taps(self, axis: str) -> list[str]:
        """``{axis}0``, ``{axis}1`` and their weights ``{axis}_w0``, ``{axis}_w1``."""
        acc = WGSL_TYPE[self.accumulator]
        o, n, m = f"o_{axis}", f"in_{axis}", f"out_{axis}"
        lines = [f"    let {axis}_num = (2u * {o} + 1u) * {n};",
                 f"    let {axis}_ahead = select(0u, {axis}_num - {m}, {axis}_num > {m});",
                 f"    let {axis}0 = min({axis}_ahead / (2u * {m}), {n} - 1u);",
                 f"    let {axis}1 = min({axis}0 + 1u, {n} - 1u);",
                 f"    let {axis}_rem = {axis}_ahead - {axis}0 * 2u * {m};"]
        if self.accumulator.is_float:
            lines += [f"    let {axis}_w1 = {acc}({axis}_rem) / {acc}(2u * {m});",
                      f"    let {axis}_w0 = {acc}(1.0) - {axis}_w1;"]
        else:  # truncated like the oracle's (1 - frac).astype(int), frac.astype(int)
            lines += [f"    let {axis}_w0 = select({acc}(0), {acc}(1), {axis}_rem == 0u);",
                      f"    let {axis}_w1 = {acc}(0);"]
        return lines

    def _bilinear(self) -> list[str]:
        def row(h: str) -> str:
            return (f"{self._widen(self._at(h, 'w0'))} * w_w0 + "
                    f"{self._widen(self._at(h, 'w1'))} * w_w1")
        return (self._taps("h") + self._taps("w") + [
            f"    let top = {row('h0')};",
            f"    let bottom = {row('h1')};",
            f"    out[pos] = {self._narrow('top * h_w0 + bottom * h_w1')};"])

    def body(self) -> list[str]:
        variant = self.variant
        if variant == "Interpolate":
            main = self._nearest() if self.option == "nearest" else self._bilinear()
        else:
            main = {"MaxPool2d": self._max_pool, "AvgPool2d": self._avg_pool,
                    "AdaptiveAvgPool2d": self._adaptive}[variant]()
        return self._prologue() + main

    def source(self) -> str:
        """The WGSL text (deterministic: equal kernels give equal bytes)."""
        self._check()
        bindings = [Binding("x", self.dtype), Binding("out", self.dtype, writable=True)]
        name = f"Module.{self.variant} {self.dtype.value} rank {self.rank}"
        if self.option:
            name += f" {self.option}"
        return render_kernel("elementwise", name, bindings, (), self.body())
