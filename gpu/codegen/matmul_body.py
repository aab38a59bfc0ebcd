"""What a fused matmul kernel is specialised on (``MatmulForm``), its extra metadata words
(``MatmulWords``) and the printing state its main loops share (``MatmulBody``).

burn counterpart: ``burn-cubecl-fusion/src/optim/matmul/args.rs`` (``FusedMatmulArgs``: the
launch arguments and their layouts) and the comptime config of cubek's matmul; the kernels
are ``gpu.codegen.matmul_fused`` (the forms) and ``gpu.codegen.matmul_tiled`` (the tiled
main loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from refimpl.dtypes import DType
from refimpl.planner.engine.trace import BlockLocal
from refimpl.planner.launch.launch import FuseBlockConfig
from gpu.codegen.fuse_io import BodyWriter
from gpu.codegen.fused_signature import KernelSignature, compute_dtype, metadata_layout
from gpu.codegen.types import value_type

__all__ = ["MatmulForm", "MatmulWords", "MatmulBody", "matmul_words"]


@dataclass(frozen=True, slots=True)
class MatmulForm:
    """What a fused matmul kernel is specialised on besides its block and signature: the main
    loop (``kind``, one of ``FORMS``), the input positions of lhs and rhs, the local the
    matmul fills, and for the tiled kinds the axis each operand is contiguous along
    (``lhs_fast``: ``"k"`` row-major or ``"m"``; ``rhs_fast``: ``"n"`` row-major or ``"k"``)."""

    kind: str
    lhs: int
    rhs: int
    seed: BlockLocal
    lhs_fast: str = "k"
    rhs_fast: str = "n"


@dataclass(frozen=True, slots=True)
class MatmulWords:
    """The ``info`` words after the block's: ``M``, ``N``, ``K``, batches, row tiles and
    column tiles (the last two only read by tiled kinds)."""

    base: int

    def word(self, k: int) -> str:
        return f"info[{self.base + k}u]"

    m = property(lambda self: self.word(0))
    n = property(lambda self: self.word(1))
    k = property(lambda self: self.word(2))
    batches = property(lambda self: self.word(3))
    tiles_m = property(lambda self: self.word(4))
    tiles_n = property(lambda self: self.word(5))


def matmul_words(m: int, n: int, k: int, batches: int, tiles: tuple[int, int]) -> list[int]:
    """The words ``MatmulWords`` names, for one launch."""
    return [m, n, k, batches, tiles[0], tiles[1]]


# --- shared pieces ---------------------------------------------------------------------------


class MatmulBody:
    """One kernel being printed: the block's ``BodyWriter`` (its helpers serve the main loop
    too), the form and the extra words."""

    def __init__(self, config: FuseBlockConfig, signature: KernelSignature,
                 form: MatmulForm) -> None:
        self.config, self.signature, self.form = config, signature, form
        self.layout = metadata_layout(config, signature)
        self.body = BodyWriter(config, signature, self.layout)
        self.words = MatmulWords(self.layout.literal(len(self.layout.literal_words)))
        self.seed_type = compute_dtype(form.seed.ty)
        self.rank = config.rank

    def info(self, word: int) -> str:
        return self.body.info(word)

    def ref_shape(self, d: int) -> str:
        return self.info(self.layout.ref_shape(d))

    def ref_stride(self, d: int) -> str:
        return self.info(self.layout.ref_stride(d))

    def stride(self, slot: int, d: int) -> str:
        return self.info(self.layout.slot_stride(slot, d))

    def load(self, slot: int, index: str) -> str:
        """Element ``index`` of ``slot`` widened to f32 (its buffer offset included)."""
        value = self.body.element(slot, index)
        return value if self.signature.inputs[slot].dtype is DType.F32 else f"f32({value})"

    def start(self, slot: int) -> str:
        return self.body.start(slot)

    def seed(self, values: str) -> str:
        """An f32 value (scalar or vector of ``width``) as the seed's type."""
        if self.seed_type is DType.F32:
            return values
        return f"{value_type(self.seed_type, self.config.width)}({values})"

    def batch_offsets(self, coords: list[str], lanes: str = "", ref: bool = True) -> list[str]:
        """``let`` lines: the batch part of lhs's and rhs's offsets and (``ref``) of the
        reference element, from batch coordinates ``coords`` (dims ``0 .. rank - 3``)."""
        form, lines = self.form, []
        names = (("lhs", form.lhs), ("rhs", form.rhs)) + ((("ref", None),) if ref else ())
        for name, slot in names:
            terms = [f"{c} * {self.ref_stride(d) if slot is None else self.stride(slot, d)}"
                     for d, c in enumerate(coords)]
            lines.append(f"    let {name}_b{lanes} = {' + '.join(terms) if terms else '0u'};")
        return lines
