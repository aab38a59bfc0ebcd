"""GPU ≈ interpreter on random streams: every plan step run on the WebGPU adapter (lavapipe in
CI) agrees with refimpl's interpreter within the per-op WGSL accuracy bounds accumulated along
each tensor's chain (``gpu.check.agreement``).

Streams come from ``refimpl.strategies.streams`` mapped onto the dtypes WGSL has
(``wgsl_stream``: f64 → f32, 64/16/8-bit ints → 32-bit), planned once for the adapter's
profile; the interpreter and the GPU executor then run the same executed steps. The number of
streams is the hypothesis profile's (``ci``: 200, about 15 s on lavapipe with 2 cores), for
``streams()`` and again for ``matmul_streams()`` (matmuls with epilogues; each stream's fused
matmuls run as a drawn form of ``gpu.runtime.fused_matmul``, the fallback included).

Documented classes of differences, reported as hypothesis events, never failures:

* non-finite: an element whose chain holds a NaN or an infinity (WGSL lets implementations
  assume neither exists). Default inputs are finite; ``Log``/``Sqrt``/``Div`` still make some.
  ``test_gpu_nonfinite_inputs_are_a_class_not_a_crash`` injects NaN/±inf into the inputs: a
  few streams by default, the profile's count with ``FUSELAB_FUZZ_NONFINITE=1``;
* unbounded: no accuracy bound applies (``sin`` outside [-π, π], a comparison or ``argmax``
  decided by a rounding difference).

Both tiers of the fused element-wise path run the property (``FUSELAB_TIERS``:
``specialised-only`` and ``tier0-only``, ``gpu.runtime.tiers``).

Where the interpreter refuses a launch (``KernelError``: a misaligned vector access, an
access outside a binding), the GPU executor either refuses it the same way or runs (a
Matmul/Reduce fallback path the interpreter did not take, or WGSL's robust buffer access) and
then agrees with the eager oracle (recorded as an event).
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st

from refimpl.data import logical_values
from refimpl.eager import run_stream
from refimpl.fused_kernel import KernelError
from refimpl.interpreter import Interpreter, executed_steps
from refimpl.strategies import matmul_streams, streams
from refimpl.strategies.coverage import stream_classes
from refimpl.stream import InputSpec, Stream
from gpu.check.agreement import compare, wgsl_stream
from gpu.runtime.fused_matmul import CANDIDATES
from tests.differential.helpers import pinned

pytestmark = pytest.mark.gpu

NONFINITE = os.environ.get("FUSELAB_FUZZ_NONFINITE", "") not in ("", "0")
_SLOW_OK = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


TIERS = ("specialised-only", "tier0-only")


@contextmanager
def _tiers(mode: str):
    """``FUSELAB_TIERS=mode`` inside the block (hypothesis forbids function-scoped fixtures)."""
    before = os.environ.get("FUSELAB_TIERS")
    os.environ["FUSELAB_TIERS"] = mode
    try:
        yield
    finally:
        if before is None:
            del os.environ["FUSELAB_TIERS"]
        else:
            os.environ["FUSELAB_TIERS"] = before


@pytest.fixture(scope="module")
def device(gpu_adapter):
    from gpu.runtime.device import default_device

    return default_device()


def _check(device, stream: Stream, nonfinite: bool = False, matmul_form: str | None = None):
    from gpu.runtime.executor import GpuExecutor

    def gpu_run(profile, executed):
        executor = GpuExecutor(stream, device, profile)
        executor.matmul_form = matmul_form
        got = executor.run(executed)
        paths = sorted({r.path for r in executor.records
                        if r.step is not None and r.step.fuser == "Matmul"})
        event(f"Matmul steps: {', '.join(paths) or 'none'}")
        for tier in sorted({t for r in executor.records for t in r.tiers}):
            event(f"blocks run on {tier}")
        return got

    note(stream.to_json())
    profile, executed = executed_steps(stream, device.profile())
    for name in stream_classes(stream, executed):
        event(f"class: {name}")
    try:
        expected = Interpreter(stream, profile).run(executed)
    except KernelError as exc:
        # The GPU refuses the same way, or (running a fallback path the interpreter did not,
        # or under WGSL's robust buffer access) runs and must then agree with eager.
        event(f"interpreter refused: {str(exc).split(':')[0]}")
        try:
            got = gpu_run(profile, executed)
        except KernelError as gpu_exc:
            assert str(gpu_exc).split(":")[0] == str(exc).split(":")[0]
            return
        expected = run_stream(stream)
    else:
        got = gpu_run(profile, executed)
    agreement = compare(stream, expected, got, nonfinite=nonfinite)
    tensors = agreement.tensors
    event(f"non-finite elements: {'some' if any(t.nonfinite for t in tensors) else 'none'}")
    event(f"unbounded elements: {'some' if any(t.unbounded for t in tensors) else 'none'}")
    if nonfinite:
        differ = any(t.nonfinite_differ for t in tensors)
        event(f"non-finite elements that differ: {'some' if differ else 'none'}")
    assert agreement.ok, agreement.summary()


@_SLOW_OK
@given(stream=streams())
@example(stream=pinned("broadcast_input_and_swap_view"))
@example(stream=pinned("empty_nonleading_dim"))
@example(stream=pinned("cat_empty_operand"))
@example(stream=pinned("size1_output_in_empty_block"))
@example(stream=pinned("swap_view_broadcast_off_vector_axis"))
@example(stream=pinned("swap_view_of_transposed_trailing_unit"))
@pytest.mark.parametrize("tiers", TIERS)
def test_gpu_matches_interpreter_on_random_streams(device, tiers, stream):
    with _tiers(tiers):
        _check(device, wgsl_stream(stream, device.has_f16))


@_SLOW_OK
@given(stream=matmul_streams(), form=st.sampled_from((None, *CANDIDATES, "fallback")))
def test_gpu_matches_interpreter_on_matmul_streams(device, stream, form):
    _check(device, wgsl_stream(stream, device.has_f16), matmul_form=form)


def _with_nonfinite(stream: Stream, seed: int) -> Stream:
    """Random float inputs rewritten as data with about one element in five NaN or ±inf."""
    rng = np.random.default_rng(seed)
    inputs = {}
    for tid, spec in stream.inputs.items():
        if spec.dtype.is_float and spec.random is not None and 0 not in spec.shape:
            values = logical_values(spec, tid).astype(np.float64)
            mask = rng.random(values.shape) < 0.2
            values[mask] = rng.choice([np.nan, np.inf, -np.inf], size=int(mask.sum()))
            spec = InputSpec(spec.shape, spec.dtype, spec.strides, values.tolist(), None)
        inputs[tid] = spec
    return Stream(inputs, stream.items)


@settings(_SLOW_OK, max_examples=settings.default.max_examples if NONFINITE else
          min(20, settings.default.max_examples))
@given(stream=streams(), seed=st.integers(0, 2**16))
def test_gpu_nonfinite_inputs_are_a_class_not_a_crash(device, stream, seed):
    _check(device, _with_nonfinite(wgsl_stream(stream, device.has_f16), seed), nonfinite=True)
