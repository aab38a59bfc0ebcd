"""Building a trace: ``FuseBlockBuilder`` (one block) and ``TraceFuser`` (blocks + resources).

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/trace/block.rs``
(``FuseBlockBuilder``, ``LocalVariablePool``) and ``engine/trace/fuser.rs`` (``TraceFuser``);
notes §3.3, §3.6–§3.8.

Where burn returns ``None`` (the op cannot be fused; the caller closes the fuser), these methods
raise ``Refusal`` carrying the reason the fuser log prints. A refusal may leave partial changes
behind, exactly like burn: callers run speculative work on a ``clone()``.

Invariants (the Cython twin must keep them):

* A tensor produced in a block is a ``BlockLocal``; it is written to global memory iff its latest
  status in the trace is not ``ReadWrite`` (or a later block reads it back from a buffer).
* Reads and writes are kept per tensor id and emitted sorted by id (burn's BTreeMaps).
* ``estimate_bindings() = 1 + written outputs + inputs``; scalars are not counted.
"""

from __future__ import annotations

from refimpl.dtypes import DType
from refimpl.ir import TensorIr, TensorStatus
from refimpl.planner.engine.settings import FuseSettings
from refimpl.planner.engine.trace import (
    BlockLocal, FuseArg, FuseBlock, FuseOp, FuseResources, FuseTrace, FuseType, Input,
    InputReshaped, InputSwapDims, MultiBlockGlobal, MultiBlockLocal, MultiBlockPos,
    NhwcStridesView, Output, RegisteredTensors, ReshapeView, Scalar, ScalarShape, SwapDimsView,
    TensorView, fuse_type_of,
)

__all__ = [
    "Refusal", "REFUSED_INDEXED", "REFUSED_VIEW", "LocalVariablePool", "ResourcesBuilder",
    "FuseBlockBuilder", "TraceFuser",
]

REFUSED_INDEXED = "indexed input"  # a tensor both indexed (gather/select/cat) and read/written
REFUSED_VIEW = "view"  # a view whose original is not an input already read in this block


class Refusal(Exception):
    """The op cannot join the trace (burn's ``None``); ``reason`` is for the fusion log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LocalVariablePool:
    """burn ``LocalVariablePool``: block-local registers, numbered per kernel type."""

    __slots__ = ("_values",)

    def __init__(self, values: dict[FuseType, dict[int, int]] | None = None) -> None:
        self._values = values if values is not None else {}

    def clone(self) -> LocalVariablePool:
        return LocalVariablePool({ty: dict(ids) for ty, ids in self._values.items()})

    def get(self, ty: FuseType, tensor_id: int) -> BlockLocal | None:
        pos = self._values.get(ty, {}).get(tensor_id)
        return None if pos is None else BlockLocal(pos, ty)

    def get_any_precision(self, tensor_id: int) -> BlockLocal | None:
        """The local of ``tensor_id`` in any type, types visited in ``FuseType`` order."""
        for ty in sorted(self._values):
            pos = self._values[ty].get(tensor_id)
            if pos is not None:
                return BlockLocal(pos, ty)
        return None

    def create(self, ty: FuseType, tensor_id: int) -> BlockLocal:
        ids = self._values.setdefault(ty, {})
        ids[tensor_id] = len(ids)
        return BlockLocal(ids[tensor_id], ty)


def _sorted_ops(ops_by_id: dict[int, list[FuseOp]]) -> tuple[tuple[int, tuple[FuseOp, ...]], ...]:
    return tuple((tid, tuple(ops_by_id[tid])) for tid in sorted(ops_by_id))


class ResourcesBuilder:
    """burn ``FuseResources`` while a trace is being built (mutable); ``freeze`` gives the
    trace's ``FuseResources``."""

    def __init__(self) -> None:
        self.outputs = RegisteredTensors()
        self.inputs = RegisteredTensors()
        self.scalars: list[tuple[FuseType, int]] = []
        self.views: list[TensorView] = []
        self.indexed: dict[int, FuseArg] = {}
        self.inputs_unhandled: list[int] = []
        self.outputs_unhandled: list[FuseArg] = []
        self.num_reshaped = 0
        self.dropped: dict[int, None] = {}  # an ordered set
        self.buffers = RegisteredTensors()
        self.registers: dict[int, FuseArg] = {}

    def clone(self) -> ResourcesBuilder:
        other = ResourcesBuilder()
        other.outputs, other.inputs = self.outputs.clone(), self.inputs.clone()
        other.scalars, other.views = list(self.scalars), list(self.views)
        other.indexed = dict(self.indexed)
        other.inputs_unhandled = list(self.inputs_unhandled)
        other.outputs_unhandled = list(self.outputs_unhandled)
        other.num_reshaped, other.dropped = self.num_reshaped, dict(self.dropped)
        other.buffers, other.registers = self.buffers.clone(), dict(self.registers)
        return other

    def freeze(self, outputs: RegisteredTensors) -> FuseResources:
        """The finished trace's resources, with ``outputs`` = the tensors actually written."""
        return FuseResources(
            outputs=outputs.freeze(),
            inputs=self.inputs.freeze(),
            scalars=tuple(self.scalars),
            views=tuple(self.views),
            indexed=tuple(sorted(self.indexed.items(), key=lambda item: item[0])),
            inputs_unhandled=tuple(self.inputs_unhandled),
            outputs_unhandled=tuple(self.outputs_unhandled),
            num_reshaped=self.num_reshaped,
            dropped=tuple(sorted(self.dropped)),
            buffers=self.buffers.freeze(),
            registers=tuple(sorted(self.registers.items(), key=lambda item: item[0])),
        )


