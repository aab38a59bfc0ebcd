"""Robustness at fastplan's boundary: whatever the stream, fastplan's planner gives refimpl's
outcome (the same plan, or an error of the same class) and never crashes or hangs.

* the bad-input catalogue (``tests/refimpl/test_bad_input.py``): every document that parses
  without validation, and every Python-form entry, is planned by both;
* hypothesis garbage: drawn streams and the catalogue's fuzz bases with their JSON mutated
  (ids, shapes, dtypes, statuses, axes, ops replaced, deleted, added), and streams whose Python
  objects are replaced by arbitrary values;
* edge shapes of valid streams: empty, syncs or drops only, zero-size dims, ids at the u64
  limit, a long Cat, a long chain.

fastplan takes the typed form the stream loader builds; anything else raises
``fastplan._keys.BoundaryError`` (a ``TypeError``) inside, and ``plan`` then hands the stream
to refimpl's planner. A hang is caught by an alarm (``TIME_LIMIT_S``); a crash would take the
test process down.
"""

from __future__ import annotations

import copy
import importlib
import json
import signal
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

import fastplan
from refimpl import errors
from refimpl.dtypes import DType
from refimpl.ir import (BinaryOpIr, CatOpIr, DropOpIr, OperationIr, Sync, TensorIr, TensorStatus,
                        UnaryOpIr)
from refimpl.ops import OPS, op_named
from refimpl.planner import plan as reference_plan
from refimpl.planner import plan_to_json
from refimpl.stream import InputSpec, Stream, stream_from_json, stream_to_json
from refimpl.strategies import streams
from tests.refimpl.helpers import BASES, CATALOGUE, PY_CATALOGUE, as_source, mutate

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

TIME_LIMIT_S = 20
DEVICES = ("metal", "webgpu-default")


@contextmanager
def time_limit(seconds: int = TIME_LIMIT_S):
    """Fail (instead of hanging) when the body runs longer than ``seconds``."""

    def expired(signum, frame):
        raise TimeoutError(f"planning took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def outcome(planner, stream: Stream, device: str) -> tuple:
    """``("ok", canonical JSON)`` or ``("raised", exception class)``."""
    try:
        with time_limit():
            return ("ok", plan_to_json(planner(stream, device)))
    except TimeoutError:
        raise
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("raised", type(exc))


def assert_same_outcome(stream: Stream) -> None:
    __tracebackhide__ = True
    from fastplan.planner import plan as fast_plan

    for device in DEVICES:
        assert outcome(fast_plan, stream, device) == outcome(reference_plan, stream, device)


def _parsed(src):
    """The stream of a document that parses without validation, or ``None``."""
    try:
        return stream_from_json(as_source(src), validate=False)
    except errors.StreamError:
        return None


PARSED = [(entry[0], entry[1]) for entry in CATALOGUE if _parsed(entry[1]) is not None]


def test_boundary_catalogue_has_documents_that_parse():
    assert len(PARSED) >= 30


@pytest.mark.parametrize("kind, src", PARSED, ids=[kind for kind, _ in PARSED])
def test_boundary_catalogue_stream_planned_alike(kind, src):
    assert_same_outcome(_parsed(src))


@pytest.mark.parametrize("kind, stream", [(e[0], e[1]) for e in PY_CATALOGUE],
                         ids=[e[0] for e in PY_CATALOGUE])
def test_boundary_python_catalogue_stream_planned_alike(kind, stream):
    assert_same_outcome(stream)


# --- hypothesis garbage -----------------------------------------------------------------------


@st.composite
def mutated_documents(draw) -> str:
    """A drawn stream or a fuzz base, its JSON mutated one to three times."""
    if draw(st.booleans()):
        obj = json.loads(stream_to_json(draw(streams(max_ops=8))))
    else:
        obj = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 3))):
        mutate(obj, draw(st.data()))
    return json.dumps(obj)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=mutated_documents())
def test_boundary_mutated_json_streams_planned_alike(text):
    note(text)
    stream = _parsed(text)
    event("parsed" if stream is not None else "refused by the loader")
    if stream is not None:
        assert_same_outcome(stream)


_TENSOR_KEYS = {"id", "shape", "dtype", "status"}
_OPS_BY_STRUCT: dict = {}
for _op in OPS:
    _OPS_BY_STRUCT.setdefault(_op.struct, []).append(_op.name)


