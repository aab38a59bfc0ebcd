"""``GpuExecutor``'s fused reduce: which routine runs a launch (forced, autotuned or burn's
default), its refusal when the kernel cannot run it, and the dispatch.

burn counterpart: ``burn-cubecl-fusion/src/optim/reduce/optimization.rs``
(``ReduceOptimization::execute``: autotune over the fused routines and the fallback,
``FusedReduceLaunch``) and ``optim/reduce/tune.rs`` (the candidates and their key:
``gpu.runtime.autotune_reduce``). Without autotune burn runs the ``unit`` routine for Reduce and
the per-block fallbacks for ReduceBroadcasted; ``FUSELAB_REDUCE_ROUTINE=unit|cube|plane|fallback``
forces one for both (tests, benchmarks; ReduceBroadcasted has no plane form and falls back).
"""

from __future__ import annotations

import os
from typing import Any

from refimpl.planner.launch.launch import Launch
from gpu.errors import GpuLimitError, UnsupportedDTypeError, UnsupportedOpError
from gpu.runtime.autotune_reduce import choose
from gpu.runtime.reduce_launch import (
    BROADCASTED_KERNEL_CACHE, REDUCE_KERNEL_CACHE, ReduceLaunch, ReduceRefused,
    broadcasted_spec, debug, prepare_broadcasted, prepare_reduce, reduce_spec,
)

__all__ = ["ROUTINE_ENV", "ReduceRunner", "forced_routine", "listing_refusal"]

ROUTINE_ENV = "FUSELAB_REDUCE_ROUTINE"
_FORCEABLE = ("unit", "cube", "plane", "fallback")


def forced_routine() -> str | None:
    """The routine ``FUSELAB_REDUCE_ROUTINE`` forces, or ``None``."""
    value = os.environ.get(ROUTINE_ENV, "").strip().lower()
    if not value:
        return None
    if value not in _FORCEABLE:
        raise ValueError(f"{ROUTINE_ENV}={value!r}: expected one of {', '.join(_FORCEABLE)}")
    return value


def listing_refusal(opt: Any, launch: Launch) -> str | None:
    """Why the default routine's kernel cannot be emitted for ``launch`` (no device: the
    listing backend checks only what the spec decides)."""
    try:
        REDUCE_KERNEL_CACHE.kernel(reduce_spec(opt, launch, "unit"))
    except (UnsupportedOpError, UnsupportedDTypeError) as error:
        return str(error)
    return None


class ReduceRunner:
    """The fused reduce of one executor: ``refusal`` decides (and prepares) a launch,
    ``run`` dispatches the prepared one."""

    def __init__(self, executor: Any) -> None:
        self.executor = executor
        self.kernels = REDUCE_KERNEL_CACHE
        self._ready: dict[int, ReduceLaunch] = {}

    def prepared(self, opt: Any, launch: Launch, routine: str, scalars: list) -> ReduceLaunch:
        """The routine's kernel and words for ``launch`` (``ReduceRefused`` when it cannot)."""
        ex = self.executor
        try:
            kernel = self.kernels.kernel(reduce_spec(opt, launch, routine))
        except (UnsupportedOpError, UnsupportedDTypeError) as error:
            raise ReduceRefused(str(error)) from None
        return prepare_reduce(kernel, launch, scalars, ex.rt.properties, ex.rt.workgroup_size)

    def refusal(self, run: Any, opt: Any, launch: Launch, scalars: list,
                ops: Any) -> str | None:
        """Why ``launch`` runs the fallback, else ``None`` (its kernel prepared for ``run``);
        ``scalars``: the trace's scalar words; ``ops``: the reduction's ops."""
        forced = forced_routine()
        try:
            if forced == "fallback":
                raise ReduceRefused(f"{ROUTINE_ENV}=fallback")
            if forced is not None:
                ready = self.prepared(opt, launch, forced, scalars)
            else:
                ready = choose(self, run, opt, launch, scalars, "Reduce", ops)
                if ready is None:
                    raise ReduceRefused("autotune chose the fallback")
        except (ReduceRefused, GpuLimitError) as refused:
            debug(f"fused reduce ({opt.reduce.inst}) falls back: {refused}")
            return str(refused)
        self._ready[id(launch)] = ready
        return None

    def broadcasted_refusal(self, run: Any, opt: Any, launch: Launch,
                            scalars: list) -> str | None:
        """Why a ReduceBroadcasted launch runs its per-block fallbacks, else ``None``."""
        forced = forced_routine()
        try:
            if forced == "fallback":
                raise ReduceRefused(f"{ROUTINE_ENV}=fallback")
            if forced is not None:
                ready = self.prepared_broadcasted(opt, launch, forced, scalars)
            else:
                ready = choose(self, run, opt, launch, scalars, "ReduceBroadcasted", run.ops)
                if ready is None:
                    raise ReduceRefused("autotune off or it chose the fallback")
        except (ReduceRefused, GpuLimitError) as refused:
            debug(f"fused ReduceBroadcasted falls back: {refused}")
            return str(refused)
        self._ready[id(launch)] = ready
        return None

    def prepared_broadcasted(self, opt: Any, launch: Launch, routine: str,
                             scalars: list) -> ReduceLaunch:
        ex = self.executor
        try:
            kernel = BROADCASTED_KERNEL_CACHE.kernel(broadcasted_spec(opt, launch, routine))
        except (UnsupportedOpError, UnsupportedDTypeError) as error:
            raise ReduceRefused(str(error)) from None
        return prepare_broadcasted(kernel, launch, scalars, ex.rt.properties,
                                   ex.rt.workgroup_size)

    def run(self, launch: Launch) -> None:
        ready = self._ready.pop(id(launch))
        ex = self.executor
        ex._kernels.append(ready.kernel)
        buffers = [ex.buffer((launch.input_handles if side == "in" else
                              launch.output_handles)[k]) for side, k in ready.kernel.bindings]
        ex.rt.dispatch(ready.kernel.source, [*buffers, ex.rt.words(ready.words)],
                       ready.workgroups, workgroup_size=ex.rt.workgroup_size)
