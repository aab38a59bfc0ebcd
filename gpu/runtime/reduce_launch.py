"""The host side of a fused reduce launch: the kernel (cached by spec), the metadata words, the
grid, and the refusals that send a step to its fallback.

burn counterpart: ``burn-cubecl-fusion/src/optim/reduce/optimization.rs`` (``launch_reduce``:
the strategy, line mode and cube count, ``FusedReduceLaunch``) and cubecl-reduce's
``ReduceStrategy``/``ReduceLineMode`` choice (``launch.rs``). The reference layouts are
resolved as ``gpu.runtime.fused_launch`` resolves an element-wise block's.

A launch is refused (``ReduceRefused``, the walk then runs the fallback and the debug log
says why) when the kernel cannot run it as planned: a reference whose vector lanes are not
adjacent along the vector axis, a write block that does not cover the reduction's output
shape, more storage buffers, workgroup storage or workgroups than the device has.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from refimpl.planner.launch.execute import check_covered
from refimpl.planner.launch.launch import Launch
from refimpl.planner.launch.layout import unsqueezed
from gpu.codegen.reduce import identity_word_value, REDUCERS
from gpu.codegen.reduce_fused import (
    COMBINE, FusedReduceKernel, ReduceKernelSpec, emit_reduce,
)
from gpu.codegen.reduce_broadcasted import (
    BroadcastedSpec, FusedBroadcastedKernel, ReduceSegment, emit_broadcasted, segments_of,
)
from gpu.codegen.render import scalar_word
from gpu.codegen.fused_signature import compute_dtype
from gpu.runtime.fused_launch import (
    _broadcast_strides, _check_aligned, _reference, signature_of,
)
from gpu.runtime.server import DEBUG_LOG_ENV

__all__ = ["ReduceRefused", "ReduceKernelCache", "REDUCE_KERNEL_CACHE", "reduce_spec",
           "ReduceLaunch", "prepare_reduce", "debug", "BROADCASTED_KERNEL_CACHE",
           "broadcasted_spec", "prepare_broadcasted"]


class ReduceRefused(Exception):
    """The fused kernel cannot run this launch; the message says why (the step falls back)."""


def debug(message: str) -> None:
    """One line in the debug log (``FUSELAB_DEBUG_LOG=stdout``)."""
    if os.environ.get(DEBUG_LOG_ENV) == "stdout":
        print(f"[fuselab] {message}", file=sys.stdout)


class ReduceKernelCache:
    """Emitted kernels by their spec's ``key()`` (LRU): a new shape of a known spec emits and
    compiles nothing. ``emit`` prints a spec (``emit_reduce``, ``emit_broadcasted``)."""

    def __init__(self, size: int = 256, emit: Any = emit_reduce) -> None:
        self.size, self.hits, self.misses, self.emit = size, 0, 0, emit
        self._entries: OrderedDict[tuple, FusedReduceKernel] = OrderedDict()

    def kernel(self, spec: ReduceKernelSpec) -> FusedReduceKernel:
        key = spec.key()
        found = self._entries.get(key)
        if found is not None:
            self.hits += 1
            self._entries.move_to_end(key)
            return found
        self.misses += 1
        kernel = self.emit(spec)
        self._entries[key] = kernel
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return kernel

    def __len__(self) -> int:
        return len(self._entries)


REDUCE_KERNEL_CACHE = ReduceKernelCache()
BROADCASTED_KERNEL_CACHE = ReduceKernelCache(emit=emit_broadcasted)


def reduce_spec(opt: Any, launch: Launch, routine: str) -> ReduceKernelSpec:
    """The spec of ``opt``'s fused reduce (a ``ReduceOptimization``) over ``launch``: the
    vector mode follows the read block's plan (width 1: scalar; vectors along the reduced
    axis: parallel; across outputs: perpendicular)."""
    read, write = launch.plan.configs
    reduce = opt.reduce
    axis = reduce.axis + read.rank - len(reduce.op.input.shape)
    mode = "scalar" if read.width == 1 else \
        "parallel" if read.vector_axis == axis else "perpendicular"
    return ReduceKernelSpec(read, write, signature_of(launch), reduce.inst, axis, reduce.input,
                            reduce.output, reduce.acc, routine, mode)


@dataclass(frozen=True, slots=True)
class ReduceLaunch:
    """A fused reduce ready to dispatch: kernel, metadata words, workgroups."""

    kernel: FusedReduceKernel
    words: list
    workgroups: int


def _slots(launch: Launch, rank: int) -> list[tuple]:
    plan = launch.plan
    slots = []
    for item, handle in zip(plan.inputs + plan.outputs,
                            launch.input_handles + launch.output_handles):
        shape, strides = unsqueezed(item.shape, item.strides, rank)
        if handle.offset % item.vector_size:
            raise ReduceRefused(f"tensor {item.tensor}: buffer offset {handle.offset} is not "
                                f"a whole number of vec{item.vector_size}")
        slots.append((handle.offset, shape, strides))
    return slots


def _lanes_adjacent(shape: Sequence[int], strides: Sequence[int], axis: int,
                    width: int) -> bool:
    """A position's ``width`` elements are adjacent along ``axis`` and start a group."""
    if width == 1:
        return True
    if strides[axis] != 1 or shape[axis] % width:
        return False
    return all(s % width == 0 for d, (n, s) in enumerate(zip(shape, strides))
               if d != axis and n > 1)