def _tensors_in(value) -> list[dict]:
    """The tensor objects (``{id, shape, dtype, status}``) inside a JSON value."""
    found, stack = [], [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if set(node) == _TENSOR_KEYS:
                found.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _semantic_mutation(doc: dict, data) -> None:
    """One change that keeps the document well-typed but (likely) wrong in meaning."""
    ops = doc["ops"]
    if not ops:
        ops.append({"op": "Sync", "tensors": []})
        return
    index = data.draw(st.integers(0, len(ops) - 1))
    entry = ops[index]
    tensors = _tensors_in(entry)
    action = data.draw(st.sampled_from(
        ["id", "shape", "dtype", "status", "op", "int", "delete", "duplicate", "swap", "sync"]))
    if action in ("id", "shape", "dtype", "status") and tensors:
        tensor = data.draw(st.sampled_from(tensors))
        tensor[action] = data.draw({
            "id": st.integers(0, 12) | st.integers(0, 2**64 - 1),
            "shape": st.lists(st.integers(-2, 9) | st.just(2**40), max_size=4),
            "dtype": st.sampled_from([d.value for d in DType]),
            "status": st.sampled_from([s.value for s in TensorStatus]),
        }[action])
    elif action == "op" and entry.get("op") not in ("Sync", None):
        struct = op_named(entry["op"]).struct
        entry["op"] = data.draw(st.sampled_from(_OPS_BY_STRUCT[struct]))
    elif action == "int":
        keys = [k for k, v in entry.items() if isinstance(v, int) and not isinstance(v, bool)]
        if keys:
            entry[data.draw(st.sampled_from(keys))] = data.draw(st.integers(-3, 6))
    elif action == "delete":
        del ops[index]
    elif action == "duplicate":
        ops.insert(index, copy.deepcopy(entry))
    elif action == "swap":
        other = data.draw(st.integers(0, len(ops) - 1))
        ops[index], ops[other] = ops[other], ops[index]
    else:
        ops.insert(index, {"op": "Sync", "tensors": data.draw(
            st.lists(st.integers(0, 14), max_size=3, unique=True))})


@st.composite
def semantically_wrong_documents(draw) -> str:
    """A drawn stream with one to four well-typed but wrong changes."""
    obj = json.loads(stream_to_json(draw(streams(max_ops=8))))
    for _ in range(draw(st.integers(1, 4))):
        _semantic_mutation(obj, draw(st.data()))
    return json.dumps(obj)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(text=semantically_wrong_documents())
def test_boundary_semantically_wrong_streams_planned_alike(text):
    note(text)
    stream = _parsed(text)
    event("parsed" if stream is not None else "refused by the loader")
    if stream is not None:
        assert_same_outcome(stream)


_GARBAGE = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=3),
    st.tuples(st.integers(-3, 8), st.integers(-3, 8)), st.lists(st.integers(0, 4), max_size=2),
    st.sampled_from([DType.F32, DType.BOOL, TensorStatus.ReadWrite, TensorStatus.NotInit,
                     op_named("Float.Exp"), Sync((0,)), (), ((0, 1),), "NotInit"]),
    st.builds(TensorIr, st.integers(0, 6) | st.text(max_size=1),
              st.tuples(st.integers(-1, 4)) | st.lists(st.integers(1, 4), max_size=2),
              st.sampled_from([DType.F32, DType.I32, "f32", None]),
              st.sampled_from([TensorStatus.ReadOnly, TensorStatus.ReadWrite, "RO"])),
)


def _replace_somewhere(stream: Stream, data) -> Stream:
    """The stream with one item, one operand field or one tensor field replaced."""
    items = list(stream.items)
    if not items:
        return stream
    index = data.draw(st.integers(0, len(items) - 1))
    item = items[index]
    where = data.draw(st.sampled_from(["item", "field", "tensor"]))
    if where == "item" or not isinstance(item, OperationIr):
        items[index] = data.draw(_GARBAGE)
        return Stream(stream.inputs, tuple(items))
    names = [name for name, _ in item.desc.SCHEMA]
    name = data.draw(st.sampled_from(names))
    value = getattr(item.desc, name)
    if where == "tensor" and isinstance(value, TensorIr):
        field = data.draw(st.sampled_from(["id", "shape", "dtype", "status"]))
        value = object.__new__(TensorIr)
        for slot in ("id", "shape", "dtype", "status"):
            object.__setattr__(value, slot, getattr(getattr(item.desc, name), slot))
        object.__setattr__(value, field, data.draw(_GARBAGE))
    else:
        value = data.draw(_GARBAGE)
    desc = object.__new__(type(item.desc))
    for other in names:
        object.__setattr__(desc, other, value if other == name else getattr(item.desc, other))
    items[index] = OperationIr(item.op, desc)
    return Stream(stream.inputs, tuple(items))


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(max_ops=8), data=st.data())
def test_boundary_python_garbage_planned_alike(stream, data):
    for _ in range(data.draw(st.integers(1, 2))):
        stream = _replace_somewhere(stream, data)
    note(repr(stream.items))
    from fastplan.planner import plan as fast_plan

    event(outcome(fast_plan, stream, "metal")[0])
    assert_same_outcome(stream)


