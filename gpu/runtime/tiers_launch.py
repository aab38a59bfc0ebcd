"""The host side of a tier-0 launch: the program's words filled for one launch, and the
buffers it binds in the generic layout (read-only slots, then read-write slots).

burn counterpart: none (see ``gpu.codegen.tier0``). The reference layout, the covered check,
the buffer-offset check and the vector-alignment refusal are ``gpu.runtime.fused_launch``'s,
called as the specialised launch calls them, so both tiers accept and refuse the same
launches.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from refimpl.planner.launch.execute import check_covered
from refimpl.planner.launch.launch import Launch
from refimpl.planner.launch.layout import swap_dims_transform, unsqueezed
from gpu.codegen.tier0 import HEADER_WORDS
from gpu.codegen.tier0_program import Tier0Program, Tier0Unsupported, view_words
from gpu.errors import GpuLimitError
from gpu.runtime.fused_launch import _broadcast_strides, _check_aligned, _reference

__all__ = ["tier0_words", "tier0_bindings"]


def _slots(program: Tier0Program, launch: Launch) -> list[tuple[int, tuple, tuple]]:
    plan, rank = launch.plan, program.config.rank
    slots = []
    for item, handle in zip(plan.inputs + plan.outputs,
                            launch.input_handles + launch.output_handles):
        if handle.offset % item.vector_size:
            raise GpuLimitError(f"tensor {item.tensor}: buffer offset {handle.offset} is not a "
                                f"whole number of vec{item.vector_size}")
        shape, strides = unsqueezed(item.shape, item.strides, rank)
        slots.append((handle.offset, tuple(shape), tuple(strides)))
    return slots


def tier0_words(program: Tier0Program, launch: Launch, scalars: Sequence[int],
                slot_of: Callable[[tuple[str, int]], int]) -> tuple[list[int], int]:
    """The ``prog`` words of one launch and the number of positions that do work;
    ``slot_of`` gives the binding slot of a tensor (``("in", k)`` / ``("out", k)``)."""
    plan, config = launch.plan, program.config
    rank, n_in = config.rank, len(plan.inputs)
    slots = _slots(program, launch)
    shape, strides = _reference(config, slots, n_in, plan.reshapes, plan.runtime_layouts)
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    n_pos = -(-numel // config.width)
    check_covered(n_pos, [o.shape for o in plan.outputs])
    if program.vector_accesses:
        first = np.arange(n_pos, dtype=np.int64) * config.width
        for access in program.vector_accesses:
            _check_aligned(access, first, strides, slots, plan.reshapes, program)
    slots = [(offset, dims, _broadcast_strides(dims, steps)) for offset, dims, steps in slots]
    tensors = program.signature.inputs + program.signature.outputs
    words = list(program.words)
    words[0] = n_pos
    words[HEADER_WORDS:HEADER_WORDS + rank] = strides
    size = view_words(rank)
    for v, template in enumerate(program.views):
        side, k = template.tensor
        slot = k if side == "in" else n_in + k
        offset, dims, steps = slots[slot]
        if template.swap is not None:
            order = [swap_dims_transform(i, template.swap) for i in range(rank)]
            dims, steps = [dims[j] for j in order], [steps[j] for j in order]
        at = program.view_base + v * size
        words[at + 1] = slot_of(template.tensor)
        words[at + 2] = offset
        if template.step_axis is not None:
            words[at + 3] = slots[slot][2][template.step_axis]
        words[at + 4] = tensors[slot].vector_size
        words[at + 6:at + 6 + 2 * rank] = [*dims, *steps]
        if template.reshape is not None:
            words[at + 6 + 2 * rank:at + 6 + 3 * rank] = [plan.reshapes[i]
                                                          for i in template.reshape]
    words[program.const_base:program.const_base + program.scalars] = scalars[:program.scalars]
    return words, n_pos


def tier0_bindings(program: Tier0Program, launch: Launch, buffer: Callable[[Any], Any],
                   ro: int, rw: int) -> tuple[list[Any], list[Any], dict]:
    """The distinct buffers a launch reads only and writes (each bound once), and the slot
    of every tensor; raises ``Tier0Unsupported`` when they do not fit ``ro`` / ``rw``."""
    outputs = program.signature.outputs
    by_tensor: dict[tuple[str, int], Any] = {}
    for k, handle in enumerate(launch.input_handles):
        by_tensor[("in", k)] = buffer(handle)
    for k, handle in enumerate(launch.output_handles):
        alias = outputs[k].alias
        by_tensor[("out", k)] = by_tensor[("in", alias)] if alias is not None else \
            buffer(handle)
    written = {id(by_tensor[t]) for t in program.stored}
    reads: list[Any] = []
    writes: list[Any] = []
    for tensor, buf in by_tensor.items():
        group = writes if id(buf) in written else reads
        if not any(b is buf for b in group):
            group.append(buf)
    if len(reads) > ro or len(writes) > rw:
        raise Tier0Unsupported(f"{len(reads)} read and {len(writes)} written buffers exceed "
                               f"the generic layout's {ro} + {rw} slots")
    slot = {}
    for tensor, buf in by_tensor.items():
        if id(buf) in written:
            slot[tensor] = ro + next(i for i, b in enumerate(writes) if b is buf)
        else:
            slot[tensor] = next(i for i, b in enumerate(reads) if b is buf)
    return reads, writes, slot
