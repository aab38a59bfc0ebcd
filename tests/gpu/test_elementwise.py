"""Every element-wise op of the expression table, on the GPU, against the numpy oracle.

One test body (JAX ``OpRecord`` style) parametrized over every (op, dtype, output dtype) the
table supports; hypothesis draws the shape, the layout (dense, broadcast, transposed/padded
strides) and a seed for the values, which stay finite and inside the op's domain.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl import ir
from refimpl.dtypes import DType
from tests.gpu.cases import elementwise_cases
from tests.gpu.helpers import run_case

CASES = elementwise_cases()
LAYOUTS = ("dense", "broadcast", "strided")
# Each example costs a few dispatches and readbacks on lavapipe: keep the many cases cheap.
CHEAP = settings(max_examples=min(settings().max_examples, 16))


def _operand_dtypes(op: ir.OperationIr) -> list[DType]:
    return [t.dtype for t in op.inputs()]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@CHEAP
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 6)),
       layout=st.sampled_from(LAYOUTS), perm=st.permutations([0, 1, 2]),
       pad=st.integers(0, 2))
def test_elementwise_matches_numpy(gpu_device, case, seed, shape, layout, perm, pad):
    if DType.F16 in (case.dtype, case.out) and not gpu_device.has_f16:
        pytest.skip("no shader-f16")
    run_case(gpu_device, case, seed, shape, layout, perm, pad)
