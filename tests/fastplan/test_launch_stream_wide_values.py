"""Launch planning past the values fastplan's launch passes read in place: each gives
refimpl's answer.

The launch passes read one-digit ints (below 2**30) where CPython keeps them and hold a
launch's bindings in C arrays of a fixed size; anything else takes the general path:

* tensor ids past one digit and past int64 (up to 2**64 - 1): the extents guard's live
  entries and the memo's records (``fastplan.launch.launch_memo._handles_of`` / ``_record``, by
  the live-table keys ``_push_state`` read);
* dims past one digit (``fastplan.launch.layout.dims_load``, the outputs' order's sums, the extents
  guard);
* a launch with more outputs than the outputs' order sorts in C (16) and more bindings than
  the vector-size pass keeps on the stack (32), with outputs of equal shape sums (the order
  keeps their positions).
"""

from __future__ import annotations

import pytest

import fastplan

if not fastplan.COMPILED:
    pytest.skip("fastplan is not compiled", allow_module_level=True)

from refimpl.devices import PRESETS  # noqa: E402
from refimpl.frontend import Session  # noqa: E402
from refimpl.stream import Stream  # noqa: E402

from fuselab.workloads import build, shifted  # noqa: E402
from tests.fastplan.helpers import (  # noqa: E402
    check_fast_outcomes, fast_plan_launched, reference,
)

DEVICES = tuple(sorted(PRESETS))


def _check(stream: Stream, device: str) -> None:
    profile = PRESETS[device]
    check_fast_outcomes(stream, profile)
    expected = reference(stream, profile)
    if expected[0] == "ok":
        assert tuple(fast_plan_launched(stream, profile)) == tuple(expected[1])


@pytest.mark.parametrize("offset", [2**30, 2**40, 2**63 - 7, 2**63 + 5],
                         ids=["digit", "2**40", "int64-edge", "past-int64"])
def test_launch_ids_past_one_digit_match_refimpl(offset: int) -> None:
    """The transformer's first block with every tensor id moved by ``offset``."""
    _check(shifted(build("transformer", 1), offset), "metal")


def _wide_dims(shape) -> Stream:
    s = Session(executor=None)
    a = s.random(shape, seed=0)
    b = s.random(shape, seed=1)
    y = ((a.move() * 2.0 + b).exp() + 1.0).swap_dims(0, 1)
    z = (b.move() * 3.0).exp()
    s.sync(y, z)
    return s.close()


@pytest.mark.parametrize("shape", [(2**31, 2), (3, 2**30), (2**30 - 1, 4)],
                         ids=["2**31", "2**30", "one-digit"])
@pytest.mark.parametrize("device", DEVICES)
def test_launch_dims_past_one_digit_match_refimpl(shape, device: str) -> None:
    _check(_wide_dims(shape), device)


def _many_outputs(count: int, shared: bool) -> Stream:
    """``count`` elementwise outputs of one input (``shared``: one fused step with every
    output, where the device's bindings allow it) or alternately of two inputs of shapes
    (4, 8) and (8, 4) (equal shape sums: the order's ties), all synced."""
    s = Session(executor=None)
    a = s.random((4, 8), seed=0)
    b = s.random((8, 4), seed=1)
    outs = []
    for k in range(count):
        source = a if shared or k % 2 == 0 else b
        outs.append((source * float(k + 1)).exp())
    s.sync(*outs)
    return s.close()


@pytest.mark.parametrize("shared", [True, False], ids=["one-input", "two-inputs"])
@pytest.mark.parametrize("count", [3, 17, 40])
@pytest.mark.parametrize("device", ["cuda", "metal"])
def test_launch_many_bindings_match_refimpl(count: int, device: str, shared: bool) -> None:
    _check(_many_outputs(count, shared), device)
