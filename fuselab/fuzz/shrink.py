"""Shrinking: a failing stream reduced to a small one that fails the same way.

burn counterpart: none. The moves, tried greedily until none helps (or the time budget ends),
each kept only when the result is a valid stream (``with_liveness`` re-derives statuses and
drops; the eager oracle runs it) whose check fails with the same check, symptom and plan
variant (``Failure.same_way``):

* drop a run of ops (halves first, as delta debugging does), then single ops, each with
  every op that depends on it (the syncs forget its tensors);
* replace an op by a stream input holding its eager value (PyTorch minifier's move, on
  streams), which cuts the ops feeding it loose for the first move;
* drop a sync listing, a tensor from a sync, an explicit ``Drop``;
* shrink dtypes (f64/f16 → f32, 64/16-bit ints → i32, u8 → u32, everywhere at once);
* make an input contiguous; shrink its values (ones, or rounded to integers);
* shrink shapes: one dim size replaced by a smaller one everywhere it occurs (slices
  clipped), and a leading size-1 axis removed from every tensor.

``size`` counts data ops (drops and syncs aside), the figure the mutant table reports.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator

import numpy as np

from fuselab.fuzz.checks import Failure
from fuselab.workloads import with_tensors
from refimpl.data import logical_values
from refimpl.dtypes import DType
from refimpl.eager import EagerExecutor, init_targets, run_stream
from refimpl.ir import OperationIr, Sync, TensorIr
from refimpl.liveness import with_liveness
from refimpl.stream import InputSpec, Stream

__all__ = ["SHRINK_SECONDS", "shrink", "size"]

SHRINK_SECONDS = 30.0
_DTYPES = {DType.F64: DType.F32, DType.F16: DType.F32, DType.I64: DType.I32,
           DType.I16: DType.I32, DType.U8: DType.U32}

Predicate = Callable[[Stream], "Failure | None"]


def size(stream: Stream) -> int:
    """Data ops of ``stream`` (drops and syncs aside)."""
    return sum(1 for op in stream.ops if op.op.name != "Drop")


def _mentioned(items: tuple) -> set[int]:
    ids = set()
    for item in items:
        ids.update(item.tensors if isinstance(item, Sync) else
                   (t.id for t in item.nodes()))
    return ids


def _rebuilt(inputs: dict, items: list) -> Stream:
    """A valid stream from edited items: empty syncs removed, unused inputs removed,
    statuses and derived drops re-derived (``StreamError`` if it is not valid)."""
    items = [i for i in items if not (isinstance(i, Sync) and not i.tensors)]
    used = _mentioned(tuple(items))
    inputs = {tid: spec for tid, spec in inputs.items() if tid in used}
    return with_liveness(Stream(inputs, tuple(items)))


def _without_ops(stream: Stream, doomed: set[int]) -> Stream:
    """``stream`` less the ops at ``doomed`` and every op reading what they produce."""
    gone: set[int] = set()
    items = []
    for index, item in enumerate(stream.items):
        if isinstance(item, Sync):
            kept = tuple(t for t in item.tensors if t not in gone)
            if kept or not item.tensors:
                items.append(Sync(kept))
            continue
        if index in doomed or any(t.id in gone for t in item.inputs()):
            gone.update(t.id for t in item.outputs())
            continue
        items.append(item)
    return _rebuilt(dict(stream.inputs), items)


def _data(values: np.ndarray) -> tuple:
    """(data, random) for an input holding ``values``."""
    if values.size == 0:
        return None, 0
    return values.astype(float if values.dtype.kind == "f" else values.dtype).tolist(), None


def _eager_values(stream: Stream) -> dict[int, np.ndarray]:
    """Every op output's eager value, by id."""
    executor = EagerExecutor()
    executor.load_inputs(stream.inputs, init_targets(stream))
    values = {}
    for item in stream.items:
        executor.execute(item)
        if isinstance(item, OperationIr):
            for t in item.outputs():
                if t.id in executor.live_ids():
                    values[t.id] = executor.value(t.id)
    return values


def _as_input(stream: Stream, index: int, values: dict) -> Stream:
    out = stream.items[index].outputs()[0]
    data, seed = _data(values[out.id])
    inputs = dict(stream.inputs)
    inputs[out.id] = InputSpec(out.shape, out.dtype, None, data, seed)
    items = [item for k, item in enumerate(stream.items) if k != index]
    return _rebuilt(inputs, items)


def _retyped(stream: Stream, old: DType, new: DType) -> Stream:
    def change(t: TensorIr) -> TensorIr:
        return dataclasses.replace(t, dtype=new) if t.dtype is old else t

    inputs = {}
    for tid, spec in stream.inputs.items():
        if spec.dtype is old:
            data = None if spec.data is None else \
                logical_values(spec, tid).astype(new.numpy).astype(
                    float if new.is_float else new.numpy).tolist()
            spec = InputSpec(spec.shape, new, spec.strides, data, spec.random)
        inputs[tid] = spec
    return _rebuilt(inputs, list(with_tensors(stream.items, change)))


