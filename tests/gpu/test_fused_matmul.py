"""The fused matmul on the adapter against the interpreter (``gpu.check.agreement``: the matmul's
``2K·ε·|A||B|`` bound chained through the epilogue): batched, broadcast batch, transposed
operands, epilogues with several outputs, f16 where the adapter has it, every form forced;
one kernel per step, the kernel cache by config identity, fallbacks that never fail the run,
the candidates an autotuner times before the step commits (an in-place epilogue's input never
written by them, nothing copied), and golden sources.

Golden files: ``tests/gpu/golden_matmul/<case>.wgsl``; regenerate deliberately with
``FUSELAB_RECORD_GOLDEN=1 pytest tests/gpu/test_fused_matmul.py`` and review the diff.
"""

from __future__ import annotations

import io
import json
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
from gpu.runtime import autotune
from gpu.runtime.autotune_matmul import matmul_candidates
from gpu.runtime.executor import GpuExecutor, WgslListing
from gpu.runtime.fused_matmul import CANDIDATES, MatmulKernels

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
    if form == "fallback":  # the walk's fallback: the matmul, then the tail
        assert (record.path, record.dispatches) == ("fallback", 2)
    elif record.path == "fused":
        assert record.dispatches == 1


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f or "default")
def test_fused_matmul_f16(gpu_device, form):
    if not gpu_device.has_f16:
        pytest.skip("the adapter has no shader-f16")
    executor = _run(gpu_device, _stream((2, 20, 32), (2, 32, 24), (1, 1, 24), dtype="f16"),
                    form)
    if form is not None:  # autotune may pick the fallback
        assert _matmul_record(executor).path == ("fallback" if form == "fallback" else "fused")


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


def _in_place_stream():
    """``gelu(a @ b + c)``: the epilogue writes its output into the addend ``c``'s buffer."""
    s = Session(executor=None)
    a, b = s.random((2, 8, 16), seed=1), s.random((2, 16, 12), seed=2)
    s.sync(_gelu(a @ b + s.random((2, 8, 12), seed=3)))
    return s.close()


def _copies_in_matmul_steps(executor, monkeypatch):
    """A list that counts the copies of a tensor's buffer encoded while the walk runs a Matmul
    step (a synced tensor's snapshot is taken after its step, outside the count; timing's
    own read-backs copy no tensor)."""
    encoder = type(executor.rt.wgpu_device.create_command_encoder())
    copies, counting = [0], [False]
    original = encoder.copy_buffer_to_buffer

    def copy_buffer_to_buffer(self, *args, **kwargs):
        if counting[0] and any(args[0] is held for held in executor.buffers.values()):
            copies[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(encoder, "copy_buffer_to_buffer", copy_buffer_to_buffer)
    walk_step = executor.walk.execute

    def execute(item):
        counting[0] = item.step.fuser == "Matmul"
        try:
            return walk_step(item)
        finally:
            counting[0] = False

    executor.walk.execute = execute
    return copies


@pytest.mark.parametrize("form", (*CANDIDATES, "fallback"))
def test_fused_matmul_candidates_timed_before_commit_leave_inputs_alone(gpu_device, form,
                                                                        monkeypatch):
    """Every candidate is timed as the tuner times it, on the step's inputs before the walk
    commits the step, copying nothing; whichever form then runs, an epilogue written in place
    into its input gives the interpreter's values."""
    stream = _in_place_stream()
    profile, executed = executed_steps(stream, gpu_device.profile())
    expected = Interpreter(stream, profile).run(executed)
    names = []

    def choose(executor, run, opt, launch, scalars):
        for candidate in matmul_candidates(executor, run, opt, launch, scalars):
            names.append(candidate.name)
            autotune.time_candidate(gpu_device, candidate.prepare(), reps=2, iterations=2)
        return form

    executor = GpuExecutor(stream, gpu_device, profile)
    executor.matmul_form = choose
    copies = _copies_in_matmul_steps(executor, monkeypatch)
    got = executor.run(executed)
    assert names == [*CANDIDATES, "fallback"]
    record = _matmul_record(executor)
    assert record.path == ("fallback" if form == "fallback" else "fused")
    assert record.aliases()  # written in place: the case this test is about
    assert copies == [0]
    assert compare(stream, expected, got).ok


def test_fused_matmul_autotuned_in_place_epilogue(gpu_device, monkeypatch, tmp_path, capsys):
    """Under autotune (an empty cache) every candidate is timed without a scratch copy of the
    input the epilogue writes in place, and the step still gives the interpreter's values."""
    import gpu.runtime.autotune_matmul as matmul_tuning

    monkeypatch.setenv("FUSELAB_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUSELAB_AUTOTUNE", "on")
    monkeypatch.setenv("FUSELAB_AUTOTUNE_LOG", "stdout")
    monkeypatch.setattr(matmul_tuning, "TUNER", autotune.Tuner())
    stream = _in_place_stream()
    profile, executed = executed_steps(stream, gpu_device.profile())
    expected = Interpreter(stream, profile).run(executed)
    executor = GpuExecutor(stream, gpu_device, profile)
    copies = _copies_in_matmul_steps(executor, monkeypatch)
    got = executor.run(executed)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()
             if line.startswith("{")]
    (line,) = [line for line in lines if line["fuser"] == "Matmul"]
    assert sorted(line["candidates"]) == sorted([*CANDIDATES, "fallback"])
    assert _matmul_record(executor).path == ("fallback" if line["winner"] == "fallback"
                                             else "fused")
    assert copies == [0]
    assert compare(stream, expected, got).ok


def test_fused_matmul_form_chooser_is_called_per_launch(gpu_device):
    """``matmul_form`` may be a chooser (an autotuner): called with the launch and its scalar
    words, its answer is the form that runs."""
    seen = []

    def choose(executor, run, opt, launch, scalars):
        seen.append([c.name for c in matmul_candidates(executor, run, opt, launch, scalars)])
        return "tile64"

    executor = _run(gpu_device, _stream(**CASES["outputs"]), choose)
    assert seen == [[*CANDIDATES, "fallback"]]
    assert "matmul_fuse: tile64" in _matmul_record(executor).kernels[0].source


# --- golden sources ---------------------------------------------------------------------------

GOLDEN_CASES = {"batched": None, "both_transposed": "large", "outputs": "small",
                "long_k": "gemv", "odd_n": "tile64", "rank2": "large_pf",
                "lhs_transposed": "large_k16"}


@pytest.mark.parametrize("case", sorted(GOLDEN_CASES))
def test_fused_matmul_golden_wgsl(gpu_device, case, monkeypatch):
    """The kernel each case runs on the metal profile's plan (``None``: the default form, so
    autotune is off)."""
    monkeypatch.setenv("FUSELAB_AUTOTUNE", "off")
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
