"""The host side of the fused matmul: which form runs a launch, its metadata words, and the
fallback when no fused kernel fits the device.

burn counterpart: ``burn-cubecl-fusion/src/optim/matmul/optimization.rs``
(``MatmulOptimization::execute``: without autotune the default selector, burn's simple kernel)
and cubecl's kernel cache; the candidates autotune times are ``gpu.runtime.autotune_matmul``'s.

``run_fused_matmul(executor, run, opt, launch, scalars, kind)``: the launch's kernel of form
``kind`` (``None``: ``DEFAULT_FORM``). A form the launch cannot use falls back, said in the
debug log (``FUSELAB_DEBUG_LOG=stdout``), never failing the run: a tiled form whose epilogue
positions do not run along ``N`` or whose operands are not aligned for its vec4 loads, or any
form past the device's bindings, workgroup storage or invocations, runs ``simple``; past that
(or with integer operands), the standalone matmul then the ``product`` kernel (two launches,
fewer bindings, no workgroup memory). The form is chosen before the walk commits the step
(``GpuExecutor.matmul_refusal``); autotune's ``fallback`` is the walk's own fallback.

Kernels are cached by ``(config_id, signature, form)`` (``MATMUL_KERNELS``), never by shape.
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from refimpl.planner.launch.launch import Launch, config_id
from refimpl.planner.launch.layout import unsqueezed
from gpu.codegen.emit import FusedKernel, KernelSignature
from gpu.codegen.matmul_fused import (
    FLOAT_OPERANDS, GEMV_SIZE, MatmulForm, emit_fused_matmul, matmul_words, operand_fast_axes,
)
from gpu.codegen.matmul_tiled import TILINGS, tiled_fits
from gpu.errors import GpuLimitError
from gpu.runtime.fused_launch import launch_words, signature_of
from gpu.runtime.server import DEBUG_LOG_ENV
from gpu.runtime.unfused import execute as execute_op

__all__ = ["DEFAULT_FORM", "CANDIDATES", "MatmulKernels", "MATMUL_KERNELS", "MatmulLaunch",
           "plan_matmul", "default_kernel", "run_fused_matmul", "run_matmul_fallback"]

DEFAULT_FORM = "simple"  # burn without autotune: its simple kernel
CANDIDATES = ("simple", "gemv", *TILINGS)


def _log(message: str) -> None:
    if os.environ.get(DEBUG_LOG_ENV) == "stdout":
        print(f"[fuselab] fused matmul: {message}", file=sys.stdout)


class MatmulKernels:
    """Emitted fused matmul kernels keyed by ``(config_id, signature, form)`` (LRU)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._entries: OrderedDict[tuple, FusedKernel] = OrderedDict()

    def kernel(self, config: Any, signature: KernelSignature, form: MatmulForm) -> FusedKernel:
        key = (config_id(config), signature, form)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        kernel = emit_fused_matmul(config, signature, form)
        self._entries[key] = kernel
        if len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return kernel

    def __len__(self) -> int:
        return len(self._entries)


MATMUL_KERNELS = MatmulKernels()


@dataclass(frozen=True, slots=True)
class MatmulLaunch:
    """One form planned for one launch: its kernel, words, workgroups and their size."""

    form: MatmulForm
    kernel: FusedKernel
    words: list
    workgroups: int
    size: int


def _operands(launch: Launch, opt: Any) -> tuple:
    plan = launch.plan
    rank = plan.configs[0].rank
    lhs, rhs = plan.inputs[opt.matmul.lhs.pos], plan.inputs[opt.matmul.rhs.pos]
    return (unsqueezed(lhs.shape, lhs.strides, rank) + (lhs.vector_size,),
            unsqueezed(rhs.shape, rhs.strides, rank) + (rhs.vector_size,))


def _aligned(shape: tuple, strides: tuple, vs: int, fast: int) -> bool:
    """Whether vec``vs`` chunks along dim ``fast`` start on whole vectors."""
    if vs == 1:
        return True
    if strides[fast] != 1 and shape[fast] > 1 or shape[fast] % vs:
        return False
    return all(s % vs == 0 for d, (n, s) in enumerate(zip(shape, strides))
               if d != fast and n > 1)


def _why_not(device: Any, kernel: FusedKernel, size: int, shared: int) -> str | None:
    """Why the device cannot run ``kernel`` (None: it can)."""
    limits = device.limits
    buffers = len(kernel.bindings) + 1
    if buffers > device.max_storage_buffers:
        return f"{buffers} storage buffers, the device binds {device.max_storage_buffers}"
    if shared > int(limits.get("max-compute-workgroup-storage-size", 16384)):
        return (f"{shared} bytes of workgroup storage, the device offers "
                f"{limits.get('max-compute-workgroup-storage-size')}")
    if size > device.max_workgroup_size:
        return f"{size} invocations per workgroup, the device runs {device.max_workgroup_size}"
    return None


