"""The tier-0 kernel and the tier selection (``gpu.runtime.tiers``): tier 0 runs a new block at
once and agrees with the interpreter, tier 1 takes over when its pipeline is ready, what tier
0 cannot express runs on tier 1 and says so, and fused outputs come from the buffer pool."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from refimpl.dtypes import DType
from refimpl.frontend import Session
from refimpl.frontend.tensor import cat
from refimpl.interpreter import Interpreter, executed_steps
from refimpl.seed import SEED_STREAMS
from refimpl.stream import Stream
from gpu.check.agreement import compare
from gpu.codegen.emit import KernelSignature, TensorArg
from gpu.codegen.tier0_program import Tier0Unsupported, compile_block
from refimpl.planner.engine.trace import CatArgs, FuseOp, Input, Output, fuse_type_of
from refimpl.planner.launch.launch import FuseBlockConfig, RuntimeLayout
from gpu.codegen.tier0 import OPCODES, Tier0Key, tier0_source
from gpu.errors import GpuError, GpuLimitError
from gpu.runtime.executor import GpuExecutor
from gpu.runtime.pool import BufferPool, pool_for, size_class
from gpu.runtime.tiers import tiers_for, tiers_mode

pytestmark = pytest.mark.gpu
F32_TYPE = fuse_type_of(DType.F32)


def _run(device, stream: Stream):
    profile, executed = executed_steps(stream, device.profile())
    expected = Interpreter(stream, profile).run(executed)
    executor = GpuExecutor(stream, device, profile)
    got = executor.run(executed)
    agreement = compare(stream, expected, got)
    assert agreement.ok, agreement.summary()
    return executor


def _tiers(executor) -> list[str]:
    return [t for r in executor.records for t in r.tiers]


def _chain(n: int, shape=(8, 12)) -> Stream:
    s = Session(executor=None)
    x = s.random(shape, seed=0)
    y = x
    for k in range(n):
        y = (y * 0.5 + 0.25).tanh() if k % 2 else (y - x).sin()
    s.sync(y)
    return s.close()


def test_tier0_source_is_deterministic_and_keeps_opcodes_stable():
    key = Tier0Key(("f32", "u32"), ("core", "math"), 4, 4, 8, 4)
    assert tier0_source(key) == tier0_source(Tier0Key(("f32", "u32"), ("core", "math"), 4, 4,
                                                      8, 4))
    assert OPCODES[("Load",)] == 0 and len(set(OPCODES.values())) == len(OPCODES)
    f32_only = tier0_source(key)
    assert f"            case {OPCODES[('Exp', DType.F32)]}u:" in f32_only
    assert f"            case {OPCODES[('Add', DType.I32)]}u:" not in f32_only
    assert f"            case {OPCODES[('Erf', DType.F32)]}u:" not in f32_only
    indexed = tier0_source(Tier0Key(("f32", "u32"), ("core", "math"), 4, 1, 8, 4, "array"))
    assert "var regs_0 = array<vec4<u32>, 9>();" in indexed and "switch d" not in indexed


# The seed streams small enough for lavapipe running the interpreter kernel (it runs every
# case of a switch masked: a few microseconds per position).
SMALL_SEEDS = sorted(name for name, build in SEED_STREAMS.items()
                     if sum(int(np.prod(spec.shape)) for spec in build().inputs.values())
                     <= 1 << 14)


@pytest.mark.parametrize("name", SMALL_SEEDS)
def test_tier0_seed_streams_match_interpreter(gpu_device, name, monkeypatch):
    monkeypatch.setenv("FUSELAB_TIERS", "tier0-only")
    executor = _run(gpu_device, SEED_STREAMS[name]())
    for record in executor.records:
        if record.path == "fused" and record.tiers == ("tier 0",):
            assert record.kernels == () and record.dispatches == 1


@pytest.mark.parametrize("shape", [(8, 12), (3, 5), (2, 3, 7)])
def test_tier0_runs_a_long_chain(gpu_device, shape, monkeypatch):
    monkeypatch.setenv("FUSELAB_TIERS", "tier0-only")
    assert "tier 0" in _tiers(_run(gpu_device, _chain(20, shape)))


def test_tier0_reads_a_swap_view(gpu_device, monkeypatch):
    monkeypatch.setenv("FUSELAB_TIERS", "tier0-only")
    s = Session(executor=None)
    a = s.random((4, 4), seed=1)
    s.sync(a.exp() + a.swap_dims(0, 1))
    executor = _run(gpu_device, s.close())
    assert _tiers(executor) == ["tier 0"]


# Block by block, bit for bit against the emulation: test_emit's parity cases run on tier 0
# too (its ``block_tier`` fixture, through ``tests.gpu.helpers.tier0_block``).


def test_indexed_ops_are_not_tier0_programs():
    config = FuseBlockConfig(1, RuntimeLayout(0), (FuseOp("Cat", CatArgs(
        (Input(0, F32_TYPE), Input(1, F32_TYPE)), Output(0, F32_TYPE), 0)),), 1, 0)
    signature = KernelSignature((TensorArg(DType.F32, 1), TensorArg(DType.F32, 1)),
                                (TensorArg(DType.F32, 1),))
    with pytest.raises(Tier0Unsupported, match="no Cat"):
        compile_block(config, signature)


def test_both_tiers_hand_over_to_tier1_when_ready(gpu_device, monkeypatch, capsys):
    monkeypatch.setenv("FUSELAB_TIERS", "both")
    monkeypatch.setenv("FUSELAB_DEBUG_LOG", "stdout")
    stream = _chain(3, (5, 7))
    first = _run(gpu_device, stream)
    assert _tiers(first) == ["tier 0"]
    tiers = tiers_for(gpu_device)
    tiers.wait_tier1()
    again = _run(gpu_device, stream)
    assert _tiers(again) == ["tier 1"] and len(again.records[0].kernels) == 1
    out = capsys.readouterr().out
    assert ": tier 0" in out and "tier 1 ready for block" in out and ": tier 1" in out
    assert all(s >= 0 for s in tiers.ready_after.values() if s == s)


def test_specialised_only_never_runs_tier0(gpu_device, monkeypatch):
    monkeypatch.setenv("FUSELAB_TIERS", "specialised-only")
    executor = _run(gpu_device, _chain(2, (3, 9)))
    assert _tiers(executor) == ["tier 1"] and len(executor.records[0].kernels) == 1


def test_block_tier0_cannot_express_runs_on_tier1_and_says_why(gpu_device, monkeypatch,
                                                                capsys):
    monkeypatch.setenv("FUSELAB_TIERS", "tier0-only")
    monkeypatch.setenv("FUSELAB_DEBUG_LOG", "stdout")
    s = Session(executor=None)
    a, b = s.random((4, 3), seed=1), s.random((4, 5), seed=2)
    s.sync((cat([a.exp(), b.exp()], 1) + 1.0).tanh())
    executor = _run(gpu_device, s.close())
    assert "tier 1" in _tiers(executor)
    assert "tier 1 (tier 0 has no Cat" in capsys.readouterr().out


def test_too_many_buffers_for_the_generic_layout_go_to_tier1(gpu_device, monkeypatch, capsys):
    monkeypatch.setenv("FUSELAB_TIERS", "tier0-only")
    monkeypatch.setenv("FUSELAB_DEBUG_LOG", "stdout")
    ro = tiers_for(gpu_device).ro
    s = Session(executor=None)
    xs = [s.random((4, 4), seed=k) for k in range(ro + 1)]
    total = xs[0]
    for x in xs[1:]:
        total = total + x * 1.5
    s.sync(total)
    executor = _run(gpu_device, s.close())
    if any(r.path == "fused" for r in executor.records):
        assert "exceed the generic layout" in capsys.readouterr().out
        assert "tier 1" in _tiers(executor)


def test_unknown_tiers_mode_is_a_clear_error(gpu_device, monkeypatch):
    monkeypatch.setenv("FUSELAB_TIERS", "fastest")
    with pytest.raises(GpuError, match="FUSELAB_TIERS='fastest'"):
        _run(gpu_device, _chain(1))


# --- the buffer pool ---------------------------------------------------------------------------


def test_size_classes():
    assert size_class(1, 1 << 30) == 256
    assert size_class(1000, 1 << 30) == 1024
    assert size_class((1 << 20) + 1, 1 << 30) == 2 << 20
    assert size_class(100 << 20, 100 << 20) == 100 << 20
    assert size_class(100 << 20, 64 << 20) == 100 << 20  # past the cap: the exact size


def test_pool_reuses_freed_buffers_by_class(gpu_device):
    rt = gpu_device.runtime
    pool = BufferPool(gpu_device.wgpu_device, rt._usage, 1 << 20, limit=4096)
    a = pool.take(1000)
    pool.give(a)
    pool.give(a)  # twice: kept once
    assert pool.take(700) is a and pool.take(700) is not a
    assert (pool.created, pool.reused) == (2, 1)
    pool.give(gpu_device.wgpu_device.create_buffer(size=1024, usage=rt._usage))  # not its own
    assert pool.free_bytes == 0
    with pytest.raises(GpuLimitError, match="out needs"):
        pool.take(2 << 20, "out")


def test_a_second_run_allocates_no_output_buffer(gpu_device):
    stream = _chain(4, (16, 16))
    _run(gpu_device, stream)
    pool = pool_for(gpu_device.runtime)
    created = pool.created
    _run(gpu_device, stream)
    assert pool.created == created


# --- standalone kernels compiled ahead ---------------------------------------------------------


def test_common_unfused_kernels_compiled_ahead_are_cache_hits(gpu_adapter):
    from gpu.runtime.device import request_device
    from gpu.runtime.executor import run_unfused
    from gpu.runtime.tiers_warm import warm_unfused

    device = request_device()  # an empty pipeline cache
    assert warm_unfused(device, ("NumericFloat.Add", "NumericFloat.MulScalar", "Float.Exp")) > 0
    compiled = device.runtime.compiled
    s = Session(executor=None)
    a, b = s.random((8, 8), seed=1), s.random((8, 8), seed=2)
    s.sync((a + b * 2.0).exp())
    run_unfused(s.close(), device)
    assert device.runtime.compiled == compiled


def test_tiers_default_follows_the_adapter(gpu_device, monkeypatch):
    monkeypatch.delenv("FUSELAB_TIERS", raising=False)
    assert tiers_mode(SimpleNamespace(is_cpu=False)) == "both"
    assert tiers_mode(SimpleNamespace(is_cpu=True)) == "specialised-only"
    expected = ["tier 1"] if gpu_device.is_cpu else ["tier 0"]
    assert _tiers(_run(gpu_device, _chain(3, (8, 12)))) == expected
    monkeypatch.setenv("FUSELAB_TIERS", "both")  # asked for, tier 0 runs on any adapter
    assert _tiers(_run(gpu_device, _chain(4, (8, 12)))) == ["tier 0"]
