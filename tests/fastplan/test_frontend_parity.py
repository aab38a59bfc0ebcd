"""Parity of fastplan's compiled recorder (``fastplan.frontend.Session``) with refimpl's.

The twin must record, for every program, refimpl's stream: the same items (``==``), the same
canonical bytes, the same statuses and drops; and raise, for every bad call, refimpl's error
(class, op index, field, message) with the same stream left behind. Checked on the planner
benchmark's workloads and the front door's ``chains``, on hypothesis programs of random
calls (named and temporary operands, clones, moves, ``cat``, bad calls among them), and by
every entry point of the Tensor API (named and temporary subjects) and the calls refimpl's
frontend tests show refused.
Without a compiled fastplan the twin is refimpl's ``Session`` and the properties hold
trivially.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fastplan
import fastplan.frontend
import refimpl.frontend as ref_frontend
from fuselab.front_door import chains
from fuselab.workloads import WORKLOADS
from refimpl import errors
from refimpl.frontend import FrontendError, cat
from refimpl.stream import stream_to_json
from tests.refimpl.helpers import BAD_CALLS, ENTRY_POINTS, entry_point_others

TWIN = fastplan.frontend.Session
SIDES = (ref_frontend.Session, TWIN)


def test_frontend_twin_is_compiled_when_fastplan_is():
    assert (TWIN is not ref_frontend.Session) == fastplan.COMPILED
    assert fastplan.frontend.frontend_module("session").Session is TWIN
    if fastplan.COMPILED:
        assert set(fastplan.frontend.refcount_calibration()) == set(
            ref_frontend.refcount_calibration())


def _record(session_cls, program, *args):
    session = session_cls(executor=None)
    program(session, *args)
    return session.close()


@pytest.mark.parametrize("name", [*WORKLOADS, "chains"])
def test_frontend_twin_records_the_workloads_byte_for_byte(name):
    program = chains if name == "chains" else WORKLOADS[name]
    ref, fast = (_record(cls, program, 1500, random.Random(3)) for cls in SIDES)
    assert fast == ref
    assert stream_to_json(fast) == stream_to_json(ref)


# --- random programs ------------------------------------------------------------------------
# A program is a list of steps on a pool of named tensors; each step may read named tensors or
# temporaries, clone, move, drop a name, or make a call that is wrong on purpose.

_UNARY = ("exp", "tanh", "abs", "neg", "sqrt", "recip", "sum_dim", "mean", "int", "argmax")
_BINARY = ("add", "sub", "mul", "div", "lt", "eq", "matmul", "pow", "and", "mask_where")
_SCALAR = (1.0, 2, -3, 0.5, True, 300, 1e40)


def _unary(x, name):
    calls = {"exp": lambda: x.exp(), "tanh": lambda: x.tanh(), "abs": lambda: abs(x),
             "neg": lambda: -x, "sqrt": lambda: x.sqrt(), "recip": lambda: x.recip(),
             "sum_dim": lambda: x.sum_dim(-1), "mean": lambda: x.mean(),
             "int": lambda: x.int(), "argmax": lambda: x.argmax(0)}
    return calls[name]()


def _binary(x, y, name):
    calls = {"add": lambda: x + y, "sub": lambda: x - y, "mul": lambda: x * y,
             "div": lambda: x / y, "lt": lambda: x < y, "eq": lambda: x.equal(y),
             "matmul": lambda: x @ y, "pow": lambda: x ** y, "and": lambda: x & y,
             "mask_where": lambda: x.mask_where(x > 0.0, y)}
    return calls[name]()


_STEP = st.tuples(
    st.sampled_from(["unary", "binary", "scalar", "rscalar", "temporary", "clone", "move",
                     "forget", "cat", "sync", "reshape", "swap"]),
    st.integers(0, 5), st.integers(0, 5), st.sampled_from(_UNARY), st.sampled_from(_BINARY),
    st.sampled_from(_SCALAR))


def _run(session_cls, shapes, steps) -> tuple:
    """Run the program; the stream's text and every error raised (class, index, field,
    message)."""
    s = session_cls(executor=None)
    pool = [s.random(shape, dtype, seed=k) for k, (shape, dtype) in enumerate(shapes)]
    raised = []
    for kind, a, b, un, bi, value in steps:
        x, y = pool[a % len(pool)], pool[b % len(pool)]
        try:
            if kind == "unary":
                pool[a % len(pool)] = _unary(x, un)
            elif kind == "binary":
                pool.append(_binary(x, y, bi))
            elif kind == "scalar":
                pool[a % len(pool)] = x * value
            elif kind == "rscalar":
                pool.append(value - x)
            elif kind == "temporary":
                pool.append(_binary(_unary(x.clone(), un), y, bi))
            elif kind == "clone":
                pool.append(x.clone())
            elif kind == "move":
                pool[a % len(pool)] = x.move() + 1
            elif kind == "forget" and len(pool) > 1:
                del pool[a % len(pool)]
            elif kind == "cat":
                pool.append(cat([x, y], 0))
            elif kind == "sync":
                s.sync(x, y)
            elif kind == "reshape":
                pool.append(x.reshape((-1,)))
            elif kind == "swap":
                pool.append(x.swap_dims(0, -1))
        except (errors.FuselabError, TypeError) as exc:
            raised.append((type(exc), getattr(exc, "op_index", None),
                           getattr(exc, "field", None), str(exc)))
        del x, y
    del pool
    stream = s.close()
    return stream, stream_to_json(stream), raised


_SHAPES = st.lists(st.tuples(st.sampled_from([(4, 4), (1, 4), (4, 1), (2, 4, 4), (3, 4)]),
                             st.sampled_from(["f32", "f32", "i32", "bool"])),
                   min_size=1, max_size=4)


@settings(deadline=None)
@given(_SHAPES, st.lists(_STEP, max_size=30))
def test_frontend_twin_records_random_programs_as_refimpl(shapes, steps):
    ref, fast = (_run(cls, shapes, steps) for cls in SIDES)
    assert fast == ref


@pytest.mark.parametrize("make", ["clone", "move"])
def test_frontend_twin_handles_keep_their_class(make):
    """A clone or a moved handle is of its session's handle class: a comparison with the
    original records the same op, operands in order, on both sides (a subclass handle on the
    right would take Python's reflected comparison first)."""
    texts = []
    for session_cls in SIDES:
        s = session_cls(executor=None)
        a = s.random((4, 4), seed=0)
        b = getattr(a.exp(), make)()
        assert type(b) is type(a)
        s.sync(b < a)
        texts.append(stream_to_json(s.close()))
    assert texts[0] == texts[1] and "NumericFloat.Lower" in texts[0]


def test_frontend_twin_errors_leave_the_same_stream():
    """A closed session, a foreign tensor, a moved handle, bad inputs: the same errors."""
    outcomes = []
    for session_cls in SIDES:
        s, other = session_cls(executor=None), session_cls(executor=None)
        a, b = s.random((2, 2)), other.random((2, 2))
        raised = []
        for shape, kwargs in (((2, -1), {}), ((2, True), {}), ([2, 2], {"seed": -3}),
                              ((2, 2), {"seed": 2.0}), ((2, 2), {"strides": (1, 2)}),
                              ((), {}), ((2,), {"dtype": "i8"})):
            try:
                raised.append(s.random(shape, **kwargs).id)
            except errors.FuselabError as exc:
                raised.append((type(exc), exc.field, str(exc)))
        outcomes.append((raised, stream_to_json(s.stream)))
        with pytest.raises(FrontendError, match="belongs to another session"):
            a + b
        c = a.move()
        with pytest.raises(errors.TensorIdError, match="moved out of this handle"):
            a.exp()
        d = c.exp()
        s.close()
        with pytest.raises(FrontendError, match="the session is closed"):
            d + 1.0
        with pytest.raises(FrontendError, match="the session is closed"):
            s.random((2, 2))
    assert outcomes[0] == outcomes[1]


# --- every entry point of the Tensor API, and the calls it refuses ----------------------------

def _entry_point(session_cls, dtype, shape, call) -> tuple:
    """The entry point used on a named subject, then on a temporary one: the stream."""
    s = session_cls(executor=None)
    others = entry_point_others(s)
    held = s.random(shape, dtype, seed=1)
    results = [call(lambda: held, others), call(lambda: s.random(shape, dtype), others)]
    s.sync(*results)
    stream = s.close()
    return stream, stream_to_json(stream)


@pytest.mark.parametrize("name,dtype,shape,call", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_frontend_twin_records_every_entry_point_as_refimpl(name, dtype, shape, call):
    ref, fast = (_entry_point(cls, dtype, shape, call) for cls in SIDES)
    assert fast == ref


def _refused(session_cls, build) -> tuple:
    s = session_cls(executor=None)
    try:
        build(s)
    except errors.FuselabError as exc:
        raised = (type(exc), exc.op_index, exc.field, str(exc))
    else:
        raised = None
    return raised, stream_to_json(s.close())


@pytest.mark.parametrize("build,error,field", BAD_CALLS)
def test_frontend_twin_refuses_bad_calls_as_refimpl(build, error, field):
    ref, fast = (_refused(cls, build) for cls in SIDES)
    assert fast == ref
    assert ref[0] is not None and ref[0][0] is error