def plan_matmul(device: Any, kernels: MatmulKernels, run: Any, opt: Any, launch: Launch,
                kind: str, scalars: list) -> tuple[MatmulLaunch | None, str | None]:
    """Form ``kind`` planned for ``launch``, or ``None`` and why it cannot run."""
    config = launch.plan.configs[0]
    rank = config.rank
    dtypes = {launch.input_handles[p].dtype for p in (opt.matmul.lhs.pos, opt.matmul.rhs.pos)}
    if kind != "product" and not dtypes <= set(FLOAT_OPERANDS):
        return None, "integer operands: the fused forms multiply floats"
    (ls, lt, lvs), (rs, rt, rvs) = _operands(launch, opt)
    fast = operand_fast_axes(lt, rt, lvs, rvs)
    form = MatmulForm(kind, opt.matmul.lhs.pos, opt.matmul.rhs.pos, opt.matmul.out,
                      *(fast if kind in TILINGS else ("k", "n")))
    kernel = kernels.kernel(config, signature_of(launch), form)
    words, n_pos = launch_words(kernel, launch, scalars)
    ref_shape, ref_strides = words[1:1 + rank], words[1 + rank:1 + 2 * rank]
    m, n, k = ref_shape[rank - 2], ref_shape[rank - 1], ls[rank - 1]
    batches = int(np.prod(ref_shape[:rank - 2], dtype=np.int64))
    shared, size = 0, 64
    if kind in TILINGS:
        tiling = TILINGS[kind]
        if not tiled_fits(ref_shape, ref_strides, config.width, config.vector_axis):
            return None, "the epilogue's reference positions do not run along N"
        if not (_aligned(ls, lt, lvs, rank - 1 if fast[0] == "k" else rank - 2) and
                _aligned(rs, rt, rvs, rank - 1 if fast[1] == "n" else rank - 2)):
            return None, "an operand is not aligned for vec4 loads along its contiguous axis"
        tiles = tiling.tiles(m, n)
        workgroups, size, shared = tiles[0] * tiles[1] * batches, tiling.threads, \
            tiling.shared_bytes
    elif kind == "gemv":
        tiles, workgroups, size, shared = (0, 0), n_pos, GEMV_SIZE, GEMV_SIZE * 16
    else:
        tiles, workgroups = (0, 0), -(-n_pos // 64)
    why = _why_not(device, kernel, size, shared)
    if why is not None:
        return None, why
    words = words + matmul_words(m, n, k, batches, tiles)
    return MatmulLaunch(form, kernel, words, workgroups, size), None


def _buffers(executor: Any, kernel: FusedKernel, launch: Launch, product: Any = None) -> list:
    found = []
    for side, k in kernel.bindings:
        if side == "product":
            found.append(product)
        elif side == "in":
            found.append(executor.buffer(launch.input_handles[k]))
        else:
            found.append(executor.buffer(launch.output_handles[k]))
    return found


def _dispatch(executor: Any, planned: MatmulLaunch, buffers: list) -> None:
    rt = executor.rt
    if planned.workgroups:
        rt.dispatch(planned.kernel.source, [*buffers, rt.words(planned.words)],
                    planned.workgroups, workgroup_size=planned.size)


def run_matmul_fallback(executor: Any, run: Any, opt: Any, launch: Launch,
                        scalars: list) -> FusedKernel:
    """The standalone matmul, then the ``product`` kernel (the epilogue reading its output)."""
    handles = launch.input_handles
    op = run.ops[0]
    operands = [executor.device_tensor(handles[pos]) for pos in
                (opt.matmul.lhs.pos, opt.matmul.rhs.pos)]
    product = execute_op(executor.device, op, operands)
    planned, why = plan_matmul(executor.device, executor.matmul_kernels, run, opt, launch,
                               "product", scalars)
    if planned is None:
        raise GpuLimitError(f"fused matmul: even the fallback's epilogue kernel cannot run: "
                            f"{why} (the plan was made for another device profile)")
    _dispatch(executor, planned, _buffers(executor, planned.kernel, launch, product.buffer))
    return planned.kernel


def default_kernel(kernels: MatmulKernels, opt: Any, launch: Launch) -> FusedKernel:
    """The kernel a run without autotune launches first (what ``fuselab wgsl`` lists)."""
    form = MatmulForm(DEFAULT_FORM, opt.matmul.lhs.pos, opt.matmul.rhs.pos, opt.matmul.out)
    return kernels.kernel(launch.plan.configs[0], signature_of(launch), form)


def run_fused_matmul(executor: Any, run: Any, opt: Any, launch: Launch, scalars: list,
                     kind: str | None = None) -> FusedKernel:
    """Run the launch's fused matmul as form ``kind`` (falling back as the module says);
    ``scalars``: the trace's scalar words (``gpu.runtime.executor.scalar_words``). The kernel
    that wrote the outputs."""
    kind = kind or DEFAULT_FORM
    device, kernels = executor.device, executor.matmul_kernels
    for attempt in dict.fromkeys((kind, DEFAULT_FORM)):
        planned, why = plan_matmul(device, kernels, run, opt, launch, attempt, scalars)
        if planned is not None:
            _dispatch(executor, planned, _buffers(executor, planned.kernel, launch))
            return planned.kernel
        _log(f"{attempt} does not fit: {why}; falling back")
    return run_matmul_fallback(executor, run, opt, launch, scalars)
