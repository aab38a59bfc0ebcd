"""Autotune of the fused reduce and ReduceBroadcasted launches: their candidates (the fused
routines and the fallback), the trials every fuser's candidates run as, and burn's anchored
key.

burn counterpart: ``burn-cubecl-fusion/src/optim/reduce/tune.rs`` (``FusedReduceAutotuneKey``:
cubek's ``ReduceAutotuneKey`` — element types, anchored reduce-axis length and reduce count,
whether the axis is contiguous — plus anchored fused read, write and op counts; candidates
``fused_reduce_fallback``, ``fused_unit``, ``fused_plane``, ``fused_cube``) and
``optim/reduce_broadcasted/tune.rs``. Candidates here: ``fallback``, ``fused_unit``,
``fused_cube`` and, for Reduce on a device with subgroups, ``fused_plane``. Without autotune
burn runs ``unit`` for Reduce and the fallback for ReduceBroadcasted; so does ``choose`` with
``FUSELAB_AUTOTUNE=off``.

Candidates are timed while the walk asks its refusal hook, before it commits the step: the
step's inputs hold what they held before it, and a trial never writes a buffer a tensor lives
in, so nothing is copied. burn runs each trial on a fork of its context whose handles are
clones, so ``can_mut()`` is false and no trial writes in place (``tune.rs``'s
``FusionInputGen``, ``engine/launch/input.rs``); likewise here:

* a fused kernel (``kernel_candidate``) reads the launch's input buffers and writes fresh
  ones: its outputs, and each input it writes in place (so the trial times the kernel that
  will run, its in-place input read from a fresh buffer);
* the fallback (``fallback_candidate``) runs once, through the walk's own fallback
  (``refimpl.planner.launch.execute.matmul_fallback`` / ``reduce_fallback`` /
  ``broadcasted_fallback``), in a ``sandbox``: a fork of the executor's memory that holds a
  second handle on every live buffer, so its launches write fresh buffers only; its
  dispatches are recorded for the timed replays. The executor's state (memory, buffers,
  records, dispatch count) is restored after.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator

from refimpl.data import buffer_length
from refimpl.ops import OpKind
from refimpl.planner.engine.trace import Input, Output
from refimpl.planner.launch.execute import StepRun, broadcasted_fallback, reduce_fallback
from refimpl.planner.launch.launch import Launch
from gpu.runtime.autotune import TUNER, Candidate, anchor
from gpu.runtime.buffers import STORAGE_NUMPY, padded_size
from gpu.runtime.reduce_launch import ReduceLaunch, ReduceRefused

__all__ = ["FALLBACK", "block_counts", "choose", "reduce_key", "fallback_candidate",
           "kernel_candidate",
           "sandbox"]

FALLBACK = "fallback"


def block_counts(configs: Any) -> tuple[int, int, int]:
    """Reads (distinct inputs and outputs read), writes (outputs written), ops of the blocks."""
    reads, writes, ops = set(), set(), 0
    for config in configs:
        for op in config.ops:
            ops += 1
            for name in ("input", "lhs", "rhs", "cond", "min", "max", "indices"):
                arg = getattr(op.args, name, None)
                if isinstance(arg, (Input, Output)):
                    reads.add((type(arg).__name__, arg.pos))
            out = getattr(op.args, "out", None)
            if isinstance(out, Output):
                writes.add(out.pos)
    return len(reads), len(writes), ops


def reduce_key(fuser: str, opt: Any, launch: Launch, ops: Any) -> dict[str, Any]:
    """burn's anchored key for a Reduce / ReduceBroadcasted launch (``ops``: the step's
    global ops: real shapes and dtypes; the first reduction stands for a broadcasted one)."""
    reduce = opt.reduce if fuser == "Reduce" else next(
        b.reduce for b in opt.fallbacks if b.name == "Reduce")
    op = next(op for op in ops if op.op.kind is OpKind.REDUCE_DIM).desc
    shape, axis = op.input.shape, op.axis
    length = shape[axis] if shape else 1
    count = 1
    for d, n in enumerate(shape):
        count *= 1 if d == axis else n
    reads, writes, n_ops = block_counts(launch.plan.configs)
    return {"dtype_in": op.input.dtype.value, "dtype_out": op.out.dtype.value,
            "acc": reduce.acc.name, "inst": reduce.inst, "rank": len(shape),
            "axis_contiguous": axis == len(shape) - 1, "reduce_axis": anchor(length),
            "reduce_count": anchor(count), "vector_size": launch.plan.configs[0].width,
            "fused_reads": anchor(reads), "fused_writes": anchor(writes),
            "fused_ops": anchor(n_ops), "blocks": len(launch.plan.configs)}


@contextmanager
def sandbox(executor: Any, run: StepRun) -> Iterator[StepRun]:
    """A ``StepRun`` of the executor on a fork of its (uncommitted) memory in which every live
    buffer has a second handle (burn's forked context: no launch may write one in place);
    everything restored after, so nothing of the stream's tensors is written."""
    rt = executor.rt
    saved = (executor.memory, executor.buffers, executor._kernels, executor._tiers,
             rt.dispatched, rt.observers)
    memory = run.memory.fork()
    for tensor_id, handle in list(memory.handles.items()):
        memory.handles[("trial", tensor_id)] = handle  # read by ``Memory.users`` only
    executor.memory, executor.buffers = memory, dict(executor.buffers)
    executor._kernels, executor._tiers = [], []
    try:
        yield StepRun(executor, run.device, run.context, run.ops)
    finally:
        (executor.memory, executor.buffers, executor._kernels, executor._tiers,
         rt.dispatched, rt.observers) = saved


def _fresh(rt: Any, nbytes: int) -> Any:
    return rt.wgpu_device.create_buffer(size=padded_size(nbytes), usage=rt._usage)


def fallback_candidate(executor: Any, run: StepRun, body: Callable[[StepRun], None]) -> Candidate:
    """The candidate that runs ``body`` (the walk's fallback of ``run``'s step) once in a
    ``sandbox``; its dispatches are what is timed."""
    def prepare() -> list:
        with sandbox(executor, run) as box:
            seen: list = []
            executor.rt.observers = [seen.append]
            body(box)
        return seen
    return Candidate(FALLBACK, prepare)


def kernel_candidate(executor: Any, name: str, ready: Any, launch: Launch) -> Candidate:
    """A one-kernel candidate (``ready``: ``kernel.source``, ``kernel.bindings``, ``words``,
    ``workgroups`` and, optionally, its workgroup ``size``) reading ``launch``'s input buffers
    and writing fresh ones (its outputs, and the inputs it writes in place)."""
    written = {out.input_pos for out in launch.plan.outputs if out.kind == "inplace"}

    def prepare() -> list:
        rt, buffers = executor.rt, []
        for side, k in ready.kernel.bindings:
            if side == "in":
                buffer = executor.buffer(launch.input_handles[k])
                buffers.append(_fresh(rt, buffer.size) if k in written else buffer)
            else:
                handle = launch.output_handles[k]
                elements = handle.offset + buffer_length(handle.shape, handle.strides)
                buffers.append(_fresh(rt, elements * STORAGE_NUMPY[handle.dtype].itemsize))
        return [rt.prepare(ready.kernel.source, [*buffers, rt.words(ready.words)],
                           ready.workgroups,
                           workgroup_size=getattr(ready, "size", rt.workgroup_size))]
    return Candidate(name, prepare)


def choose(runner: Any, run: StepRun, opt: Any, launch: Launch, scalars: list,
           fuser: str, ops: Any) -> ReduceLaunch | None:
    """The prepared launch of the winning routine, or ``None`` for the fallback.
    ``ReduceRefused`` when no fused routine can run the launch."""
    executor = runner.executor
    prepare = runner.prepared if fuser == "Reduce" else runner.prepared_broadcasted
    ready: dict[str, ReduceLaunch] = {}
    reasons = []
    routines = ("unit", "cube", "plane") if fuser == "Reduce" else ("unit", "cube")
    for routine in routines:
        try:
            ready[routine] = prepare(opt, launch, routine, scalars)
        except ReduceRefused as refused:
            reasons.append(f"{routine}: {refused}")
    if not ready:
        raise ReduceRefused("; ".join(reasons))
    default = "unit" if fuser == "Reduce" else FALLBACK
    body = (lambda sandbox: reduce_fallback(sandbox, opt, ops)) if fuser == "Reduce" \
        else (lambda sandbox: broadcasted_fallback(sandbox, opt))
    candidates = [fallback_candidate(executor, run, body)]
    candidates += [kernel_candidate(executor, f"fused_{name}", prepared, launch)
                   for name, prepared in ready.items()]
    names = {f"fused_{name}": name for name in ready}
    winner = TUNER.choose(executor.device, fuser, reduce_key(fuser, opt, launch, ops),
                          candidates,
                          default if default == FALLBACK else f"fused_{default}")
    if winner == FALLBACK:
        return None
    return ready[names.get(winner, next(iter(ready)))]
