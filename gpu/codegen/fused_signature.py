"""What a fused element-wise kernel is specialised on, and its metadata word layout.

burn counterpart: ``burn-cubecl-fusion``'s launch arguments (``GlobalArgs``:
``GlobalTensorCompilationArg`` with element type, vector size, broadcast flag and in-place
alias; scalars and reshape dims in the ``info`` metadata) as they enter the kernel id, notes
§7.1/§7.4. ``gpu.codegen.emit`` prints a kernel from a ``FuseBlockConfig`` and a
``KernelSignature``; ``gpu.runtime.fused_launch`` fills the ``MetadataLayout`` per launch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from refimpl.dtypes import DType
from refimpl.fused_kernel import FUSE_TYPE_DTYPE
from refimpl.planner.launch.launch import FuseBlockConfig
from refimpl.planner.engine.trace import (
    FuseArg, FuseType, InputReshaped, InputSwapDims, Literal, Scalar, ScalarShape,
)
from gpu.codegen.render import scalar_word
from gpu.codegen.types import WGSL_TYPE
from gpu.errors import UnsupportedDTypeError

__all__ = ["TensorArg", "KernelSignature", "MetadataLayout", "VectorAccess", "metadata_layout",
           "literals", "compute_dtype"]


@dataclass(frozen=True, slots=True)
class TensorArg:
    """One global tensor of the kernel (burn ``GlobalTensorCompilationArg``): storage dtype,
    vector size, broadcast flag, for an output the input it aliases (``None``: owned), and
    ``offset``: whether it starts at a non-zero element of its buffer. Only then does the
    kernel add its offset word (burn binds a tensor at its offset; a kernel at element 0 —
    almost every launch — reads ``in0[pos]``, no metadata)."""

    dtype: DType
    vector_size: int
    broadcasted: bool = False
    alias: int | None = None
    offset: bool = False


@dataclass(frozen=True, slots=True)
class KernelSignature:
    """The bindings of a launch, in ``LaunchPlan`` order."""

    inputs: tuple[TensorArg, ...]
    outputs: tuple[TensorArg, ...]


@dataclass(frozen=True, slots=True)
class MetadataLayout:
    """Word positions of ``info`` (u32 words; strides and shapes in elements):

    ====================  ============================================================
    word                  content
    ====================  ============================================================
    0                     positions that do work (the guard, in vectors)
    1 .. R                reference shape
    R+1 .. 2R             reference strides
    per slot s            offset, shape[R], strides[R]: inputs, then outputs
    then                  reshape dims (``ScalarShape`` k), scalars (``Scalar`` k),
                          literals (``Literal`` k, in first-use order)
    ====================  ============================================================

    Literals are run-time words too: a constant ``0.0`` reaching ``1.0 / x`` would be folded
    into an infinite constant, which WGSL makes a pipeline-creation error.
    """

    rank: int
    slots: int
    reshapes: int
    scalars: int
    literal_words: tuple[int, ...] = ()

    def ref_shape(self, dim: int) -> int:
        return 1 + dim

    def ref_stride(self, dim: int) -> int:
        return 1 + self.rank + dim

    def slot_offset(self, slot: int) -> int:
        return 1 + 2 * self.rank + slot * (2 * self.rank + 1)

    def slot_shape(self, slot: int, dim: int) -> int:
        return self.slot_offset(slot) + 1 + dim

    def slot_stride(self, slot: int, dim: int) -> int:
        return self.slot_offset(slot) + 1 + self.rank + dim

    def reshape(self, k: int) -> int:
        return self.slot_offset(self.slots) + k

    def scalar(self, k: int) -> int:
        return self.reshape(self.reshapes) + k

    def literal(self, k: int) -> int:
        return self.scalar(self.scalars) + k

    def pack(self, n_pos: int, ref_shape: Sequence[int], ref_strides: Sequence[int],
             slots: Sequence[tuple[int, Sequence[int], Sequence[int]]],
             reshapes: Sequence[int], scalars: Sequence[int]) -> list[int]:
        """The words of one launch; ``slots`` holds ``(offset, shape, strides)`` per tensor."""
        if len(slots) != self.slots or len(ref_shape) != self.rank:
            raise ValueError("launch metadata does not match the kernel's layout")
        words = [n_pos, *ref_shape, *ref_strides]
        for offset, shape, strides in slots:
            words += [offset, *shape, *strides]
        return words + list(reshapes[:self.reshapes]) + list(scalars[:self.scalars]) + \
            list(self.literal_words)


@dataclass(frozen=True, slots=True)
class VectorAccess:
    """A whole-vector load or store at a computed offset (``LayoutInfo::Unknown``, vector size
    above 1): the offset of each position's first element must be a multiple of the vector
    size, which only the run-time strides decide (``gpu.runtime.executor`` checks it per launch)."""

    slot: int
    swap: tuple[int, int] | None = None
    reshape: tuple[int, ...] | None = None  # ``ScalarShape`` indices of a reshape view


def compute_dtype(ty: FuseType) -> DType:
    """The dtype a ``FuseType`` computes in (raises for what WGSL lacks)."""
    dtype = FUSE_TYPE_DTYPE.get(ty)
    if dtype is None or dtype not in WGSL_TYPE:
        raise UnsupportedDTypeError(f"fused kernels cannot compute in {ty.name}: WGSL has no "
                                    "such type")
    return dtype


def _args(value: object):
    """Every ``FuseArg`` inside an op's args (view originals and reshape dims included)."""
    if isinstance(value, FuseArg):
        yield value
        if isinstance(value, (InputSwapDims, InputReshaped)):
            yield value.original
        if isinstance(value, InputReshaped):
            yield from value.shape
    elif isinstance(value, tuple):
        for item in value:
            yield from _args(item)
    elif hasattr(value, "__dataclass_fields__"):
        for field in value.__dataclass_fields__:
            yield from _args(getattr(value, field))


def literals(config: FuseBlockConfig) -> list[Literal]:
    """The config's distinct literals in first-use order."""
    found: dict[Literal, None] = {}
    for op in config.ops:
        for arg in _args(op.args):
            if isinstance(arg, Literal):
                found.setdefault(arg, None)
    return list(found)


def metadata_layout(config: FuseBlockConfig, signature: KernelSignature) -> MetadataLayout:
    """Reshape dims and scalars up to the highest index the config names; literal words."""
    args = [arg for op in config.ops for arg in _args(op.args)]
    shapes = [arg.index for arg in args if isinstance(arg, ScalarShape)]
    scalars = [arg.index for arg in args if isinstance(arg, Scalar)]
    words = tuple(scalar_word(lit.value, compute_dtype(lit.ty)) for lit in literals(config))
    return MetadataLayout(config.rank, len(signature.inputs) + len(signature.outputs),
                          max(shapes, default=-1) + 1, max(scalars, default=-1) + 1, words)