class FuseBlockBuilder:
    """burn ``FuseBlockBuilder``: the locals, ops, reads and writes of one block."""

    def __init__(self, settings: FuseSettings) -> None:
        self.settings = settings
        self.locals = LocalVariablePool()
        self.ops: list[FuseOp] = []
        self.reads: dict[int, list[FuseOp]] = {}
        self.writes: dict[int, list[FuseOp]] = {}  # multi-block variables only, until build
        self.outputs = RegisteredTensors()  # outputs declared in this block
        self.outputs_unhandled: list[FuseArg] = []
        self.local_inputs: dict[int, FuseArg] = {}  # values received from earlier blocks
        self.shape_ref: tuple[int, ...] = ()

    def clone(self) -> FuseBlockBuilder:
        other = FuseBlockBuilder(self.settings)
        other.locals, other.ops = self.locals.clone(), list(self.ops)
        other.reads = {tid: list(ops) for tid, ops in self.reads.items()}
        other.writes = {tid: list(ops) for tid, ops in self.writes.items()}
        other.outputs = self.outputs.clone()
        other.outputs_unhandled = list(self.outputs_unhandled)
        other.local_inputs, other.shape_ref = dict(self.local_inputs), self.shape_ref
        return other

    def output(self, tensor: TensorIr, resources: ResourcesBuilder) -> FuseArg:
        """The local an op writes ``tensor`` into (created, and registered as an output)."""
        if tensor.id in resources.indexed:
            raise Refusal(REFUSED_INDEXED)
        ty = fuse_type_of(tensor.dtype)
        local = self.locals.get(ty, tensor.id)
        if local is None:
            local = self.locals.create(ty, tensor.id)
            self.outputs.insert(ty, tensor)
            resources.outputs.insert(ty, tensor)
        return local

    def multi_block_variable(self, block_pos: int, tensor: TensorIr,
                             global_: bool) -> FuseArg | None:
        """Share this block's value of ``tensor`` with later blocks (``None``: no local)."""
        received = self.local_inputs.get(tensor.id)
        if received is not None:
            return received
        local = self.locals.get(fuse_type_of(tensor.dtype), tensor.id)
        if local is None:
            return None
        variant = MultiBlockGlobal if global_ else MultiBlockLocal
        shared = variant(MultiBlockPos(block_pos, len(self.writes)), local.precision())
        self.writes.setdefault(tensor.id, []).append(FuseOp.assign(local, shared))
        return shared

    def input(self, tensor: TensorIr, resources: ResourcesBuilder) -> FuseArg:
        """The local holding ``tensor``'s value, adding a global read on first use."""
        if tensor.id in resources.indexed:
            raise Refusal(REFUSED_INDEXED)
        ty = fuse_type_of(tensor.dtype)
        received = self.local_inputs.get(tensor.id)
        if received is not None:
            return received
        local = self.locals.get(ty, tensor.id)
        if local is not None:
            resources.inputs.update(tensor)
            return local
        if resources.outputs.get_index(tensor.id) is not None:
            # produced by an earlier block of this trace: read back from its buffer
            register = resources.registers.get(tensor.id)
            if register is not None:
                return register
            source: FuseArg = Output(resources.buffers.insert(ty, tensor), ty)
        else:
            source = Input(resources.inputs.insert(ty, tensor), ty)
        local = self.locals.create(ty, tensor.id)
        self.reads.setdefault(tensor.id, []).append(FuseOp.assign(source, local))
        return local

    def _view_original(self, tensor: TensorIr, resources: ResourcesBuilder) -> Input:
        """The input a fused view reads: ``tensor`` must be a global input already read here."""
        ty = fuse_type_of(tensor.dtype)
        if self.locals.get(ty, tensor.id) is None:
            raise Refusal(REFUSED_VIEW)  # a lone view runs eagerly instead (burn #5134)
        if resources.outputs.get(tensor.id) is not None:
            raise Refusal(REFUSED_VIEW)
        index = resources.inputs.get_index(tensor.id)
        if index is None:
            raise Refusal(REFUSED_VIEW)
        resources.inputs.update(tensor)
        return Input(index, ty)

    def _view_read(self, tensor: TensorIr, source: FuseArg, out: FuseArg) -> FuseArg:
        self.reads.setdefault(tensor.id, []).append(FuseOp.assign(source, out))
        return out

    def input_swap_dims(self, tensor: TensorIr, output: TensorIr, dims: tuple[int, int],
                        resources: ResourcesBuilder) -> FuseArg:
        """Read ``tensor`` a second time, with two dims swapped, into ``output``'s local."""
        original = self._view_original(tensor, resources)
        out = self.output(output, resources)
        resources.views.append(SwapDimsView(output.id, tensor.id, dims))
        source = InputSwapDims(original, dims, output.shape[-1] == 0)
        return self._view_read(tensor, source, out)

    def input_reshaped(self, tensor: TensorIr, output: TensorIr,
                       resources: ResourcesBuilder) -> FuseArg:
        """Read ``tensor`` a second time, reshaped, into ``output``'s local."""
        original = self._view_original(tensor, resources)
        out = self.output(output, resources)
        index, rank = resources.num_reshaped, len(output.shape)
        resources.num_reshaped += 1
        shape = tuple(ScalarShape(index * rank + i) for i in range(rank))
        resources.views.append(ReshapeView(output.id, tensor.id, index, output.shape))
        source = InputReshaped(original, shape, output.shape[-1] == 0)
        return self._view_read(tensor, source, out)

    def tensor_writes(self, resources: ResourcesBuilder, buffers: list[int]) -> RegisteredTensors:
        """The outputs of this block that must reach global memory (latest snapshots).

        ``buffers`` collects the buffer tensors already written by an earlier block.
        """
        result = RegisteredTensors()
        for entry in self.outputs:
            latest = resources.outputs.get(entry.tensor.id)
            if latest is None:
                continue
            if latest.tensor.status is not TensorStatus.ReadWrite:
                result.insert(latest.ty, latest.tensor)
            elif resources.buffers.get(latest.tensor.id) is not None \
                    and latest.tensor.id not in buffers:
                result.insert(latest.ty, latest.tensor)
                buffers.append(latest.tensor.id)
        return result

    def build(self, resources: ResourcesBuilder, outputs: RegisteredTensors,
              buffers: list[int]) -> FuseBlock:
        """The finished block; registers its written tensors in ``outputs``."""
        writes = {tid: list(ops) for tid, ops in self.writes.items()}
        for entry in self.tensor_writes(resources, buffers):
            local = self.locals.get_any_precision(entry.tensor.id)
            if local is None:
                continue
            target = Output(outputs.insert(entry.ty, entry.tensor), entry.ty)
            writes.setdefault(entry.tensor.id, []).append(FuseOp.assign(local, target))
        return FuseBlock(self.settings, tuple(self.ops), self.shape_ref,
                         _sorted_ops(self.reads), _sorted_ops(writes))


