"""A fused block as a tier-0 program: the instructions and view descriptors the tier-0 kernel
(``gpu.codegen.tier0``) interprets, with the words that stay fixed across launches.

burn counterpart: none (burn always compiles the block; see ``gpu.codegen.tier0``). The walk
over the ops mirrors ``gpu.codegen.emit`` / ``fuse_io.BodyWriter`` decision for decision
(operand precision by ``cmp_elem``, conversions, the read and write paths chosen from the
layout, the vector size and the broadcast flag), so that a block computes the same values in
both tiers; where ``emit`` would print an expression, this appends an instruction.

A global read assigned to a block local is emitted at the local's first use (or before the
next store, which may write what it reads), so that registers hold only live values.

What it cannot express raises ``Tier0Unsupported`` (the block then goes to tier 1): the
indexed ops (Gather, Select, Cat), f16, values read across blocks, and blocks needing more
than ``MAX_REGISTERS`` live values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from refimpl.dtypes import DType
from refimpl.planner.engine.trace import (
    BinaryFuseArgs, BlockLocal, ClampArgs, ConditionalAssignArgs, FuseArg, FuseOp, Input,
    InputReshaped, InputSwapDims, LayoutInfo, Literal, Output, Scalar, UnaryFuseArgs,
)
from refimpl.planner.launch.launch import FuseBlockConfig
from refimpl.planner.launch.layout import swap_dims_transform
from gpu.codegen.fused_signature import (
    KernelSignature, TensorArg, VectorAccess, compute_dtype, literals,
)
from gpu.codegen.render import scalar_word
from gpu.codegen.tier0 import (
    CONST_OPERAND, FAMILIES, HEADER_WORDS, INDEX_KINDS, INSTRUCTION_WORDS, MAX_REGISTERS,
    VIEW_KINDS, family, opcode, op_result,
)
from gpu.errors import GpuError

__all__ = ["Tier0Unsupported", "ViewTemplate", "Tier0Program", "compile_block", "view_words"]

DIRECT = (LayoutInfo.IsRef, LayoutInfo.SameAsRef)


class Tier0Unsupported(GpuError):
    """The block cannot run on the tier-0 kernel (the message says why); it goes to tier 1."""


@dataclass(frozen=True, slots=True)
class ViewTemplate:
    """One global read or write: whose layout words it uses (``("in", k)`` / ``("out", k)``),
    the view kind and index kind (``gpu.codegen.tier0``), a swap or the ``ScalarShape``
    indices of a reshape, and the slot dim whose stride is the lane step (``STEP``)."""

    tensor: tuple[str, int]
    kind: str
    index: str
    swap: tuple[int, int] | None = None
    reshape: tuple[int, ...] | None = None
    step_axis: int | None = None


def view_words(rank: int) -> int:
    """Words of one view descriptor."""
    return 6 + 3 * rank


@dataclass(frozen=True, slots=True)
class Tier0Program:
    """A block's program: the compute dtypes it needs, its fixed words (header, instructions,
    view slots to fill, literal words) and what each launch fills in."""

    config: FuseBlockConfig
    signature: KernelSignature
    dtypes: tuple[str, ...]
    families: tuple[str, ...]
    words: tuple[int, ...]
    views: tuple[ViewTemplate, ...]
    view_base: int  # word of the first view descriptor
    const_base: int  # word of the first constant (scalars, then literals)
    scalars: int  # scalar words filled per launch
    vector_accesses: tuple[VectorAccess, ...]
    instructions: int
    stored: frozenset[tuple[str, int]]  # tensors some store writes: read-write slots


class _Builder:
    """The walk over one block's ops (``emit_block``'s, appending instructions)."""

    def __init__(self, config: FuseBlockConfig, signature: KernelSignature) -> None:
        self.config, self.signature = config, signature
        self.width = config.width
        self.code: list[list] = []  # [opcode, dst, a, b, c] with virtual registers
        self.views: list[ViewTemplate] = []
        self.stored: list[int] = []  # view numbers that are written
        self.dtypes: set[DType] = {DType.U32}
        self.families: set[str] = {"core"}
        self.locals: dict[BlockLocal, tuple[int, DType]] = {}
        self.pending: dict[BlockLocal, FuseArg] = {}  # reads deferred to their first use
        self.next_reg = 0
        self.accesses: dict[VectorAccess, None] = {}
        self.literals = literals(config)
        self.scalars = 0

    # --- instructions -------------------------------------------------------------------------

    def reg(self) -> int:
        self.next_reg += 1
        return self.next_reg - 1

    def emit(self, key: tuple, dst: int, *args: int) -> int:
        code = opcode(key)
        if code is None:
            types = ", ".join(d.value for d in key[1:])
            raise Tier0Unsupported(f"no tier-0 case for {key[0]} on {types}")
        self.dtypes.update(d for d in key[1:] if isinstance(d, DType))
        self.families.add(family(key[0]))
        self.code.append([code, dst, *args, *(None,) * (3 - len(args))])
        return dst

    def const(self, source: tuple[str, int]) -> Any:
        """A scalar or literal word as an operand (``("scalar", k)`` / ``("literal", k)``,
        placed later): no instruction, no register."""
        return ("const", *source)

    def convert(self, reg: int, src: DType, dst: DType) -> int:
        if src is dst:
            return reg
        return self.emit(("Cast", src, dst), self.reg(), reg)

    # --- tensors --------------------------------------------------------------------------------

    def tensor(self, slot: int) -> TensorArg:
        n_in = len(self.signature.inputs)
        return self.signature.inputs[slot] if slot < n_in else self.signature.outputs[slot - n_in]

    def slot(self, arg: FuseArg) -> int:
        return arg.pos if isinstance(arg, Input) else len(self.signature.inputs) + arg.pos

    def name(self, slot: int) -> tuple[str, int]:
        n_in = len(self.signature.inputs)
        return ("in", slot) if slot < n_in else ("out", slot - n_in)

    def storage(self, slot: int) -> DType:
        dtype = self.tensor(slot).dtype
        if dtype is DType.BOOL:
            return DType.U32
        if dtype not in (DType.F32, DType.I32, DType.U32):
            raise Tier0Unsupported(f"tier 0 has no {dtype.value} storage")
        return dtype

    def view(self, slot: int, template: ViewTemplate, store: bool = False) -> int:
        self.views.append(template)
        if store:
            self.stored.append(len(self.views) - 1)
        return len(self.views) - 1

    def vector_index(self, slot: int, swap=None, reshape=None) -> str:
        """The index kind of ``offset(pos * width) / vs`` (recorded for the alignment check)."""
        if self.tensor(slot).vector_size > 1:
            shape = None if reshape is None else tuple(a.index for a in reshape)
            self.accesses.setdefault(VectorAccess(slot, swap, shape), None)
        return "reshaped" if reshape is not None else "strided"

    # --- reads and writes (fuse_io.BodyWriter) ------------------------------------------------

    def read_global(self, slot: int, layout: LayoutInfo, broadcasted: bool,
                    swap=None, reshape=None) -> int:
        vs, width, name = self.tensor(slot).vector_size, self.width, self.name(slot)
        shape = None if reshape is None else tuple(a.index for a in reshape)
        if not broadcasted and vs != width:
            if reshape is not None:
                template = ViewTemplate(name, "EACH", "reshaped", None, shape)
            else:
                axis = self.config.vector_axis
                step = axis if swap is None else swap_dims_transform(axis, swap)
                index = "identity" if layout in DIRECT else "strided"
                template = ViewTemplate(name, "STEP", index, swap, None, step)
        elif layout in DIRECT:
            template = ViewTemplate(name, "VEC" if vs == width else "POS", "identity")
        else:
            index = self.vector_index(slot, swap, reshape)
            template = ViewTemplate(name, "VEC" if vs == width else "SPLAT", index, swap, shape)
        return self.emit(("Load",), self.reg(), self.view(slot, template))

    def read_output(self, slot: int, layout: LayoutInfo) -> int:
        vs, name = self.tensor(slot).vector_size, self.name(slot)
        if vs != self.width and vs != 1:
            raise Tier0Unsupported("an output read back with a vector size that is not the "
                                   "width")
        if layout in DIRECT:
            template = ViewTemplate(name, "VEC" if vs == self.width else "POS", "identity")
        else:
            index = self.vector_index(slot)
            template = ViewTemplate(name, "VEC" if vs == self.width else "SPLAT", index)
        return self.emit(("Load",), self.reg(), self.view(slot, template))

    def load(self, local: BlockLocal) -> None:
        """Emit a deferred read (a global read assigned to a block local)."""
        reg, dtype = self.raw(self.pending.pop(local))
        self.define(local, reg, dtype)

    def write(self, arg: Output, reg: int) -> None:
        slot = self.slot(arg)
        inplace = self.tensor(slot).alias is not None
        for local, read in list(self.pending.items()):  # a read of what the store writes
            if inplace or (isinstance(read, Output) and read.pos == arg.pos):
                self.load(local)
        tensor, name = self.tensor(slot), self.name(slot)
        self.storage(slot)
        if tensor.dtype is DType.BOOL:  # stored as u32 0/1
            reg = self.emit(("NonZero", DType.U32), self.reg(), reg)
        if tensor.vector_size == self.width:
            index = "identity" if arg.layout in DIRECT else self.vector_index(slot)
            template = ViewTemplate(name, "VEC", index)
        elif arg.layout in DIRECT:
            template = ViewTemplate(name, "STEP", "identity", step_axis=self.config.vector_axis)
        else:
            template = ViewTemplate(name, "EACH", "strided")
        self.emit(("Store",), None, reg, self.view(slot, template, store=True))

    # --- values ---------------------------------------------------------------------------------

    def raw(self, arg: FuseArg) -> tuple[int, DType]:
        if isinstance(arg, BlockLocal):
            if arg in self.pending:
                self.load(arg)
            if arg not in self.locals:
                raise Tier0Unsupported(f"{arg!r} is read before it is written")
            return self.locals[arg]
        if isinstance(arg, Input):
            return self.read_global(arg.pos, arg.layout, self.tensor(arg.pos).broadcasted), \
                self.storage(arg.pos)
        if isinstance(arg, InputSwapDims):
            pos = arg.original.pos
            return self.read_global(pos, arg.original.layout,
                                    self.config.view_replicated(arg.broadcasted), swap=arg.dims), self.storage(pos)
        if isinstance(arg, InputReshaped):
            pos = arg.original.pos
            return self.read_global(pos, arg.original.layout,
                                    self.config.view_replicated(arg.broadcasted), reshape=arg.shape), self.storage(pos)
        if isinstance(arg, Output):
            slot = self.slot(arg)
            return self.read_output(slot, arg.layout), self.storage(slot)
        if isinstance(arg, Scalar):
            self.scalars = max(self.scalars, arg.index + 1)
            return self.const(("scalar", arg.index)), self.compute(arg.ty)
        if isinstance(arg, Literal):
            return self.const(("literal", self.literals.index(arg))), \
                self.compute(arg.ty)
        raise Tier0Unsupported(f"tier 0 cannot read {type(arg).__name__}")

    def compute(self, ty) -> DType:
        dtype = compute_dtype(ty)
        if dtype not in (DType.F32, DType.I32, DType.U32):
            raise Tier0Unsupported(f"tier 0 cannot compute in {dtype.value}")
        return dtype

    def value(self, arg: FuseArg, want: DType) -> int:
        reg, dtype = self.raw(arg)
        return self.convert(reg, dtype, want)

    def define(self, out: FuseArg, reg: int, dtype: DType) -> None:
        if isinstance(out, BlockLocal):
            want = self.compute(out.ty)
            self.locals[out] = (self.convert(reg, dtype, want), want)
        elif isinstance(out, Output):
            self.write(out, self.convert(reg, dtype, self.compute(out.ty)))
        else:
            raise Tier0Unsupported(f"tier 0 cannot write {type(out).__name__}")

    # --- one op (emit._OPS) ----------------------------------------------------------------------

    def op(self, op: FuseOp) -> None:
        args = op.args
        if op.name == "Assign" and isinstance(args.out, BlockLocal) and isinstance(
                args.input, (Input, InputSwapDims, InputReshaped, Output)):
            self.pending[args.out] = args.input  # read at first use: fewer live registers
        elif op.name == "Assign":
            reg, dtype = self.raw(args.input)
            self.define(args.out, reg, dtype)
        elif isinstance(args, BinaryFuseArgs):
            ty = self.compute(args.lhs.precision())
            lhs, rhs = self.value(args.lhs, ty), self.value(args.rhs, ty)
            result = op_result(op.name, ty)
            self.define(args.out, self.emit((op.name, ty), self.reg(), lhs, rhs), result)
        elif isinstance(args, UnaryFuseArgs):
            ty = self.compute(args.out.precision())
            value = self.value(args.input, ty)
            self.define(args.out, self.emit((op.name, ty), self.reg(), value), ty)
        elif isinstance(args, ClampArgs):
            ty = self.compute(args.out.precision())
            regs = [self.value(a, ty) for a in (args.input, args.min, args.max)]
            self.define(args.out, self.emit(("Clamp", ty), self.reg(), *regs), ty)
        elif isinstance(args, ConditionalAssignArgs):
            ty = self.compute(args.out.precision())
            cond, cond_ty = self.raw(args.cond)
            if cond_ty is not DType.U32:
                cond = self.emit(("NonZero", cond_ty), self.reg(), cond)
            lhs, rhs = self.value(args.lhs, ty), self.value(args.rhs, ty)
            self.define(args.out, self.emit(("ConditionalAssign", ty), self.reg(), cond, lhs,
                                            rhs), ty)
        else:
            raise Tier0Unsupported(f"tier 0 has no {op.name} (an indexed read)")


def _registers(code: list[list]) -> list[list]:
    """Virtual registers → at most ``MAX_REGISTERS`` physical ones, each freed after its last
    read (a case reads its operands before writing its result, so a result may take an
    operand's register). Constant operands are no registers."""
    load, store = opcode(("Load",)), opcode(("Store",))
    sources, results = [], []
    for ins in code:
        operands = (2,) if ins[0] == store else () if ins[0] == load else (2, 3, 4)
        sources.append(tuple(k for k in operands if isinstance(ins[k], int)))
        results.append(ins[0] != store)
    last: dict[int, int] = {}
    for i, ins in enumerate(code):
        for k in sources[i]:
            last[ins[k]] = i
    physical: dict[int, int] = {}
    free = list(range(MAX_REGISTERS - 1, -1, -1))
    out = []
    for i, ins in enumerate(code):
        new = list(ins)
        for k in sources[i]:
            new[k] = physical[ins[k]]
        for reg in {ins[k] for k in sources[i]}:
            if last[reg] == i:
                free.append(physical.pop(reg))
        if results[i]:
            if not free:
                raise Tier0Unsupported(f"more than {MAX_REGISTERS} live values")
            physical[ins[1]] = new[1] = free.pop()
            if ins[1] not in last:  # never read
                free.append(physical.pop(ins[1]))
        out.append(new)
    return out


def compile_block(config: FuseBlockConfig, signature: KernelSignature) -> Tier0Program:
    """The tier-0 program of one block (raises ``Tier0Unsupported``)."""
    if config.width not in (1, 2, 4):
        raise Tier0Unsupported(f"vector width {config.width}")
    builder = _Builder(config, signature)
    for op in config.ops:
        builder.op(op)
    code = _registers(builder.code)
    rank, n = config.rank, len(code)
    view_base = HEADER_WORDS + rank + n * INSTRUCTION_WORDS
    const_base = view_base + len(builder.views) * view_words(rank)
    n_scalars = builder.scalars
    load, store = opcode(("Load",)), opcode(("Store",))
    words = [0, rank, n, HEADER_WORDS + rank] + [0] * rank
    for ins in code:
        ins = list(ins)
        if ins[0] == load:
            ins[2] = view_base + ins[2] * view_words(rank)
        elif ins[0] == store:
            ins[3] = view_base + ins[3] * view_words(rank)
        for k in (2, 3, 4):
            if isinstance(ins[k], tuple):  # a constant operand: its word's address
                _, source, index = ins[k]
                ins[k] = CONST_OPERAND + const_base + index + \
                    (n_scalars if source == "literal" else 0)
        words += [MAX_REGISTERS if w is None else w for w in ins]  # no register
    for template in builder.views:
        words += [VIEW_KINDS[template.kind], 0, 0, 1, 1, INDEX_KINDS[template.index]]
        words += [0] * (3 * rank)
    words += [0] * n_scalars
    words += [scalar_word(lit.value, compute_dtype(lit.ty)) for lit in builder.literals]
    dtypes = tuple(sorted(d.value for d in builder.dtypes))
    families = tuple(f for f in FAMILIES if f in builder.families)
    stored = frozenset(builder.views[v].tensor for v in builder.stored)
    return Tier0Program(config, signature, dtypes, families, tuple(words), tuple(builder.views),
                        view_base, const_base, n_scalars, tuple(builder.accesses), n, stored)
