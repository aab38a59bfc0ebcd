"""refimpl.data: the documented random generator, inline data, strided buffers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.data import (_disjoint_by_strides, buffer_length, contiguous_strides,
                          element_offsets, logical_values, random_values, read_strided,
                          sentinel, strided_buffer)
from refimpl.dtypes import DType
from refimpl.errors import InputDataError, StrideError
from refimpl.stream import InputSpec

ALL_DTYPES = list(DType)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.value)
def test_random_values_follows_documented_generator(dtype):
    rng = np.random.default_rng(11)
    raw = {
        "f": lambda: rng.uniform(-2.0, 2.0, size=(3, 5)),
        "i": lambda: rng.integers(-8, 9, size=(3, 5)),
        "u": lambda: rng.integers(0, 17, size=(3, 5)),
        "b": lambda: rng.integers(0, 2, size=(3, 5)) == 1,
    }[dtype.numpy.kind]()
    got = random_values((3, 5), dtype, 11)
    assert got.dtype == dtype.numpy
    assert got.tobytes() == raw.astype(dtype.numpy).tobytes()


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.value)
def test_random_values_deterministic_and_in_range(dtype):
    a, b = random_values((64,), dtype, 3), random_values((64,), dtype, 3)
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != random_values((64,), dtype, 4).tobytes()
    low, high = {"f": (-2, 2), "i": (-8, 8), "u": (0, 16), "b": (0, 1)}[dtype.numpy.kind]
    assert low <= a.min() and a.max() <= high


def test_random_values_scalar_and_empty_shapes():
    assert random_values((), DType.F32, 1).shape == ()
    assert random_values((0, 4), DType.I32, 1).shape == (0, 4)


def test_logical_values_from_data_keeps_values_and_dtype():
    spec = InputSpec(shape=(2, 2), dtype=DType.F16, data=[[0.1, 1.0], [2, -3]])
    got = logical_values(spec)
    assert got.dtype == np.float16
    assert got.tolist() == np.array([[0.1, 1.0], [2, -3]], dtype=np.float16).tolist()


def test_logical_values_from_random_uses_the_generator():
    spec = InputSpec(shape=(4,), dtype=DType.U8, random=5)
    assert logical_values(spec).tobytes() == random_values((4,), DType.U8, 5).tobytes()


@pytest.mark.parametrize("spec", [
    InputSpec(shape=(2, 2), dtype=DType.F32, data=[[1.0, 2.0]]),  # wrong shape
    InputSpec(shape=(2, 2), dtype=DType.F32, data=[[1.0, 2.0], [3.0]]),  # ragged
    InputSpec(shape=(2,), dtype=DType.I8, data=[1, 300]),  # out of range
    InputSpec(shape=(2,), dtype=DType.I32, data=[1.5, 2.0]),  # floats for an int
    InputSpec(shape=(2,), dtype=DType.F32, data=[True, False]),  # bools for a float
    InputSpec(shape=(2,), dtype=DType.BOOL, data=[1, 0]),  # ints for a bool
    InputSpec(shape=(2,), dtype=DType.F32),  # neither data nor random
    InputSpec(shape=(2,), dtype=DType.F32, data=[1.0, 2.0], random=3),  # both
], ids=["shape", "ragged", "range", "float-for-int", "bool-for-float", "int-for-bool",
        "neither", "both"])
def test_logical_values_rejects_bad_data(spec):
    with pytest.raises(InputDataError) as info:
        logical_values(spec, tensor_id=7)
    assert info.value.field.startswith("inputs.7.")


def test_logical_values_empty_data():
    spec = InputSpec(shape=(2, 0), dtype=DType.I32, data=[[], []])
    assert logical_values(spec).shape == (2, 0)


def test_contiguous_strides_row_major():
    assert contiguous_strides((4, 6)) == (6, 1)
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    assert contiguous_strides(()) == ()


LAYOUTS = [
    ((4, 6), (6, 1)),  # contiguous
    ((4, 6), (1, 4)),  # transposed
    ((6, 4), (1, 6)),  # the SPEC example
    ((4, 6), (8, 1)),  # padded rows
    ((2, 3, 4), (1, 2, 6)),  # permuted
    ((1, 5, 1), (999, 1, 7)),  # size-1 dims with odd strides
    ((3, 1), (5, 13)),
    ((0, 3), (3, 1)),  # zero-size
    ((3, 0), (7, 1)),
    ((), ()),  # scalar
]


@pytest.mark.parametrize("shape,strides", LAYOUTS, ids=str)
@pytest.mark.parametrize("dtype", [DType.F32, DType.I16, DType.U8, DType.BOOL],
                         ids=lambda d: d.value)
def test_strided_buffer_round_trip(shape, strides, dtype):
    values = random_values(shape, dtype, 2)
    buffer = strided_buffer(values, strides)
    assert buffer.ndim == 1 and buffer.dtype == dtype.numpy
    assert buffer.size == buffer_length(shape, strides)
    back = read_strided(buffer, shape, strides)
    assert back.shape == shape and back.flags.c_contiguous
    assert back.tobytes() == values.tobytes()


def test_buffer_length_formula():
    assert buffer_length((4, 6), (1, 4)) == 1 + 3 * 1 + 5 * 4
    assert buffer_length((1, 5, 1), (999, 1, 7)) == 5
    assert buffer_length((0, 3), (3, 1)) == 0
    assert buffer_length((), ()) == 1


@pytest.mark.parametrize("dtype", [DType.F16, DType.I32, DType.U16, DType.BOOL],
                         ids=lambda d: d.value)
def test_strided_buffer_padding_holds_sentinel(dtype):
    values = np.zeros((2, 3), dtype=dtype.numpy)
    buffer = strided_buffer(values, (5, 1))  # two padding slots after row 0
    assert buffer.size == 8
    pad = buffer[[3, 4]]
    if dtype.is_float:
        assert np.isnan(pad).all()
    else:
        assert (pad == sentinel(dtype)).all() and pad[0] != 0 and pad[0] == pad[1]
    assert (buffer[[0, 1, 2, 5, 6, 7]] == 0).all()


def test_read_strided_transposed_layout():
    buffer = np.arange(24, dtype=np.float32)
    view = read_strided(buffer, (6, 4), (1, 6))
    assert view.tolist() == np.arange(24, dtype=np.float32).reshape(4, 6).T.tolist()


def test_element_offsets_match_strides():
    offsets = element_offsets((2, 3), (1, 2))
    assert offsets.tolist() == [[0, 2, 4], [1, 3, 5]]


@pytest.mark.parametrize("shape,strides", [((2, 2), (1, 1)), ((3,), (0,)), ((2, 2), (-1, 1)),
                                           ((2, 2), (1,))], ids=str)
def test_strided_buffer_rejects_bad_strides(shape, strides):
    with pytest.raises(StrideError):
        strided_buffer(np.zeros(shape, dtype=np.float32), strides)


def test_read_strided_rejects_short_buffer():
    with pytest.raises(StrideError):
        read_strided(np.zeros(5, dtype=np.float32), (2, 3), (3, 1))


@st.composite
def _layouts(draw):
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    order = draw(st.permutations(range(rank)))
    strides, step = [0] * rank, 1
    for axis in reversed(order):  # dense in a permuted order, with optional padding
        strides[axis] = step
        step *= max(shape[axis], 1) + draw(st.integers(0, 2))
    return shape, tuple(strides)


@given(_layouts(), st.sampled_from([DType.F32, DType.I64, DType.BOOL]))
def test_strided_buffer_round_trip_any_layout(layout, dtype):
    shape, strides = layout
    assert _disjoint_by_strides(shape, strides)  # dense layouts take the fast path
    values = random_values(shape, dtype, 9)
    buffer = strided_buffer(values, strides)
    assert read_strided(buffer, shape, strides).tobytes() == values.tobytes()
    mapped = np.zeros(buffer.size, dtype=bool)
    mapped[element_offsets(shape, strides)] = True
    if dtype is DType.F32:
        assert np.isnan(buffer[~mapped]).all()


@st.composite
def _any_layouts(draw):
    rank = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=rank, max_size=rank)))
    strides = tuple(draw(st.lists(st.integers(0, 12), min_size=rank, max_size=rank)))
    return shape, strides


@given(_any_layouts())
def test_stride_proof_agrees_with_the_exact_aliasing_check(layout):
    """The fast proof never accepts aliasing strides, and strided_buffer rejects exactly the
    layouts where two elements share an offset."""
    shape, strides = layout
    offsets = element_offsets(shape, strides)
    distinct = np.unique(offsets).size == offsets.size
    if _disjoint_by_strides(shape, strides):
        assert distinct
    values = random_values(shape, DType.I32, 4)
    if distinct:
        buffer = strided_buffer(values, strides)
        assert read_strided(buffer, shape, strides).tobytes() == values.tobytes()
    else:
        with pytest.raises(StrideError, match="share memory"):
            strided_buffer(values, strides)


@pytest.mark.parametrize("shape,strides,proven,aliases", [
    ((4, 6), (6, 1), True, False),
    ((4, 6), (1, 4), True, False),
    ((1, 5, 1), (0, 1, 0), True, False),  # size-1 dims never alias
    ((2, 3), (3, 2), False, False),  # odd and even offsets: disjoint, not provable by order
    ((2, 3), (2, 1), False, True),
], ids=str)
def test_stride_proof_examples(shape, strides, proven, aliases):
    assert _disjoint_by_strides(shape, strides) is proven
    values = np.zeros(shape, dtype=np.float32)
    if aliases:
        with pytest.raises(StrideError):
            strided_buffer(values, strides)
    else:
        assert strided_buffer(values, strides).size == buffer_length(shape, strides)
