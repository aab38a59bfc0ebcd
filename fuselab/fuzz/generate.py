"""Streams for the fuzzer, drawn reproducibly from a seed, with inputs repaired so that values
stay finite.

burn counterpart: none. The streams come from ``refimpl.strategies`` (every fusable op kind,
views, reductions, matmuls, cats, gathers, drops, syncs, strided inputs and the templates per
fuser rule, plus float → int conversions, ``CONVERSION_GENERATORS``), drawn without
hypothesis's test runner: one ``ConjectureData`` fed by a ``random.Random`` seeded with
``"<seed>:<index>"`` (a string seed hashes the same way in every process), so stream
``index`` of a campaign is a pure function of ``--seed``.

Input values follow NNSmith's repair: the eager oracle runs the stream op by op; the first op
that turns finite operands into a NaN or an infinity gets the stream inputs it depends on
re-drawn from that op's input domain (``DOMAINS``), a few rounds at most. One stream in
``NONFINITE_SHARE`` keeps non-finite values on purpose instead (NaN and ±inf written into its
float inputs), so that the backends' handling of them is checked too. One stream in
``LONG_CHAIN_SHARE`` is a long element-wise chain, whose blocks close on ``max_ops``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from hypothesis.control import BuildContext
from hypothesis.errors import HypothesisException
from hypothesis.internal.conjecture.data import ConjectureData, StopTest

from refimpl.data import logical_values
from refimpl.dtypes import DType
from refimpl.eager import EagerExecutor, init_targets
from refimpl.errors import FuselabError
from refimpl.ir import OperationIr, Sync
from refimpl.strategies import CONVERSION_GENERATORS, StreamBuilder, streams
from refimpl.stream import InputSpec, Stream

__all__ = [
    "DOMAINS",
    "NONFINITE_SHARE",
    "REPAIR_ROUNDS",
    "Drawn",
    "draw_stream",
    "first_nonfinite_op",
    "long_chain",
    "repair",
    "with_nonfinite",
]

NONFINITE_SHARE = 10  # one stream in 10 keeps NaN/inf inputs
LONG_CHAIN_SHARE = 200  # one stream in 200 is a long element-wise chain (``long_chain``)
CHAIN_OPS = (62, 70)  # its length: across the 64/65-op limit of a fused block
_CHAIN = ("Float.Tanh", "Float.Sin", "NumericFloat.Abs", "NumericFloat.MulScalar",
          "NumericFloat.AddScalar", "Float.Cos")
REPAIR_ROUNDS = 3
MAX_OPS = 12

# Input domains (low, high) per op variant; an op absent here draws from ``DEFAULT_DOMAIN``.
POSITIVE = (0.25, 2.0)
DEFAULT_DOMAIN = (-1.0, 1.0)
DOMAINS = {
    "Log": POSITIVE, "Log1p": POSITIVE, "Sqrt": POSITIVE, "Powf": POSITIVE,
    "PowfScalar": POSITIVE, "Recip": POSITIVE, "Div": POSITIVE, "DivScalar": POSITIVE,
    "Rem": POSITIVE, "RemScalar": POSITIVE, "Tan": (-1.0, 1.0), "Exp": (-2.0, 2.0),
    "Matmul": (-1.0, 1.0),
}


@dataclass(frozen=True, slots=True)
class Drawn:
    """One generated stream: where it came from and what its inputs hold."""

    index: int
    stream: Stream
    values: str  # "finite", "repaired", "kept non-finite", "non-finite (repair failed)"


def _random(seed: int, index: int) -> random.Random:
    return random.Random(f"{seed}:{index}")


def long_chain(rng: np.random.Generator) -> Stream:
    """One element-wise chain of ``CHAIN_OPS`` ops on one input, so that blocks close on
    ``max_ops`` (the strategies' streams are too short to reach it)."""
    builder = StreamBuilder()
    shape = tuple(int(d) for d in rng.choice((1, 2, 3, 4, 8), size=int(rng.integers(1, 3))))
    tid = builder.add_input(shape, DType.F32, seed=int(rng.integers(2**16)))
    for _ in range(int(rng.integers(*CHAIN_OPS))):
        name = _CHAIN[int(rng.integers(len(_CHAIN)))]
        if name.endswith("Scalar"):
            tid = builder.op(name, shape, DType.F32, lhs=tid,
                             rhs=float(rng.choice((0.5, 0.25, -1.5))))
        else:
            tid = builder.op(name, shape, DType.F32, input=tid)
    builder.sync((tid,))
    return builder.build()


def draw_stream(seed: int, index: int, max_ops: int = MAX_OPS,
                long_chains: int = LONG_CHAIN_SHARE) -> Drawn:
    """Stream ``index`` of the campaign seeded ``seed`` (repaired, or kept non-finite); one
    in ``long_chains`` is a long chain (0: none)."""
    if long_chains and np.random.default_rng([seed, index, 2]).integers(long_chains) == 0:
        return Drawn(index, long_chain(np.random.default_rng([seed, index, 3])), "finite")
    strategy = streams(max_ops=max_ops, extra=CONVERSION_GENERATORS)
    for attempt in range(100):  # a draw that overruns its choice budget is drawn again
        data = ConjectureData(random=_random(seed, index * 100 + attempt))
        try:
            with BuildContext(data, wrapped_test=None):
                stream = data.draw(strategy)
            break
        except (StopTest, HypothesisException):
            continue
    else:  # pragma: no cover - the strategies do not overrun 100 times in a row
        raise RuntimeError(f"no stream could be drawn for index {index}")
    rng = np.random.default_rng([seed, index])
    if rng.integers(NONFINITE_SHARE) == 0:
        return Drawn(index, with_nonfinite(stream, rng), "kept non-finite")
    repaired, rounds = repair(stream, rng)
    if first_nonfinite_op(repaired) is not None:
        return Drawn(index, repaired, "non-finite (repair failed)")
    return Drawn(index, repaired, "repaired" if rounds else "finite")


def with_nonfinite(stream: Stream, rng: np.random.Generator) -> Stream:
    """Random float inputs rewritten as data, about one element in five NaN or ±inf."""
    inputs = {}
    for tid, spec in stream.inputs.items():
        if spec.dtype.is_float and spec.random is not None and 0 not in spec.shape:
            values = logical_values(spec, tid).astype(np.float64)
            mask = rng.random(values.shape) < 0.2
            values[mask] = rng.choice([np.nan, np.inf, -np.inf], size=int(mask.sum()))
            spec = InputSpec(spec.shape, spec.dtype, spec.strides, values.tolist(), None)
        inputs[tid] = spec
    return Stream(inputs, stream.items)


def _nonfinite(values: np.ndarray) -> bool:
    return values.dtype.kind == "f" and values.size > 0 and not bool(np.isfinite(values).all())


def first_nonfinite_op(stream: Stream) -> int | None:
    """Index of the first op whose operands are finite and whose output is not (eager)."""
    executor = EagerExecutor()
    executor.load_inputs(stream.inputs, init_targets(stream))
    try:
        for index, item in enumerate(stream.items):
            reads = [] if isinstance(item, Sync) else [
                executor.value(t.id) for t in item.inputs()]
            executor.execute(item)
            if isinstance(item, Sync) or item.op.name == "Drop":
                continue
            if any(_nonfinite(r) for r in reads):
                continue
            if any(_nonfinite(executor.value(t.id)) for t in item.outputs()
                   if t.id in executor.live_ids()):
                return index
    except FuselabError:
        return None
    return None


def _ancestor_inputs(stream: Stream, index: int) -> set[int]:
    """The stream inputs op ``index`` depends on (through the ops before it)."""
    producers = {}
    for pos, item in enumerate(stream.items[:index]):
        if isinstance(item, OperationIr):
            for out in item.outputs():
                producers[out.id] = pos
    found, todo = set(), [t.id for t in stream.items[index].inputs()]
    while todo:
        tid = todo.pop()
        if tid in stream.inputs:
            found.add(tid)
        elif tid in producers:
            todo.extend(t.id for t in stream.items[producers[tid]].inputs())
    return found


def repair(stream: Stream, rng: np.random.Generator) -> tuple[Stream, int]:
    """NNSmith's repair: re-draw the float inputs feeding the first op that makes a non-finite
    value from finite ones, from that op's domain; the stream and the rounds it took."""
    for rounds in range(REPAIR_ROUNDS + 1):
        culprit = first_nonfinite_op(stream)
        if culprit is None or rounds == REPAIR_ROUNDS:
            return stream, rounds
        op = stream.items[culprit]
        low, high = DOMAINS.get(op.op.name.split(".")[-1], DEFAULT_DOMAIN)
        inputs = dict(stream.inputs)
        touched = False
        for tid in _ancestor_inputs(stream, culprit):
            spec = inputs[tid]
            if not spec.dtype.is_float or 0 in spec.shape:
                continue
            values = rng.uniform(low, high, size=spec.shape)
            inputs[tid] = InputSpec(spec.shape, spec.dtype, spec.strides,
                                    values.astype(spec.dtype.numpy).astype(float).tolist(), None)
            touched = True
        if not touched:
            return stream, rounds
        stream = Stream(inputs, stream.items)
    return stream, REPAIR_ROUNDS