def _identity(spec: Any) -> int:
    """The run-time identity word of max/min/max-abs (``spec``: what names ``inst`` and
    ``input``)."""
    kind = {"ArgMax": "lowest", "ArgMin": "highest"}.get(spec.inst) or \
        COMBINE.get(spec.inst, ("zero",))[0]
    if kind not in ("lowest", "highest"):
        return 0
    dtype = compute_dtype(spec.input.ty)
    value = identity_word_value(REDUCERS["Max" if kind == "lowest" else "Min"], dtype)
    return scalar_word(np.asarray(value).astype(dtype.numpy), dtype)


def _block_words(fn: Any, launch: Launch, slots: list, shape: tuple, strides: tuple,
                 scalars: Sequence[int], spec: Any) -> list:
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    n_pos = -(-numel // fn.width)
    if fn.vector_accesses:
        first = np.arange(n_pos, dtype=np.int64) * fn.width
        for access in fn.vector_accesses:
            _check_aligned(access, first, strides, slots, launch.plan.reshapes, spec)
    wide = [(offset, dims, _broadcast_strides(dims, steps)) for offset, dims, steps in slots]
    return fn.layout.inner.pack(n_pos, shape, strides, wide, launch.plan.reshapes, scalars)


def prepare_reduce(kernel: FusedReduceKernel, launch: Launch, scalars: Sequence[int],
                   properties: Any, workgroup_size: int) -> ReduceLaunch:
    """Metadata words and grid of one launch, or ``ReduceRefused``."""
    spec, plan = kernel.spec, launch.plan
    n_in = len(plan.inputs)
    slots = _slots(launch, spec.read.rank)
    shape_in, strides_in = _reference(spec.read, slots, n_in, plan.reshapes,
                                      plan.runtime_layouts)
    shape_out, strides_out = _reference(spec.write, slots, n_in, plan.reshapes,
                                        plan.runtime_layouts)
    axis, width, rank = spec.axis, spec.width, spec.read.rank
    expected = tuple(1 if d == axis else n for d, n in enumerate(shape_in))
    if tuple(shape_out) != expected:
        raise ReduceRefused(f"the write block's reference {tuple(shape_out)} is not the "
                            f"reduction's output {expected}")
    vector_axis = axis if spec.mode != "perpendicular" else spec.read.vector_axis
    if not _lanes_adjacent(shape_in, strides_in, vector_axis, width):
        raise ReduceRefused(f"vectors of {width} are not adjacent along axis {vector_axis} "
                            f"of the reduction's input (strides {tuple(strides_in)})")
    check_covered(int(np.prod(shape_out, dtype=np.int64)), [o.shape for o in plan.outputs])
    perp = spec.mode == "perpendicular"
    group = [1 if d == axis else n // width if perp and d == vector_axis else n
             for d, n in enumerate(shape_in)]
    scale = [width if perp and d == vector_axis else 1 for d in range(rank)]
    read_strides = [0 if d == axis else strides_in[d] * scale[d] for d in range(rank)]
    write_strides = [0 if d == axis else strides_out[d] * scale[d] for d in range(rank)]
    length = shape_in[axis]
    parallel = spec.mode == "parallel"
    steps = length // width if parallel else length
    step = strides_in[axis] * (width if parallel else 1)
    lane_step = strides_out[vector_axis] if perp else 0
    groups = int(np.prod(group, dtype=np.int64))
    words = _block_words(kernel.read, launch, slots, shape_in, strides_in, scalars, kernel.spec)
    words += _block_words(kernel.write, launch, slots, shape_out, strides_out, scalars,
                          kernel.spec)
    words += [groups, *group, *read_strides, *write_strides, steps, step, lane_step,
              _identity(spec), length]
    if len(words) != kernel.words.length() + 1:
        raise ValueError("fused reduce metadata does not match the kernel's layout")
    return ReduceLaunch(kernel, words, _workgroups(kernel, groups, properties, workgroup_size))


PLANE_GUESS = 32  # the grid of a plane launch assumes this subgroup size (planes stride)


def _workgroups(kernel: Any, groups: int, properties: Any, workgroup_size: int) -> int:
    _check_limits(kernel, properties, workgroup_size)
    routine = kernel.spec.routine
    if routine == "plane" and "subgroup" not in properties.features:
        raise ReduceRefused("the plane routine needs the device's subgroup feature")
    per_group = {"cube": 1, "plane": max(1, workgroup_size // PLANE_GUESS)}.get(
        routine, workgroup_size)
    workgroups = -(-groups // per_group)
    if workgroups > properties.max_workgroups_per_dimension ** 3:
        raise ReduceRefused(f"{workgroups} workgroups exceed the device's dispatch limit")
    return workgroups


def broadcasted_spec(opt: Any, launch: Launch, routine: str) -> BroadcastedSpec:
    """The spec of ``opt``'s full trace (a ``ReduceBroadcastedOptimization``) over
    ``launch``; the accumulators come from the per-block fallbacks' reductions."""
    configs = launch.plan.configs
    accs = [block.reduce.acc for block in opt.fallbacks if block.name == "Reduce"]
    info = opt.broadcasted
    if len(accs) != len(info.blocks):
        raise ReduceRefused("the fallbacks' reductions do not match the full trace's")
    reductions = tuple((b.inst, b.input, b.output, acc) for b, acc in zip(info.blocks, accs))
    axis = info.reduce_axis + configs[0].rank - _reduce_rank(opt)
    return BroadcastedSpec(configs, signature_of(launch), axis,
                           segments_of(configs, reductions), routine)


def _reduce_rank(opt: Any) -> int:
    return next(len(b.reduce.op.input.shape) for b in opt.fallbacks if b.name == "Reduce")


def prepare_broadcasted(kernel: FusedBroadcastedKernel, launch: Launch, scalars: Sequence[int],
                        properties: Any, workgroup_size: int) -> ReduceLaunch:
    """Metadata words and grid of a ReduceBroadcasted launch, or ``ReduceRefused``."""
    spec, plan = kernel.spec, launch.plan
    rank, axis = spec.configs[0].rank, spec.axis
    slots = _slots(launch, rank)
    refs = [_reference(c, slots, len(plan.inputs), plan.reshapes, plan.runtime_layouts)
            for c in spec.configs]
    writes = {s.write for s in spec.segments if isinstance(s, ReduceSegment)}
    full = next(tuple(refs[c][0]) for c in range(len(refs)) if c not in writes)
    reduced = tuple(1 if d == axis else n for d, n in enumerate(full))
    words, strides = [], []
    for c, (config, fn, (shape, ref_strides)) in enumerate(zip(spec.configs, kernel.functions,
                                                                refs)):
        want = reduced if c in writes else full
        if tuple(shape) != want:
            raise ReduceRefused(f"block {c}'s reference {tuple(shape)} is not the row "
                                f"layout {want}")
        if c not in writes and not _lanes_adjacent(shape, ref_strides, axis, config.width):
            raise ReduceRefused(f"block {c}: vectors of {config.width} are not adjacent "
                                f"along the reduced axis")
        check_covered(int(np.prod(shape, dtype=np.int64)), [o.shape for o in plan.outputs])
        words += _block_words(fn, launch, slots, shape, ref_strides, scalars, spec)
        width = 1 if c in writes else config.width
        steps = 0 if c in writes else full[axis] // width
        strides += [0 if d == axis else s for d, s in enumerate(ref_strides)]
        strides += [steps, ref_strides[axis] * width]
    group = [1 if d == axis else n for d, n in enumerate(full)]
    groups = int(np.prod(group, dtype=np.int64))
    identities = [_identity(s) for s in spec.segments if isinstance(s, ReduceSegment)]
    words += [groups, *group, full[axis], *strides, *identities]
    if len(words) != kernel.words.total():
        raise ValueError("ReduceBroadcasted metadata does not match the kernel's layout")
    return ReduceLaunch(kernel, words, _workgroups(kernel, groups, properties, workgroup_size))


def _check_limits(kernel: FusedReduceKernel, properties: Any, workgroup_size: int) -> None:
    bindings = len(kernel.bindings) + 1
    if bindings > properties.max_storage_buffers:
        raise ReduceRefused(f"{bindings} storage buffers exceed the device's "
                            f"{properties.max_storage_buffers}")
    shared = kernel.shared_bytes_per_invocation * workgroup_size
    cap = int(properties.limits.get("max-compute-workgroup-storage-size", 16384))
    if shared > cap:
        raise ReduceRefused(f"{shared} bytes of workgroup storage exceed the device's {cap}")
    if workgroup_size > properties.max_workgroup_size:
        raise ReduceRefused(f"{workgroup_size} invocations per workgroup exceed the "
                            f"device's {properties.max_workgroup_size}")