def _reshaped(stream: Stream, old: int, new: int, lead: bool = False) -> Stream:
    """Every dim ``old`` made ``new`` (``lead``: every tensor's leading axis removed)."""
    def dims(shape: tuple) -> tuple:
        return tuple(shape[1:]) if lead else tuple(new if d == old else d for d in shape)

    def change(t: TensorIr) -> TensorIr:
        return dataclasses.replace(t, shape=dims(t.shape))

    inputs = {tid: InputSpec(dims(spec.shape), spec.dtype, None, None, spec.random or tid)
              for tid, spec in stream.inputs.items()}
    items = []
    for item in with_tensors(stream.items, change):
        desc = getattr(item, "desc", None)
        if desc is not None and hasattr(desc, "ranges"):
            ranges = tuple(desc.ranges[1:]) if lead else tuple(
                (min(s, new - 1), min(e, new)) if e > new else (s, e) for s, e in desc.ranges)
            item = OperationIr(item.op, dataclasses.replace(desc, ranges=ranges))
        items.append(item)
    return _rebuilt(inputs, items)


def _candidates(stream: Stream) -> Iterator[Callable[[], Stream]]:
    """Smaller variants of ``stream``, the ones most likely to cut most first."""
    ops = [k for k, item in enumerate(stream.items) if isinstance(item, OperationIr)
           and item.op.name != "Drop"]
    chunk = len(ops) // 2
    while chunk >= 2:  # delta debugging: halves, quarters, ... of the ops first
        for start in range(0, len(ops), chunk):
            yield lambda part=frozenset(ops[start:start + chunk]): _without_ops(stream, part)
        chunk //= 2
    for k in reversed(ops):
        yield lambda k=k: _without_ops(stream, {k})
    values: dict = {}
    for k in ops:
        if len(stream.items[k].outputs()) == 1 and stream.items[k].inputs():
            def move(k=k):
                if not values:
                    values.update(_eager_values(stream))
                return _as_input(stream, k, values)
            yield move
    for k, item in enumerate(stream.items):
        if isinstance(item, Sync) and len(item.tensors) > 1:
            for t in item.tensors:
                yield lambda k=k, t=t: _rebuilt(dict(stream.inputs), [
                    Sync(tuple(x for x in i.tensors if x != t)) if j == k else i
                    for j, i in enumerate(stream.items)])
        elif isinstance(item, Sync) or item.op.name == "Drop":
            yield lambda k=k: _rebuilt(dict(stream.inputs), [
                i for j, i in enumerate(stream.items) if j != k])
    present = {t.dtype for op in stream.ops for t in op.nodes()} | \
        {s.dtype for s in stream.inputs.values()}
    for old, new in _DTYPES.items():
        if old in present:
            yield lambda old=old, new=new: _retyped(stream, old, new)
    for tid, spec in stream.inputs.items():
        if spec.strides is not None:
            yield lambda tid=tid, spec=spec: Stream(
                {**stream.inputs, tid: dataclasses.replace(spec, strides=None)}, stream.items)
    shapes = [s.shape for s in stream.inputs.values()] + \
        [t.shape for op in stream.ops for t in op.nodes()]
    if shapes and all(len(s) > 1 and s[0] == 1 for s in shapes):
        yield lambda: _reshaped(stream, 0, 0, lead=True)
    for old in sorted({d for s in shapes for d in s if d > 1}, reverse=True):
        for new in (1, 2):
            if new < old:
                yield lambda old=old, new=new: _reshaped(stream, old, new)
    for tid, spec in stream.inputs.items():
        if 0 in spec.shape or not (spec.dtype.is_float or spec.dtype.is_int):
            continue
        current = logical_values(spec, tid)
        for simple in (np.ones_like(current), np.round(current)):
            if not np.array_equal(simple, current, equal_nan=True):
                data, seed = _data(simple)
                yield lambda tid=tid, spec=spec, data=data, seed=seed: Stream(
                    {**stream.inputs, tid: InputSpec(spec.shape, spec.dtype, spec.strides,
                                                     data, seed)}, stream.items)


def _score(stream: Stream) -> tuple:
    """Smaller is simpler: data ops, then items, then elements, then non-random inputs."""
    elements = sum(int(np.prod(s.shape)) for s in stream.inputs.values())
    return (size(stream), len(stream.items), elements, len(stream.inputs))


def shrink(stream: Stream, failure: Failure, fails: Predicate,
           seconds: float = SHRINK_SECONDS) -> tuple[Stream, Failure, int]:
    """The smallest stream found failing like ``failure``, its failure and the checks run."""
    deadline = time.monotonic() + seconds
    best, best_failure, tries = stream, failure, 0
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for make in _candidates(best):
            if time.monotonic() >= deadline:
                break
            try:
                candidate = make()
                if _score(candidate) >= _score(best) and candidate.inputs == best.inputs:
                    continue
                run_stream(candidate)
            except Exception:  # noqa: BLE001 - an invalid candidate is skipped
                continue
            tries += 1
            got = fails(candidate)
            if failure.same_way(got) and _score(candidate) <= _score(best):
                best, best_failure, improved = candidate, got, True
                break
    return best, best_failure, tries
