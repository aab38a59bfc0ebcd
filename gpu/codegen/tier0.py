"""The tier-0 kernel: one generic element-wise WGSL kernel that runs any block it can express by
interpreting the block's ops, read from a storage buffer, at every position.

burn counterpart: none (burn compiles every ``FuseBlockConfig`` before its first launch). The
idea is the "ubershader" of game engines and the Dolphin emulator: a generic shader compiled
once that interprets the material's parameters at run time while the specialised shader
compiles in the background. The program it interprets is ``gpu.codegen.tier0_program``'s;
its semantics per position are ``gpu.codegen.emit``'s (same reads, writes and index math).

One kernel per ``Tier0Key``: the compute dtypes in use (a subset of f32/i32/u32; bool is a
``u32`` 0/1), the vector width ``W`` (a position covers ``W`` reference elements, as in the
specialised kernel) and the generic binding layout (``ro`` read-only and ``rw`` read-write
storage slots, then ``prog``). Every value lives in a register file of ``vecW<u32>`` bit
patterns; an op bitcasts its operands to its type. Each op's WGSL comes from the expression
table the specialised kernel uses (``FUSE_EXPR``), so both tiers compute the same thing.

``prog`` (u32 words) holds a header, the instructions (5 words: opcode, dst, a, b, c) and one
descriptor per global read or write (a *view*):

====================  ==================================================================
word                  content
====================  ==================================================================
0                     positions that do work
1                     rank R
2                     instruction count
3                     first instruction word
4 .. 4+R              reference strides
view v                kind, slot, start, step, vs, index kind, shape[R], strides[R],
                      reshape dims[R]
====================  ==================================================================

View kinds (which elements lane ``l`` of position ``p`` touches, ``f = p * W``):
``EACH`` ``start + idx(f + l)``; ``STEP`` ``start + idx(f) + l * step``; ``SPLAT``
``start + idx(f) / vs * vs`` for every lane; ``VEC`` ``start + idx(f) / vs * vs + l`` (one
vector load when aligned); ``POS`` ``start + p * vs`` for every lane. Index kinds: identity,
strided (``Σ (e / ref_stride_d) % shape_d * stride_d``) and reshaped (the linear index in the
reshape dims, then split over the original shape).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from refimpl.dtypes import DType
from gpu.codegen.literals import ExprCtx
from gpu.codegen.ops import FUSE_EXPR
from gpu.codegen.render import dedupe
from gpu.codegen.types import value_type

__all__ = ["Tier0Key", "OPCODES", "COMPUTE_DTYPES", "MAX_REGISTERS", "INSTRUCTION_WORDS",
           "HEADER_WORDS", "VIEW_KINDS", "INDEX_KINDS", "COMPARISONS", "tier0_source",
           "opcode", "op_result"]

COMPUTE_DTYPES = (DType.F32, DType.I32, DType.U32)
MAX_REGISTERS = 16
INSTRUCTION_WORDS = 5
HEADER_WORDS = 4  # then R reference strides
VIEW_KINDS = MappingProxyType({"EACH": 0, "STEP": 1, "SPLAT": 2, "VEC": 3, "POS": 4})
INDEX_KINDS = MappingProxyType({"identity": 0, "strided": 1, "reshaped": 2})
COMPARISONS = frozenset({"Equal", "Lower", "Greater", "LowerEqual", "GreaterEqual"})
_KIND_OF = {DType.F32: "float", DType.I32: "sint", DType.U32: "uint"}


def _opcode_table() -> dict[tuple, int]:
    """Every instruction the interpreter knows, numbered once (the same numbers in every
    kernel variant; a variant leaves out the cases of dtypes it does not hold)."""
    keys: list[tuple] = [("Load",), ("Store",), ("Const",)]
    keys += [("Cast", src, dst) for src in COMPUTE_DTYPES for dst in COMPUTE_DTYPES
             if src is not dst]
    keys += [("NonZero", ty) for ty in COMPUTE_DTYPES]
    for name, rule in FUSE_EXPR.items():
        if name == "Assign":
            continue
        keys += [(name, ty) for ty in COMPUTE_DTYPES if _KIND_OF[ty] in rule.kinds]
    return {key: code for code, key in enumerate(keys)}


OPCODES: Mapping[tuple, int] = MappingProxyType(_opcode_table())


def opcode(key: tuple) -> int | None:
    """The opcode of an instruction key, or ``None`` when the interpreter lacks it."""
    return OPCODES.get(key)


def op_result(name: str, ty: DType) -> DType:
    """The dtype an op computing in ``ty`` produces (comparisons: a ``u32`` 0/1)."""
    return DType.U32 if name in COMPARISONS else ty


@dataclass(frozen=True, slots=True, order=True)
class Tier0Key:
    """What one tier-0 kernel is specialised on."""

    dtypes: tuple[str, ...]  # compute dtype values held, sorted (``("f32", "u32")``)
    width: int
    ro: int  # read-only storage slots
    rw: int  # read-write storage slots

    def holds(self, key: tuple) -> bool:
        """True when this variant has the case of instruction ``key``."""
        return all(d.value in self.dtypes for d in key[1:] if isinstance(d, DType))


# --- WGSL ---------------------------------------------------------------------------------------


def _vec(width: int, scalar: str = "u32") -> str:
    return value_type(_DTYPE_OF[scalar], width)


_DTYPE_OF = {"u32": DType.U32, "f32": DType.F32, "i32": DType.I32}


def _lanes(width: int, lane_expr) -> str:
    """``V(e0, e1, ...)`` (``lane_expr(l)`` per lane), or the one value when ``W = 1``."""
    if width == 1:
        return lane_expr(0)
    return f"{_vec(width)}({', '.join(lane_expr(l) for l in range(width))})"


def _component(width: int, value: str, lane: int) -> str:
    return value if width == 1 else f"{value}[{lane}]"


def _bindings(key: Tier0Key) -> list[str]:
    v = _vec(key.width)
    lines = [f"@group(0) @binding({k}) var<storage, read> ro{k}: array<{v}>;"
             for k in range(key.ro)]
    lines += [f"@group(0) @binding({key.ro + k}) var<storage, read_write> rw{k}: array<{v}>;"
              for k in range(key.rw)]
    lines.append(f"@group(0) @binding({key.ro + key.rw}) var<storage, read> prog: array<u32>;")
    return lines


def _access_fns(key: Tier0Key) -> list[str]:
    """Element and vector access by slot number (a switch: WGSL cannot index bindings)."""
    w, v = key.width, _vec(key.width)
    elem = (lambda name: f"{name}[i]") if w == 1 else (lambda name: f"{name}[i / {w}u][i % {w}u]")
    names = [f"ro{k}" for k in range(key.ro)] + [f"rw{k}" for k in range(key.rw)]
    ld1 = "".join(f"\n        case {s}u: {{ r = {elem(n)}; }}" for s, n in enumerate(names))
    ldv = "".join(f"\n        case {s}u: {{ r = {n}[i]; }}" for s, n in enumerate(names))
    st1 = "".join(f"\n        case {key.ro + k}u: {{ {elem(f'rw{k}')} = x; }}"
                  for k in range(key.rw))
    stv = "".join(f"\n        case {key.ro + k}u: {{ rw{k}[i] = x; }}" for k in range(key.rw))
    return [
        f"fn ld1(s: u32, i: u32) -> u32 {{\n    var r = 0u;\n    switch s {{{ld1}\n"
        "        default: {}\n    }\n    return r;\n}",
        f"fn ldv(s: u32, i: u32) -> {v} {{\n    var r = {v}(0u);\n    switch s {{{ldv}\n"
        "        default: {}\n    }\n    return r;\n}",
        f"fn st1(s: u32, i: u32, x: u32) {{\n    switch s {{{st1}\n        default: {{}}\n"
        "    }\n}",
        f"fn stv(s: u32, i: u32, x: {v}) {{\n    switch s {{{stv}\n        default: {{}}\n"
        "    }\n}",
    ]


_INDEX_FN = """fn vidx(v: u32, e: u32) -> u32 {
    let kind = prog[v + 5u];
    if (kind == 0u) {
        return e;
    }
    let rank = prog[1];
    if (kind == 1u) {
        var off = 0u;
        for (var d = 0u; d < rank; d++) {
            off += ((e / prog[4u + d]) % prog[v + 6u + d]) * prog[v + 6u + rank + d];
        }
        return off;
    }
    var rest = 0u;
    var scale = 1u;
    for (var i = rank; i > 0u; i--) {
        let dim = prog[v + 6u + 2u * rank + i - 1u];
        rest += ((e / prog[4u + i - 1u]) % dim) * scale;
        scale *= dim;
    }
    var off = 0u;
    for (var i = rank; i > 0u; i--) {
        let size = prog[v + 6u + i - 1u];
        off += (rest % size) * prog[v + 6u + rank + i - 1u];
        rest = rest / size;
    }
    return off;
}"""


def _load_store_fns(width: int) -> list[str]:
    w, v = width, _vec(width)
    each = _lanes(w, lambda l: f"ld1(s, start + vidx(v, first{f' + {l}u' if l else ''}))")
    step = _lanes(w, lambda l: f"ld1(s, o{f' + {l}u * prog[v + 3u]' if l else ''})")
    at = _lanes(w, lambda l: f"ld1(s, o{f' + {l}u' if l else ''})")
    stores_at = "\n".join(f"        st1(s, o{f' + {l}u' if l else ''}, "
                          f"{_component(w, 'x', l)});" for l in range(w))
    stores_step = "\n".join(f"        st1(s, o{f' + {l}u * prog[v + 3u]' if l else ''}, "
                            f"{_component(w, 'x', l)});" for l in range(w))
    stores_each = "\n".join(f"    st1(s, start + vidx(v, first{f' + {l}u' if l else ''}), "
                            f"{_component(w, 'x', l)});" for l in range(w))
    load = f"""fn load(v: u32, pos: u32) -> {v} {{
    let kind = prog[v];
    let s = prog[v + 1u];
    let start = prog[v + 2u];
    let vs = prog[v + 4u];
    let first = pos * {w}u;
    if (kind == 4u) {{
        return {v}(ld1(s, start + pos * vs));
    }}
    if (kind == 2u) {{
        return {v}(ld1(s, start + vidx(v, first) / vs * vs));
    }}
    if (kind == 3u) {{
        let o = start + vidx(v, first) / vs * vs;
        if (o % {w}u == 0u) {{
            return ldv(s, o / {w}u);
        }}
        return {at};
    }}
    if (kind == 1u) {{
        let o = start + vidx(v, first);
        return {step};
    }}
    return {each};
}}"""
    store = f"""fn store(v: u32, pos: u32, x: {v}) {{
    let kind = prog[v];
    let s = prog[v + 1u];
    let start = prog[v + 2u];
    let vs = prog[v + 4u];
    let first = pos * {w}u;
    if (kind == 3u) {{
        let o = start + vidx(v, first) / vs * vs;
        if (o % {w}u == 0u) {{
            stv(s, o / {w}u, x);
            return;
        }}
{stores_at}
        return;
    }}
    if (kind == 1u) {{
        let o = start + vidx(v, first);
{stores_step}
        return;
    }}
{stores_each}
}}"""
    return [load, store]


def _case(key: tuple, width: int) -> tuple[str, tuple[str, ...]]:
    """The body of one instruction's case (over registers ``a``, ``b``, ``c`` → ``d``) and
    the helper functions it calls."""
    name, u = key[0], _vec(width)
    if name == "Load":
        return "regs[d] = load(a, pos);", ()
    if name == "Store":
        return "store(a, pos, regs[d]);", ()
    if name == "Const":
        return f"regs[d] = {u}(prog[a]);", ()
    args = ("a", "b", "c")
    if name == "Cast":
        src, dst = key[1], key[2]
        expr, helpers = FUSE_EXPR["Assign"].render(ExprCtx(dst, dst, width, src=src), "x0")
        return f"let x0 = bitcast<{value_type(src, width)}>(regs[a]); " \
               f"regs[d] = bitcast<{u}>({expr});", helpers
    ty = key[1]
    if name == "NonZero":
        ctx = ExprCtx(ty, DType.U32, width)
        return f"let x0 = bitcast<{value_type(ty, width)}>(regs[a]); " \
               f"regs[d] = {ctx.to_u32_bool(f'x0 != {ctx.lit(0)}')};", ()
    rule = FUSE_EXPR[name]
    arity = rule.arity
    loads = " ".join(f"let x{k} = bitcast<{value_type(ty, width)}>(regs[{args[k]}]);"
                     for k in range(arity))
    if name == "ConditionalAssign":  # the condition is a u32 0/1
        loads = "let x0 = regs[a]; " + " ".join(
            f"let x{k} = bitcast<{value_type(ty, width)}>(regs[{args[k]}]);" for k in (1, 2))
    expr, helpers = rule.render(ExprCtx(ty, op_result(name, ty), width),
                                *(f"x{k}" for k in range(arity)))
    return f"{loads} regs[d] = bitcast<{u}>({expr});", helpers


@functools.cache
def tier0_source(key: Tier0Key) -> str:
    """The WGSL of one tier-0 kernel (deterministic: equal keys give equal bytes)."""
    w, v = key.width, _vec(key.width)
    cases, helpers = [], []
    for instruction, code in OPCODES.items():
        if not key.holds(instruction):
            continue
        body, needed = _case(instruction, w)
        helpers += needed
        cases.append(f"            case {code}u: {{ {body} }}")
    functions = _access_fns(key) + [_INDEX_FN] + _load_store_fns(w) + list(dedupe(helpers))
    return "\n".join([
        f"// fuselab tier-0 element-wise interpreter: dtypes {','.join(key.dtypes)}, "
        f"width {w}, {key.ro} read-only + {key.rw} read-write slots",
        "override WG_SIZE: u32 = 64u;", "", *_bindings(key), "",
        "\n\n".join(functions), "",
        "@compute @workgroup_size(WG_SIZE)",
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,",
        "        @builtin(local_invocation_index) lid: u32) {",
        "    let pos = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * WG_SIZE + lid;",
        "    if (pos >= prog[0]) {", "        return;", "    }",
        f"    var regs: array<{v}, {MAX_REGISTERS}>;",
        "    let count = prog[2];",
        "    for (var i = 0u; i < count; i++) {",
        f"        let at = prog[3] + i * {INSTRUCTION_WORDS}u;",
        "        let d = prog[at + 1u];", "        let a = prog[at + 2u];",
        "        let b = prog[at + 3u];", "        let c = prog[at + 4u];",
        "        switch prog[at] {", *cases, "            default: {}", "        }",
        "    }", "}", ""])
