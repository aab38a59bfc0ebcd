"""The seed page's experiments and burn's fusion tests as reusable streams.

burn counterpart: the experiments of the seed page (``seed/fused-kernels.zh.md``: the
``(a * b + c).exp()`` kernel and its vector widths, matmul and reduce fusion, the lazy
``y.sum() + 1``, the 65 + 35 split, the five independent expressions of ``bench expr``) and
``crates/burn-backend-tests/tests/fusion/*.rs`` (notes §10.1 items 1-8).

Every stream is recorded with the lazy frontend (``refimpl.frontend``) in a record-only
session, so statuses and drops are the ones reference counting gives. burn moves a tensor into
an op; the Python equivalent is ``t.move()`` (last use, ``ReadWrite``), and a tensor that burn
clones or keeps stays a plain Python variable (``ReadOnly``). Tensors burn materialises and
syncs before the inspected part are stream inputs. Each stream ends with the read the test
makes; sessions close while the variables are still alive, so no trailing ``Drop``.

``SEED_STREAMS`` maps a name to a function returning the ``Stream``; ``SEED_DESCRIPTIONS``
gives each a one-line description (``make demo`` and the golden corpus use both).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from refimpl.frontend import Session, Tensor, cat
from refimpl.stream import Stream

__all__ = [
    "SEED_STREAMS",
    "SEED_DESCRIPTIONS",
    "mul_add_exp",
    "matmul_add_exp",
    "mul_sum_dim_exp",
    "chain",
    "independent",
    "full_sum_plus_one",
    "sync_between",
    "elementwise_add_then_exp",
    "chained_elementwise",
    "elementwise_and_creation",
    "lone_view",
    "cat_then_mul_scalar",
    "cat_unaligned_last_dim",
    "cat_three_middle_dim",
    "cat_of_computed_input",
    "cat_int",
    "cat_bool_equal",
    "cat_transposed_input",
    "cat_output_broadcast",
    "int_bitwise_chain",
    "inplace_consuming_chain",
    "inplace_broadcast",
    "inplace_read_only",
    "inplace_reduce",
    "inplace_kv_cache",
]


def _abc(s: Session, shape: tuple[int, ...]) -> tuple[Tensor, Tensor, Tensor]:
    return s.random(shape, seed=0), s.random(shape, seed=1), s.random(shape, seed=2)


# --- the seed page --------------------------------------------------------------------------


def mul_add_exp(shape: tuple[int, ...] = (4, 6), a_moved: bool = True) -> Stream:
    """``(a * b + c).exp()``; ``a_moved``: its Mul use is ``ReadWrite`` (in-place into a)."""
    s = Session(executor=None)
    a, b, c = _abc(s, shape)
    y = ((a.move() if a_moved else a) * b + c).exp()
    s.sync(y)
    return s.close()


def matmul_add_exp(n: int = 64) -> Stream:
    """``(a.matmul(b) + c).exp()`` on ``[n, n]``, every input still held (mm mode)."""
    s = Session(executor=None)
    a, b, c = _abc(s, (n, n))
    d = (a.matmul(b) + c).exp()
    s.sync(d)
    return s.close()


def mul_sum_dim_exp(n: int = 64) -> Stream:
    """``(a * b).sum_dim(1).exp()`` on ``[n, n]``, a and b moved (mm mode)."""
    s = Session(executor=None)
    a, b = s.random((n, n), seed=0), s.random((n, n), seed=1)
    e = (a.move() * b.move()).sum_dim(1).exp()
    s.sync(e)
    return s.close()


# The chain's steps: single-FuseOp element-wise ops that keep values bounded. A parameter
# holds its tensor, so each step moves it on (``x.move()``) to consume it.
_CHAIN_STEPS: tuple[Callable[[Tensor], Tensor], ...] = (
    lambda x: x.move() + 0.5,
    lambda x: x.move() * 0.75,
    lambda x: x.move().tanh(),
    lambda x: x.move() - 0.25,
)


def chain(n: int = 100, shape: tuple[int, ...] = (8, 8)) -> Stream:
    """``x = x.op()`` n times, each consuming the previous result, then a read (65 + 35)."""
    s = Session(executor=None)
    x = s.random(shape, seed=0)
    for k in range(n):
        x = _CHAIN_STEPS[k % len(_CHAIN_STEPS)](x)
    s.sync(x)
    return s.close()


def independent(k: int = 5, shape: tuple[int, ...] = (8, 8)) -> Stream:
    """k independent ``(a_i * b_i + c_i).exp()`` kept, then one sync (one k-output kernel)."""
    s = Session(executor=None)
    inputs = [(s.random(shape), s.random(shape), s.random(shape)) for _ in range(k)]
    outputs = [(a * b + c).exp() for a, b, c in inputs]
    s.sync(*outputs)
    return s.close()


def full_sum_plus_one(shape: tuple[int, ...] = (4, 4)) -> Stream:
    """``y.sum() + 1``: a full Sum runs alone, and so does the AddScalar after it (lazy mode)."""
    s = Session(executor=None)
    y = s.random(shape, seed=0)
    z = y.sum() + 1.0
    s.sync(z)
    return s.close()


def sync_between() -> Stream:
    """``a + b`` on ones, a device sync, then ``.exp()``: add and exp never share a kernel."""
    s = Session(executor=None)
    a, b = s.ones((4, 4)), s.ones((4, 4))
    intermediate = a.move() + b.move()
    s.sync()
    out = intermediate.move().exp()
    s.sync(out)
    return s.close()


# --- burn-backend-tests/tests/fusion (notes §10.1) ------------------------------------------


def elementwise_add_then_exp() -> Stream:
    """burn 1: ``(a + b).exp()`` on materialised ones [4, 4]: one ElementWise block."""
    s = Session(executor=None)
    a, b = s.tensor([[1.0] * 4] * 4), s.tensor([[1.0] * 4] * 4)
    out = (a.move() + b.move()).exp()
    s.sync(out)
    return s.close()


def chained_elementwise() -> Stream:
    """burn 3: ``((a + b) * c).exp()`` on ones [8, 8]: one ElementWise block of 3 ops."""
    s = Session(executor=None)
    a, b, c = (s.tensor([[1.0] * 8] * 8) for _ in range(3))
    out = ((a.move() + b.move()) * c.move()).exp()
    s.sync(out)
    return s.close()


def elementwise_and_creation(repetitions: int = 4) -> Stream:
    """burn 4: ``new = ones * i; tmp = tmp * original + new`` x4: 16 ops (+ drops), 1 block."""
    s = Session(executor=None)
    original = s.tensor([[1.0] * 8] * 8)
    tmp = original.clone()
    for i in range(repetitions):
        new = s.ones((8, 8)) * float(i)
        tmp = tmp * original + new.move()
    s.sync(tmp)
    return s.close()


def lone_view() -> Stream:
    """burn 5: ``(a.swap_dims(0, 1) + b).exp()``, a [4, 8], b [8, 4]: the view runs unfused."""
    s = Session(executor=None)
    a, b = s.random((4, 8), seed=0), s.random((8, 4), seed=1)
    out = (a.move().swap_dims(0, 1) + b.move()).exp()
    s.sync(out)
    return s.close()


def _cat_times(rows: list, dim: int, factor: float) -> Stream:
    s = Session(executor=None)
    parts = [s.tensor(r) for r in rows]
    out = cat([p.move() for p in parts], dim) * factor
    s.sync(out)
    return s.close()


def cat_then_mul_scalar() -> Stream:
    """burn 6: ``cat([a, b], 0) * 2`` on [2, 4] aranges: Cat and MulScalar in one block."""
    return _cat_times([[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]],
                       [[8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]], 0, 2.0)


def cat_unaligned_last_dim() -> Stream:
    """burn 6: ``cat([a[2,3], b[2,5]], 1) + 1``: segments unaligned on the vector axis."""
    s = Session(executor=None)
    a = s.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = s.tensor([[10.0, 20.0, 30.0, 40.0, 50.0], [60.0, 70.0, 80.0, 90.0, 100.0]])
    out = cat([a.move(), b.move()], 1) + 1.0
    s.sync(out)
    return s.close()


def cat_three_middle_dim() -> Stream:
    """burn 6: ``cat([a, b, c], 1) * 2`` of rank-3 tensors (a, c [2,1,2], b [2,2,2])."""
    return _cat_times([[[[1.0, 2.0]], [[3.0, 4.0]]],
                       [[[5.0, 6.0], [7.0, 8.0]], [[9.0, 10.0], [11.0, 12.0]]],
                       [[[13.0, 14.0]], [[15.0, 16.0]]]], 1, 2.0)


def cat_of_computed_input() -> Stream:
    """burn 6: ``cat([a * 10, b], 0)``: a computed cat input forces a split."""
    s = Session(executor=None)
    a, b = s.tensor([[1.0, 2.0], [3.0, 4.0]]), s.tensor([[5.0, 6.0], [7.0, 8.0]])
    out = cat([a.move() * 10.0, b.move()], 0)
    s.sync(out)
    return s.close()


def cat_int() -> Stream:
    """burn 6: int ``cat([1, 2, 3], [4, 5]) + 10`` (BaseInt.Cat) = [11..15]."""
    s = Session(executor=None)
    a, b = s.tensor([1, 2, 3]), s.tensor([4, 5])
    out = cat([a.move(), b.move()], 0) + 10
    s.sync(out)
    return s.close()


def cat_bool_equal() -> Stream:
    """burn 6: bool ``cat([T,F,T], [F,T]).equal([T,T,F,F,T])`` = [T,F,F,T,T]."""
    s = Session(executor=None)
    a, b = s.tensor([True, False, True]), s.tensor([False, True])
    c = s.tensor([True, True, False, False, True])
    out = cat([a.move(), b.move()], 0).equal(c.move())
    s.sync(out)
    return s.close()


def cat_transposed_input() -> Stream:
    """burn 6: cat of a transposed [3, 2] input (strides [1, 3]) with b [3, 2] on dim 1, x2."""
    s = Session(executor=None)
    a = s.tensor([[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]], strides=(1, 3))
    b = s.tensor([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]])
    out = cat([a.move(), b.move()], 1) * 2.0
    s.sync(out)
    return s.close()


def cat_output_broadcast() -> Stream:
    """burn 6: ``cat([a[1,3], b[1,5]], 1) + c[2,8]``: the cat output is broadcast."""
    s = Session(executor=None)
    a, b = s.tensor([[1.0, 2.0, 3.0]]), s.tensor([[10.0, 20.0, 30.0, 40.0, 50.0]])
    c = s.tensor([[100.0] * 8, [200.0] * 8])
    out = cat([a.move(), b.move()], 1) + c.move()
    s.sync(out)
    return s.close()


def int_bitwise_chain() -> Stream:
    """burn 7: ``(((l ^ r) & 7) >> 1 | ~l).float() * 0.5`` = [-6.5, -3.0, -0.5, -6.5]."""
    s = Session(executor=None)
    lhs, rhs = s.tensor([13, 7, 3, 12]), s.tensor([11, 3, 5, 9])
    out = ((((lhs ^ rhs.move()) & 7) >> 1) | ~lhs.move()).float() * 0.5
    s.sync(out)
    return s.close()


def inplace_consuming_chain() -> Stream:
    """burn 8: ``t = (t + 1) * 2`` x4 consuming t, a read after each: [[46, 62], [78, 94]]."""
    s = Session(executor=None)
    t = s.tensor([[1.0, 2.0], [3.0, 4.0]])
    for _ in range(4):
        t = (t.move() + 1.0) * 2.0
        s.sync(t)
    return s.close()


def inplace_broadcast() -> Stream:
    """burn 8: ``(t[2,4] + bias[1,4]) * 2`` consuming t: written in place into t."""
    s = Session(executor=None)
    bias = s.tensor([[10.0, 20.0, 30.0, 40.0]])
    t = s.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    out = (t.move() + bias.move()) * 2.0
    s.sync(out)
    return s.close()


def inplace_read_only() -> Stream:
    """burn 8: ``(t + 1) * 2`` with t still held: t must stay [[1, 2], [3, 4]]."""
    s = Session(executor=None)
    t = s.tensor([[1.0, 2.0], [3.0, 4.0]])
    out = (t + 1.0) * 2.0
    s.sync(out)
    s.sync(t)
    return s.close()


def inplace_reduce() -> Stream:
    """burn 8: ``out = (t + 1) * 2`` consuming t; ``out.sum_dim(1) * 3 + 1`` = [[85], [181]]."""
    s = Session(executor=None)
    t = s.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    out = (t.move() + 1.0) * 2.0
    res = out.sum_dim(1) * 3.0 + 1.0
    s.sync(out, res)
    return s.close()


def inplace_kv_cache(steps: int = 3) -> Stream:
    """burn 8: ``acc = (acc + full(step)) + 1`` for steps 1..3 on [32], a read after each: 9."""
    s = Session(executor=None)
    acc = s.tensor([0.0] * 32)
    for step in range(1, steps + 1):
        acc = (acc.move() + s.full((32,), float(step))) + 1.0
        s.sync(acc)
    return s.close()


# --- registry -------------------------------------------------------------------------------
# (name, builder, one-line description): the single table both dicts come from.
_SEEDS: tuple[tuple[str, Callable[[], Stream], str], ...] = (
    ("mul_add_exp", mul_add_exp,
     "(a*b + c).exp() on [4, 6], a moved: width 2, written in place into a"),
    ("mul_add_exp_held", functools.partial(mul_add_exp, a_moved=False),
     "(a*b + c).exp() on [4, 6], a held (ReadOnly): no in-place output"),
    ("mul_add_exp_2x2", functools.partial(mul_add_exp, (2, 2)),
     "(a*b + c).exp() on [2, 2]: the same kernel config as [4, 6]"),
    ("mul_add_exp_4x3", functools.partial(mul_add_exp, (4, 3)),
     "(a*b + c).exp() on [4, 3]: vector width 1"),
    ("mul_add_exp_64x64", functools.partial(mul_add_exp, (64, 64)),
     "(a*b + c).exp() on [64, 64]: vector width 4"),
    ("matmul_add_exp", matmul_add_exp,
     "(a.matmul(b) + c).exp() on [64, 64]: matmul with a fused epilogue"),
    ("mul_sum_dim_exp", mul_sum_dim_exp,
     "(a*b).sum_dim(1).exp() on [64, 64]: reduce fused on read and on write"),
    ("chain", chain, "a 100-op element-wise chain then a read: kernels of 65 + 35 ops"),
    ("independent", independent,
     "five independent (a*b + c).exp() before one sync: one 5-output kernel"),
    ("full_sum_plus_one", full_sum_plus_one,
     "y.sum() + 1: the full Sum is not fused, nor the AddScalar after it"),
    ("sync_between", sync_between, "a + b, device sync, .exp(): two separate kernels"),
    ("elementwise_add_then_exp", elementwise_add_then_exp,
     "burn 1: (a + b).exp() on ones [4, 4]: one ElementWise block [Add, Exp]"),
    ("chained_elementwise", chained_elementwise,
     "burn 3: ((a + b) * c).exp() on ones [8, 8]: one block of 3 ops"),
    ("elementwise_and_creation", elementwise_and_creation,
     "burn 4: ones * i folded into tmp * original + new, x4: one block of 16 ops"),
    ("lone_view", lone_view, "burn 5: (a.swap_dims(0, 1) + b).exp(): the view is not fused"),
    ("cat_then_mul_scalar", cat_then_mul_scalar, "burn 6: cat([a, b], 0) * 2: one block"),
    ("cat_unaligned_last_dim", cat_unaligned_last_dim,
     "burn 6: cat on the last dim with unaligned segments, + 1"),
    ("cat_three_middle_dim", cat_three_middle_dim, "burn 6: 3-way rank-3 cat on dim 1, * 2"),
    ("cat_of_computed_input", cat_of_computed_input,
     "burn 6: cat([a * 10, b], 0): a computed input splits the block"),
    ("cat_int", cat_int, "burn 6: int cat + 10 (BaseInt.Cat)"),
    ("cat_bool_equal", cat_bool_equal, "burn 6: bool cat then equal (BaseBool.Cat)"),
    ("cat_transposed_input", cat_transposed_input,
     "burn 6: cat of a transposed (strided) input on dim 1, * 2"),
    ("cat_output_broadcast", cat_output_broadcast,
     "burn 6: cat([1,3], [1,5]) + c[2,8]: the cat output is broadcast"),
    ("int_bitwise_chain", int_bitwise_chain,
     "burn 7: int xor/and/shift/not/or chain, .float() * 0.5: one block"),
    ("inplace_consuming_chain", inplace_consuming_chain,
     "burn 8: t = (t + 1) * 2 consuming t, x4 with reads: in place every time"),
    ("inplace_broadcast", inplace_broadcast,
     "burn 8: (t + bias[1,4]) * 2 consuming t: in place despite the broadcast input"),
    ("inplace_read_only", inplace_read_only,
     "burn 8: (t + 1) * 2 with t held: t is never written"),
    ("inplace_reduce", inplace_reduce,
     "burn 8: consumed elementwise input feeding a fused sum_dim"),
    ("inplace_kv_cache", inplace_kv_cache,
     "burn 8: acc = (acc + full(step)) + 1, x3 with reads: in place with a cached plan"),
)

SEED_STREAMS: dict[str, Callable[[], Stream]] = {name: build for name, build, _ in _SEEDS}
SEED_DESCRIPTIONS: dict[str, str] = {name: text for name, _, text in _SEEDS}
