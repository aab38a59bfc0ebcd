"""The fused matmul on the adapter against the interpreter (``gpu.check.agreement``: the matmul's
``2K·ε·|A||B|`` bound chained through the epilogue): batched, broadcast batch, transposed
operands, epilogues with several outputs, f16 where the adapter has it, every form forced;
one kernel per step, the kernel cache by config identity, fallbacks that never fail the run,
the candidates an autotuner times, and golden sources.

Golden files: ``tests/gpu/golden_matmul/<case>.wgsl``; regenerate deliberately with
``FUSELAB_RECORD_GOLDEN=1 pytest tests/gpu/test_fused_matmul.py`` and review the diff.
"""

from __future__ import annotations

import io
import os
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from refimpl.devices import profile_named
from refimpl.frontend import Session
from refimpl.interpreter import Interpreter, executed_steps
from gpu.check.agreement import compare
from gpu.codegen import matmul_tiled
from gpu.codegen.matmul_tiled import Tiling
from gpu.runtime.executor import GpuExecutor, WgslListing, scalar_words
from gpu.runtime.fused_matmul import CANDIDATES, MatmulKernels, matmul_candidates

GOLDEN = Path(__file__).resolve().parent / "golden_matmul"
RECORD = os.environ.get("FUSELAB_RECORD_GOLDEN", "") not in ("", "0")
FORMS = (None, *CANDIDATES, "fallback")


def _relu(x):
    return x.mask_fill(x <= 0.0, 0.0)


def _gelu(x):
    return ((x / 1.4142135623730951).erf() + 1.0) * x * 0.5


def _transposed(shape):
    """Strides of ``shape`` with its last two dims stored swapped (column-major matrices)."""
    *batch, m, k = shape
    strides = [m * k] * len(batch)
    for i in range(len(batch) - 2, -1, -1):
        strides[i] = strides[i + 1] * batch[i + 1]
    return (*strides, 1, m)


def _stream(lhs, rhs, bias, *, dtype="f32", lhs_t=False, rhs_t=False, outputs=1):
    """``gelu(relu(a @ b) + bias)`` (burn's relu and gelu), and with ``outputs`` > 1 the
    pre-activation and a scaled copy synced too."""
    s = Session(executor=None)
    a = s.random(lhs, dtype, seed=1, strides=_transposed(lhs) if lhs_t else None)
    b = s.random(rhs, dtype, seed=2, strides=_transposed(rhs) if rhs_t else None)
    c = s.random(bias, dtype, seed=3)
    y = _relu(a @ b) + c
    out = _gelu(y)
    s.sync(*(out, y, y * 3.0)[:outputs])
    return s.close()


def _run(device, stream, form=None):
    profile, executed = executed_steps(stream, device.profile())
    expected = Interpreter(stream, profile).run(executed)
    executor = GpuExecutor(stream, device, profile)
    executor.matmul_form = form
    got = executor.run(executed)
    agreement = compare(stream, expected, got)
    assert agreement.ok, agreement.summary()
    return executor


def _matmul_record(executor):
    (record,) = [r for r in executor.records if r.step is not None and r.step.fuser == "Matmul"]
    return record


CASES = {
    "batched": dict(lhs=(2, 9, 16), rhs=(2, 16, 12), bias=(1, 1, 12)),
    "broadcast_batch": dict(lhs=(1, 33, 20), rhs=(3, 20, 40), bias=(1, 1, 40)),
    "rank2": dict(lhs=(37, 24), rhs=(24, 68), bias=(1, 68)),
    "lhs_transposed": dict(lhs=(2, 12, 8), rhs=(2, 8, 20), bias=(1, 1, 20), lhs_t=True),
    "rhs_transposed": dict(lhs=(2, 12, 8), rhs=(2, 8, 20), bias=(1, 1, 20), rhs_t=True),
    "both_transposed": dict(lhs=(3, 36, 44), rhs=(3, 44, 28), bias=(1, 1, 28), lhs_t=True,
                            rhs_t=True),
    "outputs": dict(lhs=(2, 10, 24), rhs=(2, 24, 16), bias=(1, 1, 16), outputs=3),
    "odd_n": dict(lhs=(2, 7, 12), rhs=(2, 12, 9), bias=(1, 1, 9)),
    "long_k": dict(lhs=(1, 3, 300), rhs=(1, 300, 8), bias=(1, 1, 8)),
}


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f or "default")
@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_matmul_matches_interpreter(gpu_device, case, form):
    executor = _run(gpu_device, _stream(**CASES[case]), form)
    record = _matmul_record(executor)
    if record.path == "fused":
        assert record.dispatches == (2 if form == "fallback" else 1)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f or "default")
def test_fused_matmul_f16(gpu_device, form):
    if not gpu_device.has_f16:
        pytest.skip("the adapter has no shader-f16")
    executor = _run(gpu_device, _stream((2, 20, 32), (2, 32, 24), (1, 1, 24), dtype="f16"),
                    form)
    assert _matmul_record(executor).path == "fused"


