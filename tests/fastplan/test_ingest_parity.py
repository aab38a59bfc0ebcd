"""Parity of fastplan's ingest twins with refimpl's stream reader and spec checker.

``fastplan.ingest.stream`` and ``fastplan.ingest.validate`` must give, for every document and
every Python-form stream, refimpl's outcome: the same ``Stream`` (``==`` and the same canonical
text), or the same typed error (class, op index, field and message). Checked on the bad-input
catalogue, its Python form, the golden and example streams, the planner benchmark's workloads,
and hypothesis garbage (JSON values mutated, texts cut and bytes flipped). Without a compiled
fastplan, ``fastplan.ingest_module`` is refimpl's module and the properties hold trivially.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fastplan
import refimpl.stream as ref_stream
import refimpl.validate as ref_validate
from fuselab.workloads import WORKLOADS, build
from refimpl import errors
from refimpl.stream import stream_to_json
from tests.refimpl.helpers import BASES, CATALOGUE, PY_CATALOGUE, as_source, mutate

ROOT = Path(__file__).resolve().parents[2]
STREAM_FILES = sorted((ROOT / "tests" / "streams").glob("*.json")) + sorted(
    (ROOT / "tests" / "golden" / "streams").glob("*.json"))

fast_stream = fastplan.ingest_module("stream")
fast_validate = fastplan.ingest_module("validate")


def outcome(read, source, validate: bool = True) -> tuple:
    """``("ok", stream, canonical text)`` or ``("raised", class, op index, field, message)``."""
    try:
        stream = read(source, validate=validate)
    except errors.StreamError as exc:
        return ("raised", type(exc), exc.op_index, exc.field, str(exc))
    return ("ok", stream, stream_to_json(stream))


def assert_same(source) -> None:
    __tracebackhide__ = True
    for validate in (True, False):
        assert (outcome(fast_stream.stream_from_json, source, validate)
                == outcome(ref_stream.stream_from_json, source, validate))


def test_ingest_twins_mirror_refimpl_names():
    assert fast_stream.__all__ == ref_stream.__all__
    assert fast_validate.__all__ == ref_validate.__all__
    for module, twin, name in ((fast_stream, ref_stream, "stream_from_json"),
                               (fast_stream, ref_stream, "load_stream"),
                               (fast_validate, ref_validate, "validate_stream")):
        assert _first_line(getattr(module, name)) == _first_line(getattr(twin, name))


def _first_line(function) -> str:
    """The first docstring line, after the signature Cython embeds."""
    lines = [line for line in (function.__doc__ or "").splitlines() if line.strip()]
    if lines and lines[0].startswith(f"{function.__name__}("):
        lines = lines[1:]
    return lines[0].strip() if lines else ""


@pytest.mark.parametrize(("kind", "src", "cls", "op_index", "field"), CATALOGUE,
                         ids=[entry[0] for entry in CATALOGUE])
def test_ingest_catalogue_same_error(kind, src, cls, op_index, field):
    with pytest.raises(cls) as info:
        fast_stream.stream_from_json(as_source(src))
    assert (info.value.op_index, info.value.field) == (op_index, field)
    assert_same(as_source(src))
    if not isinstance(src, str | bytes):
        assert_same(json.dumps(src).encode())
        assert_same(copy.deepcopy(src))


@pytest.mark.parametrize(("kind", "stream", "cls", "op_index", "field"), PY_CATALOGUE,
                         ids=[entry[0] for entry in PY_CATALOGUE])
def test_ingest_python_catalogue_same_error(kind, stream, cls, op_index, field):
    with pytest.raises(errors.StreamError) as fast:
        fast_validate.validate_stream(stream)
    with pytest.raises(errors.StreamError) as ref:
        ref_validate.validate_stream(stream)
    assert ((type(fast.value), fast.value.op_index, fast.value.field, str(fast.value))
            == (type(ref.value), ref.value.op_index, ref.value.field, str(ref.value)))


@pytest.mark.parametrize("path", STREAM_FILES, ids=[p.name for p in STREAM_FILES])
def test_ingest_stream_files_same_stream(path):
    data = path.read_bytes()
    assert_same(data)
    assert fast_stream.load_stream(path) == ref_stream.load_stream(path)


@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_ingest_workloads_read_without_refimpl(workload, monkeypatch):
    """A canonical document is read by the scan alone: refimpl's reader is never asked."""
    stream = build(workload, 600)
    text = stream_to_json(stream)
    if fastplan.COMPILED:
        def refused(*args, **kwargs):
            raise AssertionError("the compiled reader fell back to refimpl")

        monkeypatch.setattr(ref_stream, "stream_from_json", refused)
    assert fast_stream.stream_from_json(text) == stream
    assert fast_stream.stream_from_json(text.encode()) == stream
    monkeypatch.undo()
    fast_validate.validate_stream(stream)


