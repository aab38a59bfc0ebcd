"""The tier-0 kernel: one generic element-wise WGSL kernel that runs any block it can express by
interpreting the block's ops, read from a storage buffer, at every position.

burn counterpart: none (burn compiles every ``FuseBlockConfig`` before its first launch). The
idea is the "ubershader" of game engines and the Dolphin emulator: a generic shader compiled
once that interprets the material's parameters at run time while the specialised shader
compiles in the background. The program it interprets is ``gpu.codegen.tier0_program``'s;
its semantics per position are ``gpu.codegen.emit``'s (same reads, writes and index math).

One kernel per ``Tier0Key``: the compute dtypes in use (a subset of f32/i32/u32; bool is a
``u32`` 0/1), the op families in use (``FAMILIES``: the cases of the others are left out,
which matters where a branch is run masked, as on lavapipe), the vector width ``W`` (a
position covers ``W`` reference elements, as in the specialised kernel) and the generic
binding layout (``ro`` read-only and ``rw`` read-write storage slots, then ``prog``). Every
value lives in one of ``MAX_REGISTERS`` registers of ``vecW<u32>`` bit patterns, held (one of
``REGISTER_FILES``) either as separate variables reached through switches on the (uniform) register number (``switch``) or as one indexed private array
(``array``, which a GPU may keep in local memory); an op bitcasts its operands to its type. Each
op's WGSL comes from the expression table the specialised kernel uses (``FUSE_EXPR``), so
both tiers compute the same thing.

``prog`` (u32 words) holds a header, the instructions (5 words: opcode, result register ``d``,
operands ``a``, ``b``, ``c``; a register number past the last one reads zero and writes
nothing, an operand from ``CONST_OPERAND`` on is the word at ``operand - CONST_OPERAND`` (a
scalar or literal, splat; no instruction loads it); ``Load`` takes a view in ``a``, ``Store``
its value in ``a`` and its view in ``b``) and one descriptor per global read or write (a *view*):

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

__all__ = ["Tier0Key", "OPCODES", "COMPUTE_DTYPES", "MAX_REGISTERS", "CONST_OPERAND", "INSTRUCTION_WORDS",
           "HEADER_WORDS", "UNROLL", "REGISTER_FILES",
           "REGISTERS", "VIEW_KINDS", "INDEX_KINDS", "COMPARISONS", "FAMILIES",
           "family", "tier0_source", "opcode", "op_result"]

COMPUTE_DTYPES = (DType.F32, DType.I32, DType.U32)
MAX_REGISTERS = 8
CONST_OPERAND = 16  # operands from here on name a program word, not a register
UNROLL = 1  # positions per invocation
REGISTER_FILES = ("switch", "array")
REGISTERS = "switch"  # the default register file
INSTRUCTION_WORDS = 5
HEADER_WORDS = 4  # then R reference strides
VIEW_KINDS = MappingProxyType({"EACH": 0, "STEP": 1, "SPLAT": 2, "VEC": 3, "POS": 4})
INDEX_KINDS = MappingProxyType({"identity": 0, "strided": 1, "reshaped": 2})
COMPARISONS = frozenset({"Equal", "Lower", "Greater", "LowerEqual", "GreaterEqual"})
_KIND_OF = {DType.F32: "float", DType.I32: "sint", DType.U32: "uint"}

# Op families: a kernel holds the cases of the families its programs use. "core" is always in.
FAMILIES = ("core", "math", "special")
_MATH = frozenset({"Exp", "Log", "Log1p", "Cos", "Sin", "Tanh", "Sqrt", "Recip"})
_SPECIAL = frozenset({"Erf", "Powf", "Rem"})


def family(name: str) -> str:
    """The family of an instruction name."""
    return "math" if name in _MATH else "special" if name in _SPECIAL else "core"


def _opcode_table() -> dict[tuple, int]:
    """Every instruction the interpreter knows, numbered once (the same numbers in every
    kernel variant; a variant leaves out the cases of dtypes it does not hold)."""
    keys: list[tuple] = [("Load",), ("Store",)]
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
    families: tuple[str, ...]  # op families held, in ``FAMILIES`` order
    width: int
    unroll: int  # positions per invocation (``p_u = t + u * threads``), each instruction
    # decoded once for all of them
    ro: int  # read-only storage slots
    rw: int  # read-write storage slots
    registers: str = "switch"  # the register file, one of ``REGISTER_FILES``

    def holds(self, key: tuple) -> bool:
        """True when this variant has the case of instruction ``key``."""
        return family(key[0]) in self.families and all(
            d.value in self.dtypes for d in key[1:] if isinstance(d, DType))


# --- WGSL ---------------------------------------------------------------------------------------


def _vec(width: int, scalar: str = "u32") -> str:
    return value_type(_DTYPE_OF[scalar], width)


_DTYPE_OF = {"u32": DType.U32, "f32": DType.F32, "i32": DType.I32}


def _lanes(width: int, lane_expr) -> str:
    """``V(e0, e1, ...)`` (``lane_expr(l)`` per lane), or the one value when ``W = 1``."""
    if width == 1:
        return lane_expr(0)
    return f"{_vec(width)}({', '.join(lane_expr(lane) for lane in range(width))})"


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
    each = _lanes(w, lambda lane: f"ld1(s, start + vidx(v, first{f' + {lane}u' if lane else ''}))")
    step = _lanes(w, lambda lane: f"ld1(s, o{f' + {lane}u * prog[v + 3u]' if lane else ''})")
    at = _lanes(w, lambda lane: f"ld1(s, o{f' + {lane}u' if lane else ''})")
    stores_at = "\n".join(f"        st1(s, o{f' + {lane}u' if lane else ''}, "
                          f"{_component(w, 'x', lane)});" for lane in range(w))
    stores_step = "\n".join(f"        st1(s, o{f' + {lane}u * prog[v + 3u]' if lane else ''}, "
                            f"{_component(w, 'x', lane)});" for lane in range(w))
    stores_each = "\n".join(f"    st1(s, start + vidx(v, first{f' + {lane}u' if lane else ''}), "
                            f"{_component(w, 'x', lane)});" for lane in range(w))
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


def _case(key: tuple, width: int, u: int) -> tuple[str, tuple[str, ...]]:
    """The body of one instruction's case for the ``u``-th position of the invocation (over
    operand values ``x0_u``, ``x1_u``, ``x2_u`` → ``y_u``) and the helper functions it calls."""
    name, v = key[0], _vec(width)
    x, y = (f"x0_{u}", f"x1_{u}", f"x2_{u}"), f"y_{u}"
    if name == "Load":
        return f"{y} = load(a, p{u});", ()
    if name == "Store":
        return f"if (p{u} < n) {{ store(b, p{u}, {x[0]}); }}", ()
    if name == "Cast":
        src, dst = key[1], key[2]
        expr, helpers = FUSE_EXPR["Assign"].render(ExprCtx(dst, dst, width, src=src), "v0")
        return f"{{ let v0 = bitcast<{value_type(src, width)}>({x[0]}); " \
               f"{y} = bitcast<{v}>({expr}); }}", helpers
    ty = key[1]
    if name == "NonZero":
        ctx = ExprCtx(ty, DType.U32, width)
        return f"{{ let v0 = bitcast<{value_type(ty, width)}>({x[0]}); " \
               f"{y} = {ctx.to_u32_bool(f'v0 != {ctx.lit(0)}')}; }}", ()
    rule = FUSE_EXPR[name]
    arity = rule.arity
    typed = [f"let v{k} = bitcast<{value_type(ty, width)}>({x[k]});" for k in range(arity)]
    if name == "ConditionalAssign":  # the condition is a u32 0/1
        typed[0] = f"let v0 = {x[0]};"
    expr, helpers = rule.render(ExprCtx(ty, op_result(name, ty), width),
                                *(f"v{k}" for k in range(arity)))
    return f"{{ {' '.join(typed)} {y} = bitcast<{v}>({expr}); }}", helpers


@functools.cache
def tier0_source(key: Tier0Key) -> str:
    """The WGSL of one tier-0 kernel (deterministic: equal keys give equal bytes)."""
    w, v, lanes = key.width, _vec(key.width), range(key.unroll)
    cases, helpers = [], []
    for instruction, code in OPCODES.items():
        if not key.holds(instruction):
            continue
        bodies = []
        for u in lanes:
            body, needed = _case(instruction, w, u)
            helpers += needed
            bodies.append(body)
        cases.append(f"            case {code}u: {{ {' '.join(bodies)} }}")
    functions = _access_fns(key) + [_INDEX_FN] + _load_store_fns(w) + list(dedupe(helpers))

    def moves(target: str, source: str) -> str:
        return " ".join(f"{target}_{u} = {source}_{u};" for u in lanes)

    def constant(operand: str, into: str) -> list[str]:
        splat = " ".join(f"{into}_{u} = word;" for u in lanes)
        return [f"        if ({operand} >= {CONST_OPERAND}u) {{ let word = "
                f"{v}(prog[{operand} - {CONST_OPERAND}u]); {splat} }}"]

    if key.registers == "array":  # one slot past the last: reads zero, written never
        regs = [f"    var regs_{u} = array<{v}, {MAX_REGISTERS + 1}>();" for u in lanes]

        def read(operand: str, into: str) -> list[str]:
            return [*(f"        var {into}_{u} = regs_{u}[min({operand}, {MAX_REGISTERS}u)];"
                      for u in lanes), *constant(operand, into)]
        stores = " ".join(f"regs_{u}[d] = y_{u};" for u in lanes)
        writes = f"if (d < {MAX_REGISTERS}u) {{ {stores} }}"
    else:
        regs = [f"    var r{r}_{u} = {v}(0u);" for r in range(MAX_REGISTERS) for u in lanes]

        def read(operand: str, into: str) -> list[str]:
            picks = " ".join(f"case {r}u: {{ {moves(into, f'r{r}')} }}"
                             for r in range(MAX_REGISTERS))
            return [*(f"        var {into}_{u} = {v}(0u);" for u in lanes),
                    f"        switch {operand} {{ {picks} default: {{}} }}",
                    *constant(operand, into)]
        picks = " ".join(f"case {r}u: {{ {moves(f'r{r}', 'y')} }}" for r in range(MAX_REGISTERS))
        writes = f"switch d {{ {picks} default: {{}} }}"
    return "\n".join([
        f"// fuselab tier-0 element-wise interpreter: dtypes {','.join(key.dtypes)}, "
        f"families {','.join(key.families)}, width {w}, {key.unroll} positions per "
        f"invocation, {key.ro} read-only + {key.rw} read-write slots, {key.registers} "
        "register file",
        "override WG_SIZE: u32 = 64u;", "", *_bindings(key), "",
        "\n\n".join(functions), "",
        "@compute @workgroup_size(WG_SIZE)",
        "fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,",
        "        @builtin(local_invocation_index) lid: u32) {",
        "    let t = (wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y) * WG_SIZE + lid;",
        "    let n = prog[0];",
        f"    let threads = (n + {key.unroll - 1}u) / {key.unroll}u;",
        "    if (t >= threads) {", "        return;", "    }",
        *(f"    let p{u} = t + {u}u * threads;" for u in lanes),
        *regs,
        "    let count = prog[2];",
        "    for (var i = 0u; i < count; i++) {",
        f"        let at = prog[3] + i * {INSTRUCTION_WORDS}u;",
        "        let d = prog[at + 1u];", "        let a = prog[at + 2u];",
        "        let b = prog[at + 3u];", "        let c = prog[at + 4u];",
        *read("a", "x0"), *read("b", "x1"), *read("c", "x2"),
        *(f"        var y_{u} = {v}(0u);" for u in lanes),
        "        switch prog[at] {", *cases, "            default: {}", "        }",
        f"        {writes}",
        "    }", "}", ""])
