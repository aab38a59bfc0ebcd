"""Stream format v1 (refimpl.stream): parsing, canonical writing, round trips, file I/O."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from refimpl.dtypes import DType
from refimpl.errors import StrideError, StreamError
from refimpl.ir import OperationIr, Sync, TensorIr, TensorStatus
from refimpl.ops import op_named
from refimpl.stream import (FORMAT_VERSION, InputSpec, Stream, load_stream, save_stream,
                            stream_from_json, stream_to_json)

STREAMS = Path(__file__).resolve().parent.parent / "streams"
EXAMPLES = sorted(STREAMS.glob("*.json"))
S = [4, 6]


def T(i, shape=S, dtype="f32", status="ReadOnly"):
    return {"id": i, "shape": list(shape), "dtype": dtype, "status": status}


def O(i, shape=S, dtype="f32"):
    return T(i, shape, dtype, "NotInit")


def doc(ops, inputs=None):
    return {"version": 1, "inputs": {"0": {"shape": S, "dtype": "f32", "random": 0}}
            if inputs is None else inputs, "ops": ops}


def _scrambled(obj):
    """The same JSON value with every object's keys in reverse order."""
    if isinstance(obj, dict):
        return {k: _scrambled(obj[k]) for k in reversed(list(obj))}
    if isinstance(obj, list):
        return [_scrambled(v) for v in obj]
    return obj


# --- the example streams --------------------------------------------------------------------