def test_ingest_reformatted_document_same_stream():
    """Keys in another order, other white space: the same stream."""
    stream = build("mixed", 300)
    obj = json.loads(stream_to_json(stream))
    shuffled = {"ops": [dict([("op", op["op"])] + list(reversed(
        [(k, v) for k, v in op.items() if k != "op"]))) for op in obj["ops"]],
        "inputs": obj["inputs"], "version": 1}
    for text in (json.dumps(shuffled), json.dumps(shuffled, indent=3),
                 json.dumps(shuffled, separators=(",", ":"))):
        assert_same(text)
        assert fast_stream.stream_from_json(text) == stream


_TEXT_EDITS = st.sampled_from(["cut", "flip", "insert", "delete"])


@given(st.data())
def test_ingest_mutated_documents_same_outcome(data):
    obj = copy.deepcopy(data.draw(st.sampled_from(BASES)))
    for _ in range(data.draw(st.integers(0, 3))):
        mutate(obj, data)
    text = json.dumps(obj).encode()
    for _ in range(data.draw(st.integers(0, 2))):
        at = data.draw(st.integers(0, max(len(text) - 1, 0)))
        edit = data.draw(_TEXT_EDITS)
        byte = bytes([data.draw(st.sampled_from(b'{}[],:"0123456789.-eE \\tfnu\x00\xff'))])
        if edit == "cut":
            text = text[:at]
        elif edit == "flip":
            text = text[:at] + byte + text[at + 1:]
        elif edit == "insert":
            text = text[:at] + byte + text[at:]
        else:
            text = text[:at] + text[at + 1:]
    assert_same(text)


@given(st.data())
def test_ingest_mutated_python_streams_same_error(data):
    """validate_stream on parsed-but-invalid streams: the same first error."""
    obj = copy.deepcopy(data.draw(st.sampled_from(BASES)))
    for _ in range(data.draw(st.integers(1, 3))):
        mutate(obj, data)
    try:
        stream = ref_stream.stream_from_json(json.dumps(obj), validate=False)
    except errors.StreamError:
        return
    results = []
    for check in (fast_validate.validate_stream, ref_validate.validate_stream):
        try:
            check(stream)
            results.append(None)
        except errors.StreamError as exc:
            results.append((type(exc), exc.op_index, exc.field, str(exc)))
    assert results[0] == results[1]


_WORKLOAD_STREAMS = {name: build(name, 120) for name in ("transformer", "mixed", "elementwise")}
_CHANGES = st.sampled_from(["id", "dim", "rank", "dtype", "status", "int", "scalar", "swap"])


def _changed_tensor(t, change, data):
    import dataclasses

    from refimpl.dtypes import DType
    from refimpl.ir import TensorStatus

    if change == "id":
        return dataclasses.replace(t, id=data.draw(st.integers(0, 400)))
    if change == "dim":
        dims = list(t.shape)
        dims[data.draw(st.integers(0, len(dims) - 1))] = data.draw(st.integers(-1, 130))
        return dataclasses.replace(t, shape=tuple(dims))
    if change == "rank":
        return dataclasses.replace(t, shape=t.shape + (1,) if data.draw(st.booleans())
                                   else t.shape[:-1])
    if change == "dtype":
        return dataclasses.replace(t, dtype=data.draw(st.sampled_from(list(DType))))
    return dataclasses.replace(t, status=data.draw(st.sampled_from(list(TensorStatus))))


@given(st.data())
def test_ingest_mutated_workload_streams_same_error(data):
    """One field of one op of a workload stream changed (a tensor's id, a dim, its rank,
    dtype or status, an axis, a scalar, two ops swapped): the same first error."""
    import dataclasses

    from refimpl.ir import OperationIr, TensorIr
    from refimpl.stream import Stream

    stream = _WORKLOAD_STREAMS[data.draw(st.sampled_from(sorted(_WORKLOAD_STREAMS)))]
    items = list(stream.items)
    at = data.draw(st.integers(0, len(items) - 1))
    item, change = items[at], data.draw(_CHANGES)
    if change == "swap":
        other = data.draw(st.integers(0, len(items) - 1))
        items[at], items[other] = items[other], items[at]
    elif isinstance(item, OperationIr):
        desc = item.desc
        fields = [f.name for f in dataclasses.fields(desc)]
        name = data.draw(st.sampled_from(fields))
        value = getattr(desc, name)
        if isinstance(value, TensorIr) and change not in ("int", "scalar"):
            value = _changed_tensor(value, change, data)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = data.draw(st.one_of(st.integers(-3, 5), st.floats(-2, 2), st.booleans()))
        else:
            return
        items[at] = OperationIr(item.op, dataclasses.replace(desc, **{name: value}))
    else:
        return
    changed = Stream(stream.inputs, tuple(items))
    results = []
    for check in (fast_validate.validate_stream, ref_validate.validate_stream):
        try:
            check(changed)
            results.append(None)
        except errors.StreamError as exc:
            results.append((type(exc), exc.op_index, exc.field, str(exc)))
    assert results[0] == results[1]


