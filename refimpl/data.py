"""Input data: the stream inputs (``InputSpec``), their logical values and the strided
buffers that hold them.

burn counterpart: ``TensorData`` (``crates/burn-tensor/src/tensor/data.rs``) for the values,
and the handle/strides pair a cubecl buffer is read through for the layout. The random
generator is fuselab's own and normative (``docs/stream-format.md``):

==========  ==============================================================
dtype       generator (``rng = numpy.random.default_rng(seed)``)
==========  ==============================================================
float       ``rng.uniform(-2.0, 2.0, size=shape)``, then cast
signed int  ``rng.integers(-8, 9, size=shape)``, then cast
unsigned    ``rng.integers(0, 17, size=shape)``, then cast
bool        ``rng.integers(0, 2, size=shape) == 1``
==========  ==============================================================

A strided buffer is a flat array of ``1 + sum((shape[i] - 1) * strides[i])`` elements (0 when
the tensor is empty). Element ``idx`` of the logical tensor lives at ``sum(idx[i] *
strides[i])``; every other position holds a sentinel (NaN for floats, the dtype's maximum for
ints, ``True`` for bool) so that wrong index math shows up in results.

numpy is imported by the functions that make values, not with the module: ``InputSpec`` and
the layout arithmetic serve the planner, which needs no values.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import InputDataError, StrideError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "InputSpec",
    "random_values",
    "logical_values",
    "contiguous_strides",
    "buffer_length",
    "element_offsets",
    "sentinel",
    "strided_buffer",
    "read_strided",
]


@dataclass(frozen=True, slots=True)
class InputSpec:
    """A tensor that exists before the stream starts.

    Its logical values come from ``data`` (nested lists in the tensor's shape, kept as given)
    or from ``random`` (a seed for the documented generator, ``random_values`` below).
    ``strides`` (in elements) say how its buffer lays those values out; ``None`` means
    contiguous row-major.
    """

    shape: tuple[int, ...]
    dtype: DType
    strides: tuple[int, ...] | None = None
    data: Any = field(default=None, compare=True)
    random: int | None = None


# --- random inputs --------------------------------------------------------------------------


def _random_float(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.uniform(-2.0, 2.0, size=shape)


def _random_int(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-8, 9, size=shape)


def _random_uint(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 17, size=shape)


def _random_bool(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(0, 2, size=shape) == 1


# by numpy kind: float, signed int, unsigned int, bool
_GENERATORS = {"f": _random_float, "i": _random_int, "u": _random_uint, "b": _random_bool}


def random_values(shape: Sequence[int], dtype: DType, seed: int) -> np.ndarray:
    """The documented deterministic generator: same (shape, dtype, seed) → same bits."""
    import numpy as np

    rng = np.random.default_rng(seed)
    raw = _GENERATORS[dtype.numpy.kind](rng, tuple(shape))
    return np.array(raw.astype(dtype.numpy), order="C", copy=None)


# --- inline data ----------------------------------------------------------------------------

# numpy kinds an inline ``data`` array may have for each dtype class (ints are exact only).
_ACCEPTED_KINDS = {
    DTypeClass.FLOAT: "fiu",
    DTypeClass.INT: "iu",
    DTypeClass.BOOL: "b",
}


def _field(tensor_id: int | None, key: str) -> str:
    return f"inputs.{tensor_id}.{key}" if tensor_id is not None else key


def _data_values(spec: InputSpec, tensor_id: int | None) -> np.ndarray:
    import numpy as np

    field = _field(tensor_id, "data")
    try:
        raw = np.array(spec.data)
    except (ValueError, OverflowError) as exc:
        raise InputDataError(f"data is not a rectangular array of numbers ({exc})",
                             field=field) from None
    if raw.shape != tuple(spec.shape):
        raise InputDataError(f"data has shape {list(raw.shape)}, expected {list(spec.shape)}",
                             field=field)
    if raw.size and raw.dtype.kind not in _ACCEPTED_KINDS[spec.dtype.cls]:
        raise InputDataError(f"data holds {raw.dtype.name} values, not valid for "
                             f"{spec.dtype.value}", field=field)
    if raw.size and spec.dtype.is_int:
        info = np.iinfo(spec.dtype.numpy)
        low, high = int(raw.min()), int(raw.max())
        if low < info.min or high > info.max:
            raise InputDataError(f"data values [{low}, {high}] do not fit "
                                 f"{spec.dtype.value}", field=field)
    return np.array(raw.astype(spec.dtype.numpy), order="C", copy=None)


def logical_values(spec: InputSpec, tensor_id: int | None = None) -> np.ndarray:
    """The input's logical values (contiguous, the spec's shape and dtype).

    From inline ``data`` (nested lists, checked against shape and dtype) or from ``random``
    (``random_values``). ``tensor_id`` only names the input in error messages.
    """
    has_data, has_random = spec.data is not None, spec.random is not None
    if has_data == has_random:
        which = "both" if has_data else "neither"
        raise InputDataError(f"an input needs exactly one of 'data' and 'random', got {which}",
                             field=_field(tensor_id, "data"))
    if has_random:
        return random_values(spec.shape, spec.dtype, spec.random)
    return _data_values(spec, tensor_id)


# --- strided layouts ------------------------------------------------------------------------


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides: each is the product of the dims to its right (burn-std).

    A zero-size dim makes every stride left of it 0. The one definition: the planner's
    layout rules (``refimpl.planner.launch.layout`` re-exports it) and the buffers use it alike."""
    strides = [0] * len(shape)
    current = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = current
        current *= shape[i]
    return tuple(strides)