# --- edge shapes of valid streams -------------------------------------------------------------

F32, RO, RW, NEW = DType.F32, TensorStatus.ReadOnly, TensorStatus.ReadWrite, TensorStatus.NotInit


def _add(a, b, out, shape, status=RO):
    return OperationIr(op_named("NumericFloat.Add"), BinaryOpIr(
        TensorIr(a, shape, F32, status), TensorIr(b, shape, F32, RO), TensorIr(out, shape, F32,
                                                                            NEW)))


def _inputs(*ids, shape=(4, 6)):
    return {i: InputSpec(shape, F32, random=i % 1000) for i in ids}


def _chain(length: int, shape=(4, 6), first: int = 0) -> Stream:
    items = [_add(first + i, first + length + 1, first + i + 1, shape, RW) for i in range(length)]
    items.append(Sync((first + length,)))
    return Stream(_inputs(first, first + length + 1, shape=shape), tuple(items))


def _false_for_zero() -> Stream:
    """Found by hypothesis: a Drop naming tensor ``False`` (== 0): refimpl maps steps back
    through the latest snapshot's id, so the fused step reads ``False``."""
    exp = OperationIr(op_named("Float.Exp"), UnaryOpIr(TensorIr(0, (1,), F32, RO),
                                                       TensorIr(1, (1,), F32, NEW)))
    drop = OperationIr(op_named("Drop"), DropOpIr(TensorIr(False, (1,), F32, RW)))
    return Stream(_inputs(0, shape=(1,)), (Sync((0,)), exp, drop, Sync((1,))))


EDGE_STREAMS = {
    "false_for_zero": _false_for_zero(),
    "empty": Stream({}, ()),
    "syncs_only": Stream(_inputs(0), (Sync(()), Sync((0,)), Sync((5,)))),
    "drops_only": Stream(_inputs(0, 1), (
        OperationIr(op_named("Drop"), DropOpIr(TensorIr(0, (4, 6), F32, RW))),
        OperationIr(op_named("Drop"), DropOpIr(TensorIr(1, (4, 6), F32, RW))))),
    "zero_size_dims": _chain(5, shape=(0, 6)),
    "u64_limit_ids": _chain(4, first=2**64 - 10),
    "long_cat": Stream(_inputs(*range(40)), (
        OperationIr(op_named("BaseFloat.Cat"), CatOpIr(
            tuple(TensorIr(i, (4, 6), F32, RO) for i in range(40)), 0,
            TensorIr(40, (160, 6), F32, NEW))), Sync((40,)))),
    "chain_of_1000": _chain(1000),
}


@pytest.mark.parametrize("name", sorted(EDGE_STREAMS))
def test_boundary_edge_stream_planned_alike(name):
    assert_same_outcome(EDGE_STREAMS[name])


def test_boundary_stream_planner_raises_boundary_error_on_foreign_items():
    from fastplan._keys import BoundaryError
    from fastplan.stream.processor import StreamPlanner

    planner = StreamPlanner([])
    with pytest.raises(BoundaryError) as info:
        planner.register(0, "NumericFloat.Add")
    assert isinstance(info.value, TypeError)
    with pytest.raises(BoundaryError):
        planner.register(0, OperationIr(op_named("Float.Exp"), BinaryOpIr(None, None, None)))


# --- the Python-level API with out-of-range arguments: refimpl's exceptions, no crash --------


