"""Liveness (refimpl.liveness): burn's statuses and drops derived for hand-written streams."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from refimpl.errors import TensorIdError
from refimpl.ir import Sync, TensorStatus
from refimpl.liveness import last_mentions, liveness_json, with_liveness
from refimpl.stream import load_stream, stream_from_json, stream_to_json

STREAMS = Path(__file__).resolve().parent.parent / "streams"
EXAMPLES = sorted(STREAMS.glob("*.json"))
S = [4, 6]
RO, RW, NI = TensorStatus.ReadOnly, TensorStatus.ReadWrite, TensorStatus.NotInit


def T(i, shape=S, dtype="f32", status="ReadOnly"):
    return {"id": i, "shape": list(shape), "dtype": dtype, "status": status}


def doc(ops, n_inputs=2):
    inputs = {str(i): {"shape": S, "dtype": "f32", "random": i} for i in range(n_inputs)}
    return {"version": 1, "inputs": inputs, "ops": ops}


def exp(src, dst):
    return {"op": "Float.Exp", "input": T(src), "out": T(dst)}


def add(lhs, rhs, dst):
    return {"op": "NumericFloat.Add", "lhs": T(lhs), "rhs": T(rhs), "out": T(dst)}


def sync(*ids):
    return {"op": "Sync", "tensors": list(ids)}


def derive(ops, n_inputs=2):
    """Parse without validating (statuses are placeholders), then derive liveness."""
    return with_liveness(stream_from_json(doc(ops, n_inputs), validate=False))


def statuses(item):
    return [t.status for t in item.nodes()]


def _all_read_only(obj):
    """A stream document with every status ReadOnly and every Drop removed."""
    obj = copy.deepcopy(obj)
    obj["ops"] = [op for op in obj["ops"] if op["op"] != "Drop"]
    stack = list(obj["ops"])
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "status" in value:
                value["status"] = "ReadOnly"
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return obj


# --- the example streams --------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_liveness_examples_are_a_fixed_point(path):
    stream = load_stream(path)
    assert with_liveness(stream) == stream


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_liveness_derives_the_examples_from_read_only_streams(path):
    text = path.read_text(encoding="utf-8")
    blank = _all_read_only(json.loads(text))
    assert liveness_json(blank) != json.dumps(blank)
    assert liveness_json(json.dumps(blank)) == text


def test_liveness_seed_fact_last_use_versus_held():
    free = load_stream(STREAMS / "seed_mul_add_exp.json").items[0]
    held = load_stream(STREAMS / "seed_mul_add_exp_held.json").items[0]
    assert free.desc.lhs.status is RW  # a at its last use: in-place candidate
    assert held.desc.lhs.status is RO  # a still held (synced later): never written


# --- the rules ------------------------------------------------------------------------------


def test_liveness_last_use_is_read_write_and_earlier_uses_read_only():
    stream = derive([exp(0, 2), add(0, 1, 3), sync(3)])
    assert statuses(stream.items[0]) == [RO, NI]
    assert stream.items[1].name == "Drop"  # 2 is never used
    assert statuses(stream.items[2]) == [RW, RW, NI]


def test_liveness_a_later_sync_holds_the_tensor():
    stream = derive([exp(0, 2), add(2, 1, 3), sync(3, 2)])
    assert statuses(stream.items[1]) == [RO, RW, NI]
    assert len(stream.items) == 3  # synced last: no Drop


def test_liveness_repeated_operand_consumes_at_the_last_field():
    stream = derive([add(0, 0, 2), sync(2)])
    assert statuses(stream.items[0]) == [RO, RW, NI]
    cat = {"op": "BaseFloat.Cat", "tensors": [T(0), T(1), T(0)], "dim": 0,
           "out": T(2, [12, 6])}
    stream = derive([cat, sync(2)])
    assert statuses(stream.items[0]) == [RO, RW, RW, NI]


def test_liveness_explicit_late_drop_keeps_the_tensor_held():
    stream = derive([exp(0, 2), {"op": "Drop", "tensor": T(0)}, sync(2)])
    assert statuses(stream.items[0]) == [RO, NI]
    assert stream.items[1].name == "Drop" and statuses(stream.items[1]) == [RW]


def test_liveness_unused_result_is_dropped_right_after_its_op():
    stream = derive([exp(0, 2), exp(1, 3), sync(3)])
    names = [getattr(item, "name", "Sync") for item in stream.items]
    assert names == ["Float.Exp", "Drop", "Float.Exp", "Sync"]
    dropped = stream.items[1].desc.tensor
    assert (dropped.id, dropped.shape, dropped.status) == (2, (4, 6), RW)


def test_liveness_unused_input_gets_no_drop():
    stream = derive([exp(0, 5), sync(5)], n_inputs=3)
    assert [getattr(item, "name", "Sync") for item in stream.items] == ["Float.Exp", "Sync"]


def test_liveness_outputs_are_not_init_whatever_was_written():
    ops = [{"op": "Float.Exp", "input": T(0, status="NotInit"), "out": T(2, status="ReadWrite")},
           sync(2)]
    stream = derive(ops)
    assert statuses(stream.items[0]) == [RW, NI]


def test_liveness_is_idempotent():
    stream = derive([exp(0, 2), add(2, 1, 3), exp(3, 4), sync(4, 0)])
    assert with_liveness(stream) == stream


def test_liveness_last_mentions_counts_ops_syncs_and_drops():
    stream = stream_from_json(doc([exp(0, 2), sync(2), {"op": "Drop", "tensor": T(1)}]),
                              validate=False)
    assert last_mentions(stream) == {0: 0, 2: 1, 1: 2}


def test_liveness_reports_broken_structure_instead_of_repairing_it():
    ops = [{"op": "Drop", "tensor": T(0)}, exp(0, 2), sync(2)]
    with pytest.raises(TensorIdError) as info:
        derive(ops)
    assert (info.value.op_index, info.value.field) == (1, "input.id")
    raw = with_liveness(stream_from_json(doc(ops), validate=False), validate=False)
    assert isinstance(raw.items[2], Sync)


def test_liveness_json_writes_canonical_text():
    text = liveness_json(json.dumps(doc([exp(0, 2), sync(2)])))
    assert text == stream_to_json(stream_from_json(text))
    assert '"status": "ReadWrite"' in text