def buffer_length(shape: Sequence[int], strides: Sequence[int]) -> int:
    """Elements a buffer needs: ``1 + sum((shape[i]-1) * strides[i])``, 0 when empty."""
    if any(d == 0 for d in shape):
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides))


def element_offsets(shape: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """An int64 array of ``shape``: the buffer offset of every logical element."""
    import numpy as np

    if len(shape) != len(strides):
        raise StrideError(f"{len(strides)} strides for a rank-{len(shape)} tensor",
                          field="strides")
    if any(s < 0 for s in strides):
        raise StrideError(f"negative stride in {list(strides)}", field="strides")
    offsets = np.zeros(tuple(shape), dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(shape, strides)):
        steps = np.arange(size, dtype=np.int64) * stride
        offsets += steps.reshape((size,) + (1,) * (len(shape) - axis - 1))
    return offsets


def sentinel(dtype: DType) -> Any:
    """The value padding positions hold: NaN, the int maximum, or True."""
    import numpy as np

    if dtype.cls is DTypeClass.FLOAT:
        return np.nan
    if dtype.cls is DTypeClass.INT:
        return np.iinfo(dtype.numpy).max
    return True


@functools.cache
def _dtype_by_numpy() -> dict:
    """numpy dtype -> the stream dtype it holds."""
    return {dtype.numpy: dtype for dtype in DType}


def _dtype_of(values: np.ndarray) -> DType:
    if values.dtype not in _dtype_by_numpy():
        raise InputDataError(f"no stream dtype holds numpy {values.dtype}")
    return _dtype_by_numpy()[values.dtype]


def strided_buffer(values: np.ndarray, strides: Sequence[int] | None = None) -> np.ndarray:
    """A flat buffer laying out ``values`` with ``strides`` (default: contiguous).

    Positions no element maps to hold ``sentinel(dtype)``. Strides that make two elements
    share a position raise ``StrideError``.
    """
    import numpy as np

    shape = values.shape
    strides = contiguous_strides(shape) if strides is None else tuple(strides)
    offsets = element_offsets(shape, strides)
    buffer = np.full(buffer_length(shape, strides), sentinel(_dtype_of(values)),
                     dtype=values.dtype)
    if values.size and not _disjoint_by_strides(shape, strides):
        seen = np.zeros(buffer.size, dtype=bool)  # the exact check: distinct positions
        seen[offsets] = True
        if np.count_nonzero(seen) != values.size:
            raise StrideError(f"strides {list(strides)} make elements of shape {list(shape)} "
                              "share memory", field="strides")
    buffer[offsets] = values
    return buffer


def _disjoint_by_strides(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """True when the strides alone prove that no two elements share a position.

    Taking the dims of size > 1 by increasing stride, each stride must be at least the extent
    (``buffer_length``) of the dims before it: then two indices that differ first (from the
    largest stride down) in some dim land at offsets that differ by at least that stride,
    more than the lower dims can make up. Contiguous and permuted or padded dense layouts
    pass; ``False`` only means "not proven" (the exact check in ``strided_buffer`` decides).
    """
    extent = 1
    for stride, size in sorted((s, d) for d, s in zip(shape, strides) if d > 1):
        if stride < extent:
            return False
        extent += (size - 1) * stride
    return True


def read_strided(buffer: np.ndarray, shape: Sequence[int],
                 strides: Sequence[int] | None = None) -> np.ndarray:
    """The logical (contiguous) tensor a strided ``buffer`` holds."""
    import numpy as np

    shape = tuple(shape)
    strides = contiguous_strides(shape) if strides is None else tuple(strides)
    needed = buffer_length(shape, strides)
    if buffer.ndim != 1 or buffer.size < needed:
        raise StrideError(f"buffer of {buffer.size} elements is too small for shape "
                          f"{list(shape)} with strides {list(strides)} ({needed} needed)",
                          field="strides")
    return np.array(buffer[element_offsets(shape, strides)], order="C", copy=None)