def test_stream_format_examples_exist():
    names = {p.stem for p in EXAMPLES}
    assert {"seed_mul_add_exp", "transposed_input", "sync_middle"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_stream_format_example_files_are_canonical(path):
    text = path.read_text(encoding="utf-8")
    assert stream_to_json(load_stream(path)) == text


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_stream_format_round_trip_is_a_fixed_point(path):
    text = path.read_text(encoding="utf-8")
    stream = stream_from_json(text)
    assert stream_from_json(stream_to_json(stream)) == stream
    loose = json.dumps(_scrambled(json.loads(text)), indent=3)
    assert loose != text
    assert stream_to_json(stream_from_json(loose)) == text


def test_stream_format_seed_example_reads_as_specified():
    stream = load_stream(STREAMS / "seed_mul_add_exp.json")
    assert sorted(stream.inputs) == [0, 1, 2]
    assert stream.inputs[0] == InputSpec((4, 6), DType.F32, None, None, 1)
    mul = stream.items[0]
    assert mul.name == "NumericFloat.Mul"
    assert mul.desc.lhs == TensorIr(0, (4, 6), DType.F32, TensorStatus.ReadWrite)
    assert [item.name for item in stream.ops] == ["NumericFloat.Mul", "NumericFloat.Add",
                                                  "Float.Exp"]
    assert stream.syncs() == (Sync((5,)),)


def test_stream_format_transposed_input_keeps_strides():
    stream = load_stream(STREAMS / "transposed_input.json")
    assert stream.inputs[0].strides == (1, 6)
    assert stream.inputs[1].strides is None


# --- canonical writing ----------------------------------------------------------------------


def test_stream_format_empty_stream_text():
    text = stream_to_json(stream_from_json({"version": 1, "ops": []}))
    assert text == '{"version": 1,\n "inputs": {},\n "ops": []}\n'
    assert FORMAT_VERSION == 1


def test_stream_format_scalars_are_spelt_in_the_op_family():
    ops = [{"op": "NumericFloat.AddScalar", "lhs": T(0), "rhs": 2, "out": O(1)}]
    text = stream_to_json(stream_from_json(doc(ops)))
    assert '"rhs": 2.0' in text
    ints = {"0": {"shape": S, "dtype": "i32", "random": 0}}
    ops = [{"op": "NumericInt.MulScalar", "lhs": T(0, dtype="i32"), "rhs": 3.0,
            "out": O(1, dtype="i32")}]
    stream = stream_from_json(doc(ops, ints))
    assert stream.items[0].desc.rhs == 3 and isinstance(stream.items[0].desc.rhs, int)
    assert '"rhs": 3,' in stream_to_json(stream)


def test_stream_format_non_finite_scalars_round_trip():
    mask = {"0": {"shape": S, "dtype": "f32", "random": 0},
            "1": {"shape": S, "dtype": "bool", "random": 1}}
    text = json.dumps(doc([{"op": "BaseFloat.MaskFill", "tensor": T(0), "mask": T(1, S, "bool"),
                            "value": -math.inf, "out": O(2)}], mask))
    stream = stream_from_json(text)
    assert stream.items[0].desc.value == -math.inf
    assert '"value": -Infinity' in stream_to_json(stream)


def test_stream_format_inputs_are_written_by_numeric_id():
    inputs = {str(i): {"shape": [1], "dtype": "f32", "random": i} for i in (10, 2, 0)}
    text = stream_to_json(stream_from_json(doc([], inputs)))
    assert text.index('"0"') < text.index('"2"') < text.index('"10"')


def test_stream_format_data_is_spelt_in_the_dtype_family():
    inputs = {"0": {"shape": [2], "dtype": "f32", "data": [1, 2]},
              "1": {"shape": [2], "dtype": "i64", "data": [-3, 4]},
              "2": {"shape": [1, 2], "dtype": "bool", "data": [[True, False]]}}
    text = stream_to_json(stream_from_json(doc([], inputs)))
    assert '"data": [1.0, 2.0]' in text
    assert '"data": [-3, 4]' in text
    assert '"data": [[true, false]]' in text


def test_stream_format_python_built_stream_round_trips():
    f32 = DType.F32
    x = TensorIr(0, (2, 3), f32, TensorStatus.ReadWrite)
    y = TensorIr(1, (2, 3), f32, TensorStatus.NotInit)
    exp = OperationIr(op_named("Float.Exp"), op_named("Float.Exp").struct(input=x, out=y))
    stream = Stream({0: InputSpec((2, 3), f32, (1, 2), random=5)}, (exp, Sync((1,))))
    text = stream.to_json()
    assert text == stream_to_json(stream)
    assert Stream.from_json(text) == stream
    assert Stream.from_json(text.encode("utf-8")) == stream


def test_stream_format_same_stream_same_bytes():
    text = (STREAMS / "spec_minimum.json").read_text(encoding="utf-8")
    assert stream_to_json(stream_from_json(text)) == stream_to_json(stream_from_json(text))


# --- reading --------------------------------------------------------------------------------


def test_stream_format_inputs_default_to_empty():
    ops = [{"op": "NumericFloat.Full", "out": O(0, [2]), "value": 1.0},
           {"op": "Sync", "tensors": [0]}]
    stream = stream_from_json({"version": 1, "ops": ops})
    assert stream.inputs == {} and len(stream.items) == 2


def test_stream_format_version_must_be_the_integer_one():
    with pytest.raises(StreamError) as info:
        stream_from_json({"version": True, "ops": []})
    assert info.value.field == "version"


def test_stream_format_validate_false_skips_the_spec_checker():
    bad = doc([{"op": "Float.Exp", "input": T(9), "out": O(1)}])
    stream = stream_from_json(bad, validate=False)
    assert stream.items[0].desc.input.id == 9
    with pytest.raises(StreamError):
        stream_from_json(bad)


def test_stream_format_init_creates_its_input():
    ops = [{"op": "Init", "out": O(0, [3])},
           {"op": "Float.Exp", "input": T(0, [3], status="ReadWrite"), "out": O(1, [3])},
           {"op": "Sync", "tensors": [1]}]
    stream_from_json(doc(ops, {"0": {"shape": [3], "dtype": "f32", "data": [1.0, 2.0, 3.0]}}))


def test_stream_format_load_and_save(tmp_path):
    stream = load_stream(STREAMS / "sync_middle.json")
    target = tmp_path / "copy.json"
    save_stream(stream, target)
    assert target.read_bytes() == (STREAMS / "sync_middle.json").read_bytes()
    assert load_stream(target) == stream


# --- strides --------------------------------------------------------------------------------


@pytest.mark.parametrize(("shape", "strides"), [
    ([6, 4], [1, 6]),  # transposed
    ([4, 6], [8, 1]),  # padded rows
    ([1, 6], [100, 1]),  # a size-1 dim may have any stride
    ([4, 1], [1, 0]),
    ([3, 3], [2, 3]),  # interleaved but disjoint: offsets 0,2,3,4,5,6,7,8,10
    ([0, 5], [0, 0]),  # no elements, nothing to alias
    ([2048, 2048], [1, 2048]),  # large, checked without enumerating elements
], ids=["transposed", "padded", "size1_any", "size1_zero", "interleaved", "empty", "large"])
def test_stream_format_accepts_non_aliasing_strides(shape, strides):
    stream_from_json(doc([], {"0": {"shape": shape, "dtype": "f32", "strides": strides,
                                    "random": 0}}))


def test_stream_format_rejects_interleaved_strides_too_large_to_check():
    with pytest.raises(StrideError) as info:
        stream_from_json(doc([], {"0": {"shape": [4096, 2048], "dtype": "f32",
                                        "strides": [2, 3], "random": 0}}))
    assert info.value.field == "inputs.0.strides"