def test_fused_matmul_takes_the_fused_path_with_transposed_operands(gpu_device):
    """Mildly permuted operands are read through their strides, no fallback."""
    for case in ("lhs_transposed", "rhs_transposed", "both_transposed", "batched", "outputs"):
        executor = _run(gpu_device, _stream(**CASES[case]), "large")
        record = _matmul_record(executor)
        assert (record.path, record.dispatches) == ("fused", 1), case
        assert "matmul_fuse: large" in record.kernels[0].source


def test_fused_matmul_new_shape_compiles_nothing(gpu_device):
    """Kernels are keyed by config identity and signature, never by shape."""
    _run(gpu_device, _stream((2, 8, 16), (2, 16, 12), (1, 1, 12)), "tile64")
    rt = gpu_device.runtime
    before = rt.compiled
    executor = _run(gpu_device, _stream((3, 24, 32), (3, 32, 44), (1, 1, 44)), "tile64")
    assert rt.compiled == before
    assert _matmul_record(executor).compiled == 0


def test_fused_matmul_source_is_deterministic():
    stream = _stream(**CASES["outputs"])
    profile, executed = executed_steps(stream, profile_named("metal"))
    first, second = WgslListing(stream, profile), WgslListing(stream, profile)
    first.matmul_kernels, second.matmul_kernels = MatmulKernels(), MatmulKernels()
    first.run(executed)
    second.run(executed)
    assert len(first.emitted) == 1
    assert [k.source for _, k in first.emitted] == [k.source for _, k in second.emitted]


def test_fused_matmul_tiling_past_the_device_falls_back(gpu_device, monkeypatch):
    """A tiling beyond the adapter's workgroup storage and invocations runs ``simple``
    instead, and says so in the debug log."""
    huge = Tiling("large", 256, 256, 64, 4, 4)  # 1 MiB of tiles, 4096 invocations
    monkeypatch.setitem(matmul_tiled.TILINGS, "large", huge)
    monkeypatch.setenv("FUSELAB_DEBUG_LOG", "stdout")
    out = io.StringIO()
    with redirect_stdout(out):
        executor = _run(gpu_device, _stream(**CASES["batched"]), "large")
    record = _matmul_record(executor)
    assert (record.path, record.dispatches) == ("fused", 1)
    assert "matmul_fuse: simple" in record.kernels[0].source
    assert "fused matmul: large does not fit" in out.getvalue()


def test_fused_matmul_candidates_leave_the_values_alone(gpu_device):
    """Every candidate runs; an in-place output's input is bound to a scratch copy, so
    timing them does not change what the step computes."""
    s = Session(executor=None)
    a, b = s.random((2, 8, 16), seed=1), s.random((2, 16, 12), seed=2)
    s.sync(_gelu(a @ b + s.random((2, 8, 12), seed=3)))  # the addend is written in place
    stream = s.close()
    profile, executed = executed_steps(stream, gpu_device.profile())
    expected = Interpreter(stream, profile).run(executed)
    executor = GpuExecutor(stream, gpu_device, profile)
    names = []

    def tuned(run, opt, launch):
        candidates = matmul_candidates(executor, run, opt, launch,
                                       scalar_words(run, opt.trace))
        names.extend(name for name, _ in candidates)
        for _, launch_candidate in candidates:
            launch_candidate()
            launch_candidate()
        GpuExecutor.run_matmul(executor, run, opt, launch)

    executor.run_matmul = tuned
    got = executor.run(executed)
    assert names == [*CANDIDATES, "fallback"]
    assert _matmul_record(executor).aliases()  # the case this test is about
    assert compare(stream, expected, got).ok


def test_fused_matmul_form_chooser_is_called_per_launch(gpu_device):
    """``matmul_form`` may be a chooser (an autotuner): called with the launch and its scalar
    words, its answer is the form that runs."""
    seen = []

    def choose(executor, run, opt, launch, scalars):
        seen.append([name for name, _ in matmul_candidates(executor, run, opt, launch,
                                                            scalars)])
        return "tile64"

    executor = _run(gpu_device, _stream(**CASES["outputs"]), choose)
    assert seen == [[*CANDIDATES, "fallback"]]
    assert "matmul_fuse: tile64" in _matmul_record(executor).kernels[0].source


# --- golden sources ---------------------------------------------------------------------------

GOLDEN_CASES = {"batched": None, "both_transposed": "large", "outputs": "small",
                "long_k": "gemv", "odd_n": "tile64", "rank2": "large_pf",
                "lhs_transposed": "large_k16"}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_fused_matmul_golden_wgsl(gpu_device, case):
    """The kernel each case runs on the metal profile's plan (``None``: the default form)."""
    stream = _stream(**CASES[case])
    profile, executed = executed_steps(stream, profile_named("metal"))
    executor = GpuExecutor(stream, gpu_device, profile)
    executor.matmul_form = GOLDEN_CASES[case]
    executor.matmul_kernels = MatmulKernels()
    executor.run(executed, read=False)
    text = _matmul_record(executor).kernels[0].source
    path = GOLDEN / f"{case}.wgsl"
    if RECORD:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        pytest.skip("recorded")
    assert text == path.read_text(), f"{case}: the WGSL changed (see the module docstring)"


def test_fused_matmul_golden_corpus_is_complete():
    assert sorted(p.stem for p in GOLDEN.glob("*.wgsl")) == sorted(GOLDEN_CASES)