class TraceFuser:
    """burn ``TraceFuser``: the current block, the closed blocks and the shared resources."""

    def __init__(self, settings: FuseSettings) -> None:
        self.settings = settings
        self.block_current = FuseBlockBuilder(settings)
        self.blocks_previous: list[FuseBlockBuilder] = []
        self.resources = ResourcesBuilder()

    def clone(self) -> TraceFuser:
        other = TraceFuser.__new__(TraceFuser)
        other.settings = self.settings
        other.block_current = self.block_current.clone()
        other.blocks_previous = [block.clone() for block in self.blocks_previous]
        other.resources = self.resources.clone()
        return other

    def num_previous_blocks(self) -> int:
        return len(self.blocks_previous)

    def fuse_dropped(self, tensor: TensorIr) -> None:
        """Record a ``Drop``: the tensor's latest status becomes its (``ReadWrite``) status."""
        self.resources.outputs.update(tensor)
        self.resources.inputs.update(tensor)
        self.resources.dropped[tensor.id] = None

    def fuse_operation(self, op: FuseOp) -> None:
        self.block_current.ops.append(op)

    def num_ops_fused(self) -> int:
        """Data ops in every block (reads, writes and drops are not counted)."""
        return sum(len(b.ops) for b in self.blocks_previous) + len(self.block_current.ops)

    def next_block(self, shape_ref: tuple[int, ...], settings: FuseSettings) -> None:
        """Close the current block with ``shape_ref`` and open one with ``settings``."""
        closed, self.block_current = self.block_current, FuseBlockBuilder(settings)
        closed.shape_ref = shape_ref
        self.blocks_previous.append(closed)
        self.settings = settings

    def estimate_bindings(self) -> int:
        """1 (metadata) + tensors written + tensors read; may over-count, never under-count."""
        buffers: list[int] = []
        written = sum(len(b.tensor_writes(self.resources, buffers)) for b in self.blocks_previous)
        written += len(self.block_current.tensor_writes(self.resources, buffers))
        return 1 + written + len(self.resources.inputs)

    def num_multi_block_local_inputs(self) -> int:
        values = self.block_current.local_inputs.values()
        return sum(1 for arg in values if isinstance(arg, MultiBlockLocal))

    def block_local_input(self, tensor: TensorIr, block_pos: int, global_: bool) -> FuseArg:
        """Hand ``tensor`` from block ``block_pos`` to the current block."""
        block = self.blocks_previous[block_pos]
        shared = block.multi_block_variable(block_pos, tensor, global_)
        if shared is None:
            block.input(tensor, self.resources)  # read it there first
            shared = block.multi_block_variable(block_pos, tensor, global_)
            if shared is None:
                raise RuntimeError(f"tensor {tensor.id} has no value in block {block_pos}")
        self.resources.outputs.update(tensor)
        if global_:
            self.resources.registers[tensor.id] = shared
        self.block_current.local_inputs[tensor.id] = shared
        return shared

    def output_nhwc_layout(self, tensor: TensorIr, permutation: tuple[int, ...]) -> None:
        """Ask for ``tensor`` to be written channels-last when it is written."""
        self.resources.views.append(NhwcStridesView(tensor.id, permutation))

    def output_unhandled(self, tensor: TensorIr) -> FuseArg:
        """An output the runner writes itself (matmul/reduce result)."""
        try:
            arg = self.output(tensor)
        except Refusal as refusal:
            raise RuntimeError(f"output {tensor.id} is already an indexed input") from refusal
        self.resources.outputs_unhandled.append(arg)
        self.block_current.outputs_unhandled.append(arg)
        return arg

    def input_unhandled(self, tensor: TensorIr) -> FuseArg:
        """An input the runner reads itself (matmul/reduce operand, indexed input)."""
        if tensor.id in self.resources.indexed:
            raise RuntimeError(f"input {tensor.id} is already an indexed input")
        self.resources.outputs.update(tensor)
        ty = fuse_type_of(tensor.dtype)
        arg = Input(self.resources.inputs.insert(ty, tensor), ty)
        self.resources.inputs_unhandled.append(tensor.id)
        return arg

    def input(self, tensor: TensorIr) -> FuseArg:
        self.resources.outputs.update(tensor)
        return self.block_current.input(tensor, self.resources)

    def output(self, tensor: TensorIr) -> FuseArg:
        return self.block_current.output(tensor, self.resources)

    def input_indexed(self, tensor: TensorIr) -> FuseArg:
        """An input read by index (gather/select/cat): unvectorized, never also a plain
        input or an output of the trace."""
        found = self.resources.indexed.get(tensor.id)
        if found is not None:
            self.resources.outputs.update(tensor)
            return found
        if self.resources.inputs.get(tensor.id) is not None:
            raise Refusal(REFUSED_INDEXED)
        if self.resources.outputs.get(tensor.id) is not None:
            raise Refusal(REFUSED_INDEXED)
        arg = self.input_unhandled(tensor)
        self.resources.indexed[tensor.id] = arg
        return arg

    def input_swap_dims(self, tensor: TensorIr, output: TensorIr,
                        dims: tuple[int, int]) -> FuseArg:
        self.resources.outputs.update(tensor)
        return self.block_current.input_swap_dims(tensor, output, dims, self.resources)

    def input_reshaped(self, tensor: TensorIr, output: TensorIr) -> FuseArg:
        self.resources.outputs.update(tensor)
        return self.block_current.input_reshaped(tensor, output, self.resources)

    def scalar(self, placeholder: int, dtype: DType) -> Scalar:
        """A scalar operand; ``placeholder`` is the relative op's scalar id (never deduped)."""
        if type(placeholder) is not int:
            raise TypeError("fusers take relative ops: scalars must be placeholder ints")
        ty = fuse_type_of(dtype)
        self.resources.scalars.append((ty, placeholder))
        return Scalar(len(self.resources.scalars) - 1, ty)

    def finish(self, shape_ref: tuple[int, ...]) -> FuseTrace:
        """The trace: every block built, outputs = buffers then each block's written tensors."""
        outputs = RegisteredTensors()
        buffers: list[int] = []
        for entry in self.resources.buffers:
            outputs.insert(entry.ty, entry.tensor)
        blocks = [block.build(self.resources, outputs, buffers) for block in self.blocks_previous]
        self.block_current.shape_ref = shape_ref
        blocks.append(self.block_current.build(self.resources, outputs, buffers))
        return FuseTrace(tuple(blocks), self.resources.freeze(outputs))
