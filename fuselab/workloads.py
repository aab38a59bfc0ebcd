"""The planner benchmark's workloads: streams of realistic shape, and their next iteration.

burn counterpart: none. The streams are recorded with ``refimpl.frontend``, so statuses and
drops are what a lazy runtime produces. Each workload records an iteration at a time
(``ITERATIONS``) until the stream holds the requested number of ops, and ends at the sync after:
a stream is longer than asked (``build("elementwise", 200)`` gives 251 ops).

* ``elementwise`` — three independent expressions at a time, each a chain of element-wise
  steps (GELU polynomials, softplus-like exp/log, clamp/abs, sqrt/recip, comparison masks) on
  one of four shapes, all three read back (one sync) after two to five steps;
* ``transformer`` — transformer blocks on a (16, 64) activation: layer norm and softmax
  (``ReduceBroadcasted``), matmuls with element-wise epilogues, a GELU MLP, reshapes and
  swap_dims between heads, residuals; a sync every four blocks (a repeating iteration);
* ``mixed`` — two to four independent expressions on random shapes, each stepped three to
  eight times by a random choice of element-wise steps, per-axis reductions broadcast back,
  max-reductions, swap_dims round trips, small matmuls and full reductions dropped unread;
  all read back at one sync (fewer repeats: more searches).

``fuselab.bench`` times the planners on them; the planner tests, ``tools/pgo_train.py`` and the
scripts of ``bench/`` use them as realistic streams.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence

from refimpl.frontend import Session
from refimpl.ir import OperationIr, Sync, TensorIr
from refimpl.stream import Stream

__all__ = ["WORKLOADS", "ITERATIONS", "build", "shifted", "with_tensors"]

def _gelu(x):
    return x * 0.5 * (((x * x * x) * 0.044715 + x) * 0.7978845608).tanh() + x * 0.5


def _elementwise_step(x, k: int):
    kinds = (
        lambda t: _gelu(t),
        lambda t: (t.exp() + 1.0).log() * t,
        lambda t: t.clamp(-1.0, 1.0) * 2.0 - t.abs(),
        lambda t: (t * t + 0.5).sqrt().recip() * t,
        lambda t: t.mask_where(t > 0.0, t * 0.1),
    )
    return kinds[k % len(kinds)](x)


def _elementwise(session: Session, budget: int, rng: random.Random) -> None:
    shapes = [(64, 128), (32, 32), (128, 64, 4), (256,)]
    while session.recorded < budget:
        exprs = [session.random(shapes[(i + rng.randrange(4)) % 4], seed=i) for i in range(3)]
        for step in range(rng.randrange(2, 6)):
            exprs = [_elementwise_step(x, step + i) for i, x in enumerate(exprs)]
        session.sync(*exprs)


def _layer_norm(x, gain):
    centered = x - x.mean_dim(1)
    return centered / ((centered * centered).mean_dim(1) + 1e-5).sqrt() * gain


def _softmax(x):
    e = (x - x.max_dim(1)).exp()
    return e / e.sum_dim(1)


def _transformer_block(x, w_qkv, w_out, w_up, w_down, gain, heads: int):
    rows, width = x.shape
    h = _layer_norm(x, gain)
    qkv = h @ w_qkv
    scores = _softmax(qkv * (1.0 / (width ** 0.5)))
    mixed = scores.reshape([rows, heads, width // heads]).swap_dims(0, 1)
    mixed = mixed.swap_dims(0, 1).reshape([rows, width])
    x = x + mixed @ w_out
    up = _gelu(_layer_norm(x, gain) @ w_up)
    return x + up @ w_down


def _transformer(session: Session, budget: int, rng: random.Random) -> None:
    rows, width = 16, 64
    x = session.random((rows, width), seed=1)
    weights = [session.random(shape, seed=2 + i) for i, shape in enumerate(
        [(width, width), (width, width), (width, 4 * width), (4 * width, width)])]
    gain = session.random((1, width), seed=9)
    blocks = 0
    while session.recorded < budget:
        x = _transformer_block(x, *weights, gain, heads=4)
        blocks += 1
        if blocks % 4 == 0:
            session.sync(x)
    session.sync(x)


def _mixed(session: Session, budget: int, rng: random.Random) -> None:
    while session.recorded < budget:
        n = rng.randrange(2, 5)
        xs = [session.random((rng.choice([8, 16, 32]), rng.choice([16, 24, 48])), seed=i)
              for i in range(n)]
        for _ in range(rng.randrange(3, 9)):
            i = rng.randrange(n)
            choice = rng.randrange(8)
            x = xs[i]
            if choice <= 2:
                x = _elementwise_step(x, rng.randrange(5))
            elif choice == 3:
                x = x - x.sum_dim(rng.randrange(2))
            elif choice == 4:
                x = x * x.max_dim(1).exp()
            elif choice == 5:
                x = x.swap_dims(0, 1).exp().swap_dims(0, 1)
            elif choice == 6:
                x = (x @ x.swap_dims(0, 1)).tanh().sum_dim(1) + x
            else:
                total = x.sum()
                x = x * 2.0 + 1.0
                del total
            xs[i] = x
        session.sync(*xs)


WORKLOADS: dict[str, Callable[[Session, int, random.Random], None]] = {
    "elementwise": _elementwise,
    "transformer": _transformer,
    "mixed": _mixed,
}

# What each workload records at a time: it records whole iterations until the stream holds
# the size asked for, so the stream ends past it (at the iteration's sync).
ITERATIONS = {
    "elementwise": "three expressions read back at one sync",
    "transformer": "transformer blocks, a sync every four and one at the end",
    "mixed": "two to four expressions read back at one sync",
}


def build(workload: str, num_ops: int, seed: int = 0) -> Stream:
    """A stream of at least ``num_ops`` items: whole iterations of the workload
    (``ITERATIONS``), ending at the first sync once ``num_ops`` is reached."""
    session = Session(executor=None)
    WORKLOADS[workload](session, num_ops, random.Random(seed))
    return session.close()


def with_tensors(items: Sequence[object], change: Callable[[TensorIr], TensorIr]
                 ) -> tuple[object, ...]:
    """``items`` (ops and syncs) with every op tensor, a field holding a ``TensorIr`` or a
    tuple of them, replaced by ``change(tensor)``: new ``OperationIr`` objects, syncs kept."""

    def field(value):
        if isinstance(value, TensorIr):
            return change(value)
        if isinstance(value, tuple) and value and isinstance(value[0], TensorIr):
            return tuple(change(t) for t in value)
        return value

    found = []
    for item in items:
        if isinstance(item, Sync):
            found.append(item)
            continue
        desc = item.desc
        values = {f.name: field(getattr(desc, f.name)) for f in dataclasses.fields(desc)}
        found.append(OperationIr(item.op, type(desc)(**values)))
    return tuple(found)


def shifted(stream: Stream, offset: int) -> Stream:
    """The next iteration of ``stream``: the same ops with every tensor id moved by
    ``offset`` (new ``TensorIr``/``OperationIr`` objects, equal relative form)."""
    items = with_tensors(stream.items, lambda t: dataclasses.replace(t, id=t.id + offset))
    items = tuple(Sync(tuple(t + offset for t in item.tensors)) if isinstance(item, Sync)
                  else item for item in items)
    return Stream({tid + offset: spec for tid, spec in stream.inputs.items()}, items)