def _api_calls(module_of):
    """Calls of the twins' APIs with ids and positions a planner never produces itself."""
    from refimpl.planner.stream.cache import Always, ExecutionPlan, OnSync
    from refimpl.planner.search.strategy import BlockOptimization, Operations

    cache, processor = module_of("stream.cache"), module_of("stream.processor")
    op = _add(0, 1, 2, (4, 6))
    relative = module_of("stream.relative").to_relative(
        op, module_of("stream.relative").OperationConverter())

    def store_with_one_plan():
        store = cache.ExecutionPlanStore()
        store.add(ExecutionPlan((relative,), [], BlockOptimization(Operations((0,)), (0,))))
        return store

    def planner_executing(ordering, covered):
        planner = processor.StreamPlanner([])
        planner.queue.add(0, op)
        plan_id = planner.store.add(ExecutionPlan(
            (relative,) * covered, [Always()], BlockOptimization(Operations(ordering),
                                                                 tuple(range(covered)))))
        planner.queue.execute(plan_id, planner.store)
        return planner.queue.steps

    return {
        "add_trigger_past_the_end": lambda: store_with_one_plan().add_trigger(5, OnSync()),
        "add_trigger_last": lambda: store_with_one_plan().add_trigger(-1, OnSync()),
        "add_trigger_before_the_start": lambda: store_with_one_plan().add_trigger(-2, OnSync()),
        "get_last": lambda: store_with_one_plan().get(-1).triggers,
        "get_past_the_end": lambda: store_with_one_plan().get(3),
        "plan_longer_than_queue": lambda: planner_executing((0, 1), 2),
        "position_past_the_queue": lambda: planner_executing((4,), 1),
        "negative_position": lambda: planner_executing((-1,), 1),
        "policy_asked_too_much": lambda: cache.Policy().action(
            cache.ExecutionPlanStore(), [relative], None),
    }


API_CASES = sorted(_api_calls(lambda name: importlib.import_module(f"refimpl.planner.{name}")))


@pytest.mark.parametrize("name", API_CASES)
def test_boundary_api_out_of_range_like_refimpl(name):
    def result(module_of):
        try:
            value = _api_calls(module_of)[name]()
            return ("ok", value)
        except Exception as exc:  # noqa: BLE001 - the class is what is compared
            return ("raised", type(exc))

    expected = result(lambda m: importlib.import_module(f"refimpl.planner.{m}"))
    assert result(fastplan.planner_module) == expected


# Found by tools/fuzz_planners.py: unvalidated streams that reach fastplan's compiled planner
# with values no validator would pass. Each once crashed or misanswered there.
FUZZ_FINDINGS = {
    # Expand whose input handle has a higher rank than its output: negative index offsets
    "expand_from_higher_rank": {
        "version": 1,
        "inputs": {"0": {"shape": [1, 1, 1, 4, 6], "dtype": "f32", "random": 0}},
        "ops": [{"op": "BaseFloat.Expand",
                 "input": {"id": 0, "shape": [4, 6], "dtype": "f32", "status": "ReadOnly"},
                 "out": {"id": 1, "shape": [2, 4, 6], "dtype": "f32", "status": "NotInit"}},
                {"op": "Sync", "tensors": [1]}]},
    # an input with fewer strides than dims: its buffer length pairs them as zip does
    "short_strides": {
        "version": 1,
        "inputs": {"0": {"shape": [4, 6], "strides": [1], "dtype": "f32", "random": 0},
                   "1": {"shape": [4, 6], "dtype": "f32", "random": 1}},
        "ops": [{"op": "NumericFloat.Add",
                 "lhs": {"id": 0, "shape": [4, 6], "dtype": "f32", "status": "ReadOnly"},
                 "rhs": {"id": 1, "shape": [4, 6], "dtype": "f32", "status": "ReadOnly"},
                 "out": {"id": 2, "shape": [4, 6], "dtype": "f32", "status": "NotInit"}},
                {"op": "Float.Exp",
                 "input": {"id": 2, "shape": [4, 6], "dtype": "f32", "status": "ReadWrite"},
                 "out": {"id": 3, "shape": [4, 6], "dtype": "f32", "status": "NotInit"}},
                {"op": "Sync", "tensors": [3]}]},
    # a dim past int64 in one operand: the compiled walk's C conversion fails, refimpl's
    # walk decides the outcome
    "dim_past_int64": {
        "version": 1,
        "inputs": {str(i): {"shape": [64, 64], "dtype": "f32", "random": i} for i in range(3)},
        "ops": [{"op": "NumericFloat.Mul",
                 "lhs": {"id": 0, "shape": [64, 64], "dtype": "f32", "status": "ReadWrite"},
                 "rhs": {"id": 1, "shape": [2 ** 64 - 1], "dtype": "f32", "status": "ReadOnly"},
                 "out": {"id": 3, "shape": [64, 64], "dtype": "f32", "status": "NotInit"}},
                {"op": "NumericFloat.Add",
                 "lhs": {"id": 3, "shape": [64, 64], "dtype": "f32", "status": "ReadWrite"},
                 "rhs": {"id": 2, "shape": [64, 64], "dtype": "f32", "status": "ReadOnly"},
                 "out": {"id": 4, "shape": [64, 64], "dtype": "f32", "status": "NotInit"}},
                {"op": "Float.Exp",
                 "input": {"id": 4, "shape": [64, 64], "dtype": "f32", "status": "ReadWrite"},
                 "out": {"id": 5, "shape": [64, 64], "dtype": "f32", "status": "NotInit"}},
                {"op": "Sync", "tensors": [5]}]},
    # an output of 2**71 elements: int64 strides would wrap in the compiled cores, so the step
    # goes to refimpl's walk (which fails on the input's rank-4 handle)
    "extent_past_int64": {
        "version": 1,
        "inputs": {"0": {"shape": [1, 2, 2 ** 31, 2], "dtype": "f16", "random": 361}},
        "ops": [{"op": "BaseFloat.Equal",
                 "lhs": {"id": 0, "shape": [1, 2, 2], "dtype": "f16", "status": "ReadOnly"},
                 "rhs": {"id": 0, "shape": [1, 2, 2], "dtype": "f16", "status": "ReadOnly"},
                 "out": {"id": 1, "shape": [1, 2 ** 40, 2 ** 31], "dtype": "bool",
                         "status": "NotInit"}},
                {"op": "Sync", "tensors": [0]},
                {"op": "Sync", "tensors": [1]}]},
}


