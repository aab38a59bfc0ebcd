"""The bad-input catalogue (SPEC §8): each malformed stream → its error class, op index, field.

Every entry is a small JSON document (or text) that is wrong in exactly one way. One test
body is parametrized over the catalogue (ids = kind names); further tests check that the
messages name the op index and field, that the Python path (``validate_stream`` on a stream
parsed without validation) reports the same error, and that every error class is exercised.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl import errors
from refimpl.dtypes import DType
from refimpl.liveness import with_liveness
from refimpl.stream import InputSpec, stream_from_json, stream_to_json
from refimpl.validate import validate_stream
from tests.refimpl.helpers import (BASES, CATALOGUE, PY_CATALOGUE, O, T, add, as_source, doc,
                                   drop, mutate, py_stream, unary)

IDS = [entry[0] for entry in CATALOGUE]


@pytest.mark.parametrize(("kind", "src", "cls", "op_index", "field"), CATALOGUE, ids=IDS)
def test_bad_input_raises_typed_error(kind, src, cls, op_index, field):
    with pytest.raises(errors.StreamError) as info:
        stream_from_json(as_source(src))
    err = info.value
    assert type(err) is cls, f"{kind}: {type(err).__name__}: {err}"
    assert (err.op_index, err.field) == (op_index, field), f"{kind}: {err}"


@pytest.mark.parametrize(("kind", "src", "cls", "op_index", "field"), CATALOGUE, ids=IDS)
def test_bad_input_message_names_op_index_and_field(kind, src, cls, op_index, field):
    with pytest.raises(cls) as info:
        stream_from_json(as_source(src))
    message = str(info.value)
    if op_index is not None:
        assert message.startswith(f"op {op_index}"), message
    if field is not None:
        assert repr(field) in message, message
    assert info.value.reason in message


@pytest.mark.parametrize(("kind", "src", "cls", "op_index", "field"), CATALOGUE, ids=IDS)
def test_bad_input_python_path_matches_json_path(kind, src, cls, op_index, field):
    """Where the document parses, validate_stream on the Stream reports the same error."""
    try:
        stream = stream_from_json(as_source(src), validate=False)
    except errors.StreamError as err:
        assert type(err) is cls
        return
    with pytest.raises(errors.StreamError) as info:
        validate_stream(stream)
    assert (type(info.value), info.value.op_index, info.value.field) == (cls, op_index, field)


def test_bad_input_catalogue_covers_every_stream_error_class():
    stream_errors = {c for c in vars(errors).values()
                     if isinstance(c, type) and issubclass(c, errors.StreamError)
                     and c is not errors.StreamError}
    assert stream_errors <= {entry[2] for entry in CATALOGUE}


def test_bad_input_catalogue_is_large_and_named_uniquely():
    assert len(CATALOGUE) >= 30
    assert len(set(IDS)) == len(IDS)


def test_bad_input_valid_baseline_passes():
    """The builders make valid streams: each catalogue entry is wrong in its one way only."""
    stream_from_json(json.dumps(doc([add(), unary("Float.Exp", T(2), O(3)), drop(0),
                                      {"op": "Sync", "tensors": [3, 1]}])))


# --- mutation fuzzing: nothing but StreamError, whatever the document ----------------------

@given(st.data())
def test_bad_input_mutated_streams_raise_only_stream_errors(data):
    obj = copy.deepcopy(data.draw(st.sampled_from(BASES)))
    for _ in range(data.draw(st.integers(1, 3))):
        mutate(obj, data)
    text = json.dumps(obj)
    for run in (lambda: _round_trip(text),
                lambda: validate_stream(stream_from_json(text, validate=False)),
                lambda: with_liveness(stream_from_json(text, validate=False))):
        try:
            run()
        except errors.StreamError:
            pass


def _round_trip(text: str) -> None:
    """A stream that parses has a canonical text that is a fixed point."""
    stream = stream_from_json(text)
    canonical = stream_to_json(stream)
    assert stream_from_json(canonical) == stream
    assert stream_to_json(stream_from_json(canonical)) == canonical


# --- the Python form: validate_stream on streams built without the parser ------------------

@pytest.mark.parametrize(("kind", "stream", "cls", "op_index", "field"), PY_CATALOGUE,
                         ids=[entry[0] for entry in PY_CATALOGUE])
def test_bad_input_python_streams_raise_typed_errors(kind, stream, cls, op_index, field):
    with pytest.raises(errors.StreamError) as info:
        validate_stream(stream)
    assert (type(info.value), info.value.op_index, info.value.field) == (cls, op_index, field)


def test_bad_input_python_stream_with_numpy_data_is_valid():
    stream = py_stream(inputs={0: InputSpec((2, 3), DType.F32, data=np.ones((2, 3), np.float32))})
    validate_stream(stream)
    assert '"data": [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]' in stream_to_json(stream)


def test_bad_input_fuzz_bases_are_valid():
    for base in BASES:
        stream_from_json(json.dumps(base))