def _inputs_doc(inputs: dict) -> dict:
    """A small document over ``inputs``: every input read once, then dropped."""
    ops = [{"op": "Drop", "tensor": {"id": int(key), "shape": spec.get("shape"),
                                     "dtype": spec.get("dtype"), "status": "ReadWrite"}}
           for key, spec in inputs.items() if isinstance(spec, dict)]
    return {"version": 1, "inputs": inputs, "ops": ops}


@pytest.mark.parametrize("inputs", [
    {"10": {"shape": [2, 3], "dtype": "f32", "random": 1},
     "2": {"shape": [4], "dtype": "i32", "random": 0}},  # ids out of order
    {"0": {"random": 5, "dtype": "f16", "shape": [2, 2]},  # keys in another order
     "1": {"shape": [2, 2], "dtype": "f32", "data": [[1.0, 2.0], [3.0, 4.0]]},
     "2": {"shape": [2, 2], "dtype": "bool", "strides": [1, 2], "random": 3}},
    {"0": {"shape": [2, 2], "dtype": "f32", "data": [[1, 2], [3, 4]], "random": 1}},
    {"0": {"shape": [2, 2], "dtype": "f32"}},  # neither data nor random
    {"0": {"shape": [2, 2], "dtype": "f32", "random": -1}},
    {"0": {"shape": [2, 2], "dtype": "f32", "random": 1.0}},
    {"0": {"shape": [2, 2], "dtype": "f32", "random": None}},
    {"0": {"shape": [2, 2], "dtype": "f32", "random": 2**70}},
    {"0": {"shape": [2, -2], "dtype": "f32", "random": 0}},
    {"0": {"shape": [2, 2], "dtype": "f33", "random": 0}},
    {"0": {"shape": [2, 2], "dtype": "f32", "strides": [1], "random": 0}},
    {"0": {"shape": [2, 2], "dtype": "f32", "random": 0, "extra": 1}},
    {"01": {"shape": [2], "dtype": "f32", "random": 0}},
    {"18446744073709551616": {"shape": [2], "dtype": "f32", "random": 0}},
    {"0": [2, 2]},
])
def test_ingest_inputs_table_same_outcome(inputs):
    """The typed read of ``inputs`` and its typed check: refimpl's stream or error."""
    assert_same(json.dumps(_inputs_doc(inputs)))


def test_ingest_inputs_duplicate_key_same_error():
    text = ('{"version": 1, "inputs": {"0": {"shape": [2], "dtype": "f32", "random": 0}, '
            '"0": {"shape": [2], "dtype": "f32", "random": 1}}, "ops": []}')
    assert_same(text)


@pytest.mark.parametrize("enabled", [True, False])
def test_ingest_leaves_the_collector_as_it_found_it(enabled):
    """Reading and checking pause the cyclic collector and restore its state, errors
    included."""
    import gc

    good = stream_to_json(build("mixed", 60))
    bad = good.replace('"ReadWrite"', '"ReadOnly"', 1)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        for text in (good, bad, "{"):
            try:
                fast_stream.stream_from_json(text)
            except errors.StreamError:
                pass
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


@given(st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(st.integers(0, 10**9), st.integers(0, 10**9), st.booleans()).map(
        lambda t: f"{'-' if t[2] else ''}{t[0]}.{t[1]}"),
    st.sampled_from(["0.5", "-0.0", "1.0", "0.044715", "1e-05", "2.5E+3", "123456789012345.6",
                     "0.1234567890123456789", "9007199254740993.0", "-7"])))
def test_ingest_scalar_spellings_same_value(token):
    """A float scalar, however spelt, is the float refimpl reads (short decimals are read
    without CPython's dtoa)."""
    doc = {"version": 1, "inputs": {"0": {"shape": [2], "dtype": "f32", "random": 0}},
           "ops": [{"op": "NumericFloat.MulScalar", "lhs": {"id": 0, "shape": [2], "dtype": "f32",
                                                            "status": "ReadWrite"},
                    "rhs": 0.0, "out": {"id": 1, "shape": [2], "dtype": "f32",
                                        "status": "NotInit"}}]}
    text = json.dumps(doc).replace("0.0,", f"{token},", 1)
    assert_same(text)
    fast = fast_stream.stream_from_json(text, validate=False).items[0].desc.rhs
    ref = ref_stream.stream_from_json(text, validate=False).items[0].desc.rhs
    assert repr(fast) == repr(ref)
