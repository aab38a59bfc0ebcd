"""What a fused block may do: ``FuseSettings`` and the settings each built-in fuser uses.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/settings.rs`` (``FuseSettings``,
``VectorizationSetting``, ``RefLayoutSetting``) and the ``FuseSettings { .. }`` literals in the
``new`` functions of ``optim/{elemwise,matmul,reduce,nhwc_relayout}/fuser.rs`` and
``optim/reduce_broadcasted/fuser/full.rs`` (notes §5).

Settings are chosen per block: a trace built by one fuser may hold blocks with different settings
(the reduce fuser's read block and write block). Planning only reads ``broadcast`` and
``output_shape_updates``; the other fields steer launch planning (vector widths, reference
layout, in-place).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

__all__ = [
    "VectorizationMode",
    "VectorizationSetting",
    "RefLayoutMode",
    "RefLayoutSetting",
    "FuseSettings",
    "ELEMENTWISE_SETTINGS",
    "MATMUL_SETTINGS",
    "MATMUL_FALLBACK_SETTINGS",
    "REDUCE_READ_SETTINGS",
    "REDUCE_WRITE_SETTINGS",
    "REDUCE_FALLBACK_SETTINGS",
    "REDUCE_BROADCASTED_READ_SETTINGS",
    "REDUCE_BROADCASTED_WRITE_SETTINGS",
    "reduce_broadcasted_next_read_settings",
    "NHWC_RELAYOUT_SETTINGS",
]


class VectorizationMode(enum.Enum):
    """The variants of burn's ``VectorizationSetting``."""

    Activated = "Activated"  # the widest vector the tensors allow
    Deactivated = "Deactivated"  # width 1
    SmallerOrEqualThanPreviousBlock = "SmallerOrEqualThanPreviousBlock"  # capped by block_pos
    EqualThanPreviousBlock = "EqualThanPreviousBlock"  # forced to block_pos's width


@dataclass(frozen=True, slots=True)
class VectorizationSetting:
    """burn ``VectorizationSetting``; ``block_pos`` only means something for the two
    "previous block" modes."""

    mode: VectorizationMode
    block_pos: int = 0


class RefLayoutMode(enum.Enum):
    """The variants of burn's ``RefLayoutSetting``."""

    Any = "Any"  # any dense layout may be the reference
    OnlyContiguous = "OnlyContiguous"  # a concrete reference must be contiguous
    SameAsBlock = "SameAsBlock"  # copy block ``block_pos``'s reference


@dataclass(frozen=True, slots=True)
class RefLayoutSetting:
    """burn ``RefLayoutSetting``; ``block_pos`` only means something for ``SameAsBlock``."""

    mode: RefLayoutMode
    block_pos: int = 0


ACTIVATED = VectorizationSetting(VectorizationMode.Activated)
DEACTIVATED = VectorizationSetting(VectorizationMode.Deactivated)
ANY_LAYOUT = RefLayoutSetting(RefLayoutMode.Any)
ONLY_CONTIGUOUS = RefLayoutSetting(RefLayoutMode.OnlyContiguous)


@dataclass(frozen=True, slots=True)
class FuseSettings:
    """burn ``FuseSettings``; the defaults are burn's ``FuseSettings::default()``."""

    broadcast: bool = True  # outputs may differ from the reference shape by size-1 dims
    output_shape_updates: bool = True  # the reference shape may grow along size-1 dims
    inplace: bool = True  # an output may reuse a consumed (ReadWrite) input buffer
    vectorization: VectorizationSetting = ACTIVATED
    ref_layout: RefLayoutSetting = ANY_LAYOUT
    choose_output_layout: bool = False  # outputs may follow their inputs' dimension order


# ElementWise: every default, and free to pick the output layout (optim/elemwise/fuser.rs).
ELEMENTWISE_SETTINGS = FuseSettings(choose_output_layout=True)

# Matmul: the epilogue may broadcast but never grow the matmul's output shape; the fallback
# trace (matmul alone, then the tail) uses the defaults (optim/matmul/fuser.rs).
MATMUL_SETTINGS = FuseSettings(output_shape_updates=False)
MATMUL_FALLBACK_SETTINGS = FuseSettings()

# Reduce: the read block never broadcasts and needs a contiguous reference; the write block
# neither broadcasts nor grows and is at most as wide as the read block (optim/reduce/fuser.rs).
REDUCE_READ_SETTINGS = FuseSettings(
    broadcast=False,
    output_shape_updates=True,
    inplace=True,
    vectorization=ACTIVATED,
    ref_layout=ONLY_CONTIGUOUS,
    choose_output_layout=False,
)
REDUCE_WRITE_SETTINGS = FuseSettings(
    broadcast=False,
    output_shape_updates=False,
    inplace=False,
    vectorization=VectorizationSetting(VectorizationMode.SmallerOrEqualThanPreviousBlock, 0),
    ref_layout=ONLY_CONTIGUOUS,
    choose_output_layout=False,
)
REDUCE_FALLBACK_SETTINGS = FuseSettings()

# ReduceBroadcasted, the single trace over every block: reads may broadcast but write nothing
# in place; writes are scalar (optim/reduce_broadcasted/fuser/full.rs).
REDUCE_BROADCASTED_READ_SETTINGS = FuseSettings(
    broadcast=True,
    output_shape_updates=True,
    inplace=False,
    vectorization=ACTIVATED,
    ref_layout=ONLY_CONTIGUOUS,
    choose_output_layout=False,
)
REDUCE_BROADCASTED_WRITE_SETTINGS = FuseSettings(
    broadcast=False,
    output_shape_updates=False,
    inplace=False,
    vectorization=DEACTIVATED,
    ref_layout=ONLY_CONTIGUOUS,
    choose_output_layout=False,
)


def reduce_broadcasted_next_read_settings() -> FuseSettings:
    """Settings of every read block after the first: block 0's width and reference."""
    return replace(
        REDUCE_BROADCASTED_READ_SETTINGS,
        vectorization=VectorizationSetting(VectorizationMode.EqualThanPreviousBlock, 0),
        ref_layout=RefLayoutSetting(RefLayoutMode.SameAsBlock, 0),
    )


# NHWCRelayout: element-wise defaults; it imposes its own output layout, so it does not let
# one be chosen for it (optim/nhwc_relayout/fuser.rs).
NHWC_RELAYOUT_SETTINGS = FuseSettings(choose_output_layout=False)