@pytest.mark.parametrize("name", sorted(FUZZ_FINDINGS))
def test_boundary_fuzz_findings_planned_alike(name):
    stream = stream_from_json(json.dumps(FUZZ_FINDINGS[name]), validate=False)
    with time_limit():
        assert_same_outcome(stream)


def test_boundary_unhashable_scalar_is_refimpl_s_to_plan():
    """A list where a scalar belongs: fastplan keys ops by hashing their fields, so it hands
    the stream to refimpl, which never hashes it (found by the fuzzer, 15 times in 1 M)."""
    tensor = TensorIr(0, (4, 6), DType.F32, TensorStatus.ReadOnly)
    out = TensorIr(1, (4, 6), DType.F32, TensorStatus.NotInit)
    add = OperationIr(op_named("NumericFloat.AddScalar"),
                      op_named("NumericFloat.AddScalar").struct(tensor, [2.0], out))
    stream = Stream({0: InputSpec((4, 6), DType.F32, random=0)}, (add, Sync((1,))))
    with time_limit():
        assert_same_outcome(stream)


@pytest.mark.parametrize("out_id, fails", [("a", True), ((7,), True), (2.5, False)])
def test_boundary_ids_that_do_not_order_fail_as_refimpl(out_id, fails):
    """A fused step whose output id does not order against the int ids: refimpl's launch plan
    sorts its tensor ids and fails (``TypeError``); so must fastplan's walk, which freezes only
    what it reads of a launch (a case the fuzzer finds). A float id orders: both plan."""
    ids = [TensorIr(i, (64, 64), DType.F32, TensorStatus.ReadOnly) for i in range(3)]
    rw = [TensorIr(i, (64, 64), DType.F32, TensorStatus.ReadWrite) for i in (0, 3, 4)]
    made = [TensorIr(i, (64, 64), DType.F32, TensorStatus.NotInit) for i in (3, 4, out_id)]
    mul, add, exp = (op_named(name) for name in ("NumericFloat.Mul", "NumericFloat.Add",
                                                   "Float.Exp"))
    items = (OperationIr(mul, BinaryOpIr(rw[0], ids[1], made[0])),
             OperationIr(add, BinaryOpIr(rw[1], ids[2], made[1])),
             OperationIr(exp, UnaryOpIr(rw[2], made[2])),
             Sync((5,)))
    stream = Stream({i: InputSpec((64, 64), DType.F32, random=i) for i in range(3)}, items)
    with time_limit():
        assert_same_outcome(stream)
        expected = outcome(reference_plan, stream, "metal")
    assert expected[0] == ("raised" if fails else "ok")
    if fails:
        assert expected[1] is TypeError
