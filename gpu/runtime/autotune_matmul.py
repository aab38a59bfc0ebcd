"""Autotune of the fused matmul: every form that fits the launch, and the fallback, timed
before the walk commits the step, under burn's anchored key.

burn counterpart: ``burn-cubecl-fusion/src/optim/matmul/tune.rs`` (``FusedMatmulAutotuneKey``:
cubek's ``MatmulAutotuneKey`` — element types, anchored m, n, k and batch, the operands'
layouts — plus the anchored fused read, write and op counts; candidates: the matmul
fallback and one per cubek matmul algorithm). Candidates here: ``fallback`` (the walk's
``matmul_fallback``: the standalone matmul, then the tail) and every form of
``gpu.runtime.fused_matmul.CANDIDATES`` that ``plan_matmul`` accepts, run as
``gpu.runtime.autotune_reduce`` runs every trial (reading the step's inputs, writing fresh
buffers). Without autotune burn runs its simple kernel; so does ``choose_matmul_form`` with
``FUSELAB_AUTOTUNE=off``.
"""

from __future__ import annotations

from typing import Any

from refimpl.planner.launch.execute import StepRun, matmul_fallback
from refimpl.planner.launch.launch import Launch
from refimpl.planner.launch.layout import matrix_batch_layout
from gpu.runtime.autotune import TUNER, Candidate, anchor
from gpu.runtime.autotune_reduce import block_counts, fallback_candidate, kernel_candidate
from gpu.runtime.fused_matmul import CANDIDATES, DEFAULT_FORM, plan_matmul

__all__ = ["matmul_key", "matmul_candidates", "choose_matmul_form"]


def matmul_key(run: StepRun, opt: Any, launch: Launch) -> dict[str, Any]:
    """burn's anchored key of a fused matmul launch (shapes from the step's matmul op)."""
    plan, desc = launch.plan, run.ops[0].desc
    out = desc.out.shape
    batch = 1
    for size in out[:-2]:
        batch *= size
    lhs, rhs = plan.inputs[opt.matmul.lhs.pos], plan.inputs[opt.matmul.rhs.pos]
    reads, writes, n_ops = block_counts(plan.configs)
    return {"dtype_lhs": desc.lhs.dtype.value, "dtype_rhs": desc.rhs.dtype.value,
            "m": anchor(out[-2]), "n": anchor(out[-1]), "k": anchor(desc.lhs.shape[-1]),
            "batch": anchor(batch), "lhs_layout": matrix_batch_layout(lhs.strides).name,
            "rhs_layout": matrix_batch_layout(rhs.strides).name,
            "vector_size": plan.configs[0].width, "fused_reads": anchor(reads),
            "fused_writes": anchor(writes), "fused_ops": anchor(n_ops)}


def matmul_candidates(executor: Any, run: StepRun, opt: Any, launch: Launch,
                      scalars: list) -> list[Candidate]:
    """One candidate per form of ``CANDIDATES`` that fits ``launch`` (planned on the walk's
    uncommitted fork), then ``fallback``; ``scalars``: the trace's scalar words."""
    candidates = []
    for kind in CANDIDATES:
        planned, _ = plan_matmul(executor.device, executor.matmul_kernels, run, opt, launch,
                                 kind, scalars)
        if planned is not None and planned.workgroups:
            candidates.append(kernel_candidate(executor, kind, planned, launch))
    candidates.append(fallback_candidate(executor, run, lambda box: matmul_fallback(box, opt)))
    return candidates


def choose_matmul_form(executor: Any, run: StepRun, opt: Any, launch: Launch,
                       scalars: list) -> str:
    """The form a launch runs (``fallback``: the walk's): burn's default with autotune off,
    else the tuned winner."""
    return TUNER.choose(executor.device, "Matmul", matmul_key(run, opt, launch),
                        matmul_candidates(executor, run, opt, launch, scalars), DEFAULT_FORM)
