"""The fused element-wise WGSL: golden sources, byte determinism, shape independence, the
binding rules (in place bound once, read_write), and bit-for-bit parity of every read/write
path with the numpy emulation of the kernel (``refimpl.fused_kernel``).

Golden files: ``tests/gpu/golden/<seed>.wgsl`` hold ``fuselab wgsl`` of each seed stream on
the ``metal`` profile (the seed page's device). Regenerate deliberately with
``FUSELAB_RECORD_GOLDEN=1 pytest tests/gpu/test_emit.py`` and review the diff.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from refimpl.data import contiguous_strides
from refimpl.devices import profile_named
from refimpl.dtypes import DType
from refimpl.fused_kernel import KernelError, run_block
from refimpl.interpreter import executed_steps
from refimpl.planner.engine.trace import (
    BinaryFuseArgs, BlockLocal, CatArgs, FuseOp, GatherArgs, Input, InputReshaped,
    InputSwapDims, LayoutInfo, Literal, Output, Scalar, ScalarShape, SelectArgs, fuse_type_of,
)
from refimpl.planner.launch.handles import Handle, Memory
from refimpl.planner.launch.launch import (
    ConcreteLayout, FuseBlockConfig, Launch, LaunchInput, LaunchOutput, LaunchPlan,
    ReshapedLayout, RuntimeLayout, ShapeLayout, SwapDimsLayout,
)
from refimpl.planner.launch.layout import unsqueezed
from refimpl.seed import SEED_STREAMS, mul_add_exp
from refimpl.strategies import StreamBuilder
from refimpl.stream import Stream
from fuselab.gpu_commands import kernel_listing, wgsl_text
from gpu.check.agreement import compare
from gpu.codegen.emit import KernelSignature, TensorArg, emit_block
from gpu.codegen.render import scalar_word
from gpu.errors import UnsupportedOpError
from gpu.runtime.buffers import STORAGE_NUMPY
from gpu.runtime.executor import KernelCache, WgslListing, launch_words, signature_of
from gpu.runtime.unfused import launch as launch_kernel
from tests.gpu.helpers import tier0_block

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
RECORD = os.environ.get("FUSELAB_RECORD_GOLDEN", "") not in ("", "0")
METAL = profile_named("metal")


def _listing(stream: Stream, profile=METAL) -> list[dict]:
    return kernel_listing(stream, profile)


# --- golden sources -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SEED_STREAMS))
def test_emit_golden_wgsl_of_every_seed_stream(name):
    text = wgsl_text(_listing(SEED_STREAMS[name]()))
    path = GOLDEN / f"{name}.wgsl"
    if RECORD:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        pytest.skip("recorded")
    assert text == path.read_text(), f"{name}: the WGSL changed (see the module docstring)"


def test_emit_golden_corpus_is_complete():
    assert sorted(p.stem for p in GOLDEN.glob("*.wgsl")) == sorted(SEED_STREAMS)


def test_emit_seed_kernel_reads_like_the_seed_msl():
    """Three vector loads, Mul, Add, Exp, one store into a's buffer: the seed's MSL (no index
    math: every tensor starts at element 0 of its buffer)."""
    (kernel,) = _listing(mul_add_exp((4, 6)))
    body = kernel["source"].split("// Fuse on write begin")[1].split("// Fuse on write end")[0]
    assert [line.strip() for line in body.strip().splitlines()] == [
        "let t0 = in0[pos];",
        "let t1 = in1[pos];",
        "let t2 = in2[pos];",
        "let t3 = (t0 * t1);",
        "let t4 = (t3 + t2);",
        "let t5 = exp(t4);",
        "in0[pos] = t5;",
    ]


# --- determinism and identity -------------------------------------------------------------------


def _digest(names: list[str]) -> str:
    texts = [wgsl_text(_listing(SEED_STREAMS[n]())) for n in names]
    return hashlib.sha256("".join(texts).encode()).hexdigest()


def test_emit_is_byte_identical_across_processes():
    names = ["mul_add_exp", "cat_transposed_input", "int_bitwise_chain", "independent"]
    script = ("import sys; sys.path.insert(0, '.'); from tests.gpu.test_emit import _digest; "
              f"print(_digest({names!r}))")
    digests = {_digest(names)}
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True,
                             capture_output=True, text=True).stdout
        digests.add(out.strip().splitlines()[-1])
    assert len(digests) == 1


def test_emit_4x6_and_2x2_are_one_kernel():
    (big,), (small,) = _listing(mul_add_exp((4, 6))), _listing(mul_add_exp((2, 2)))
    assert big["config_id"] == small["config_id"]
    assert big["source"] == small["source"]


def test_emit_source_never_depends_on_shapes_or_tensor_ids():
    """A new shape with the same width, and every tensor id shifted: the same bytes."""
    base = _listing(mul_add_exp((4, 6)))[0]["source"]
    assert _listing(mul_add_exp((10, 2)))[0]["source"] == base
    doc = json.loads(mul_add_exp((4, 6)).to_json())
    shifted = _shift_ids(doc, 1000)
    assert _listing(Stream.from_json(shifted))[0]["source"] == base


def _shift_ids(doc: dict, k: int) -> dict:
    def walk(value):
        if isinstance(value, dict):
            return {key: (v + k if key == "id" else walk(v)) for key, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value
    ops = []
    for op in doc["ops"]:
        op = walk(op)
        if op["op"] == "Sync":
            op["tensors"] = [t + k for t in op["tensors"]]
        ops.append(op)
    return {**doc, "inputs": {str(int(i) + k): v for i, v in doc["inputs"].items()}, "ops": ops}


@pytest.mark.parametrize("shape, width, element", [((4, 3), 1, "f32"), ((4, 6), 2, "vec2<f32>"),
                                                   ((64, 64), 4, "vec4<f32>")])
def test_emit_binding_type_follows_the_width(shape, width, element):
    (kernel,) = _listing(mul_add_exp(shape))
    assert kernel["width"] == width
    assert f"var<storage, read> in1: array<{element}>;" in kernel["source"]


def test_emit_inplace_output_is_bound_once_read_write():
    source = _listing(mul_add_exp((4, 6)))[0]["source"]
    assert "var<storage, read_write> in0" in source
    assert "var<storage, read> in1" in source and "var<storage, read> in2" in source
    assert "out0" not in source
    assert source.count("@binding(") == 4  # three inputs + info


def test_emit_held_input_is_read_only_and_the_output_owned():
    source = _listing(SEED_STREAMS["mul_add_exp_held"]())[0]["source"]
    assert "var<storage, read> in0" in source
    assert "var<storage, read_write> out0: array<vec2<f32>>;" in source


def test_emit_literals_are_runtime_words():
    """No float constant in a body: ``Zeros`` then ``Recip`` must not fold to an infinite
    constant (a pipeline-creation error in naga)."""
    source = _listing(SEED_STREAMS["elementwise_and_creation"]())[0]["source"]
    body = source.split("// Fuse on write begin")[1]
    assert "bitcast<f32>(info[" in body
    assert ".0f" not in body


def test_emit_refuses_vectors_wider_than_wgsl_has():
    config = FuseBlockConfig(1, ConcreteLayout(Output(0, fuse_type_of(DType.F16),
                                                      LayoutInfo.IsRef)),
                             (FuseOp.assign(Input(0, fuse_type_of(DType.F16), LayoutInfo.IsRef),
                                            Output(0, fuse_type_of(DType.F16), LayoutInfo.IsRef)),),
                             8, 0)
    signature = KernelSignature((TensorArg(DType.F16, 8),), (TensorArg(DType.F16, 8),))
    with pytest.raises(UnsupportedOpError, match="width 8"):
        emit_block(config, signature)


def test_emit_kernel_cache_keys_on_config_and_signature():
    """Three shapes of one config: emitted once. The held variant (another signature: an
    owned output) is a second entry."""
    cache = KernelCache()
    streams = [mul_add_exp(shape) for shape in ((4, 6), (2, 2), (8, 10))]
    streams.append(mul_add_exp((4, 6), a_moved=False))
    for stream in streams:
        profile, executed = executed_steps(stream, METAL)
        WgslListing(stream, profile, cache).run(executed)
    assert (cache.misses, cache.hits, len(cache)) == (2, 2, 2)


# --- bit-for-bit parity with the emulation, path by path ----------------------------------------

F32 = fuse_type_of(DType.F32)
I32 = fuse_type_of(DType.I32)


def _block_case(config: FuseBlockConfig, inputs: list[dict], outputs: list[dict],
                reshapes=(), runtime_layouts=(), scalars=()):
    """A ``Launch`` over a value-carrying ``Memory``: inputs ``{values, strides, offset, vs,
    broadcasted}``, outputs ``{shape, strides, vs}`` (owned) or ``{inplace: k}``."""
    memory = Memory(with_values=True)
    rank = config.rank
    handles, plan_inputs = [], []
    for k, spec in enumerate(inputs):
        values = spec["values"]
        dtype = next(d for d in DType if d.numpy == values.dtype)
        strides = spec.get("strides") or contiguous_strides(values.shape)
        offset = spec.get("offset", 0)
        base = memory.alloc((offset + 1 + sum((d - 1) * s for d, s in zip(values.shape,
                                                                           strides)),), dtype)
        handle = Handle(base.buffer, values.shape, tuple(strides), offset, dtype)
        memory.write(handle, values)
        handles.append(handle)
        shape, strides_u = unsqueezed(values.shape, strides, rank)
        plan_inputs.append(LaunchInput(k, fuse_type_of(dtype), shape, strides_u, spec["vs"],
                                       spec.get("broadcasted", False)))
    out_handles, plan_outputs = [], []
    for k, spec in enumerate(outputs):
        if "inplace" in spec:
            pos = spec["inplace"]
            out_handles.append(handles[pos])
            item = plan_inputs[pos]
            plan_outputs.append(LaunchOutput(100 + k, item.precision, handles[pos].shape,
                                             handles[pos].strides, item.vector_size, "inplace",
                                             pos))
            continue
        dtype = spec.get("dtype", DType.F32)
        handle = memory.alloc(spec["shape"], dtype, spec.get("strides"))
        out_handles.append(handle)
        plan_outputs.append(LaunchOutput(100 + k, fuse_type_of(dtype), handle.shape,
                                         handle.strides, spec["vs"], "owned"))
    plan = LaunchPlan(rank, (config,), tuple(plan_inputs), tuple(plan_outputs), (), (), (),
                      tuple(reshapes), tuple(runtime_layouts), False)
    return memory, Launch(plan, tuple(handles), tuple(out_handles)), scalars


# Which kernel the parity cases run (``block_tier``): the specialised one, or the tier-0
# program (one position per invocation and the switched register file, or four positions and
# the indexed register file).
_TIER = ["specialised"]


@pytest.fixture(params=["specialised", "tier 0", "tier 0 x4 array"])
def block_tier(request):
    _TIER[0] = request.param
    yield request.param
    _TIER[0] = "specialised"


def _gpu_block(device, memory: Memory, launch: Launch, scalars) -> dict[int, np.ndarray]:
    """Upload every buffer as the emulation sees it before running, dispatch, read back."""
    if _TIER[0] != "specialised":
        wide = _TIER[0] == "tier 0 x4 array"
        return tier0_block(device, memory, launch, scalars, 4 if wide else 1,
                           "array" if wide else "switch")
    rt = device.runtime
    buffers = {b: rt.upload_buffer(memory.data[b], next(h.dtype for h in launch.input_handles
                                                       + launch.output_handles if h.buffer == b))
               for b in sorted({h.buffer for h in launch.input_handles + launch.output_handles})}
    config = launch.plan.configs[0]
    kernel = emit_block(config, signature_of(launch))
    words = [scalar_word(v, DType.F32) for v in scalars]
    meta, n_pos = launch_words(kernel, launch, words)
    bound = [buffers[(launch.input_handles if side == "in" else launch.output_handles)[k].buffer]
             for side, k in kernel.bindings]
    launch_kernel(rt, kernel.source, bound, meta, n_pos)
    result = {}
    for b, buffer in buffers.items():
        dtype = next(h.dtype for h in launch.input_handles + launch.output_handles
                     if h.buffer == b)
        raw = np.frombuffer(device.queue.read_buffer(buffer), dtype=STORAGE_NUMPY[dtype])
        result[b] = raw[: memory.sizes[b]]
    return result


def _parity(device, config, inputs, outputs, chained=None, **extra):
    """The GPU's buffers equal the emulation's bit for bit; with ``chained`` (a stream whose
    one synced tensor is output 0's value), output 0 is held to that stream's chain bound
    instead (a chain an adapter may contract into an FMA)."""
    memory, launch, scalars = _block_case(config, inputs, outputs, **extra)
    gpu = _gpu_block(device, memory, launch, scalars)
    run_block(config, launch, memory, tuple(np.float32(v) for v in scalars))
    bounded = None if chained is None else launch.output_handles[0]
    for b, values in gpu.items():
        if bounded is not None and b == bounded.buffer:
            (tid,) = chained.syncs()[-1].tensors
            shape = bounded.shape
            agreement = compare(chained, {tid: memory.data[b].reshape(shape)},
                                {tid: values.reshape(shape)})
            assert agreement.ok, agreement.summary()
            continue
        np.testing.assert_array_equal(values, memory.data[b], err_msg=f"buffer {b}")
    return memory, launch


def _rand(shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32)


def _binary(name: str, lhs: int, rhs: int, out: int) -> FuseOp:
    """``FuseOp(name)`` over f32 block locals ``lhs``, ``rhs`` → ``out``."""
    return FuseOp(name, BinaryFuseArgs(BlockLocal(lhs, F32), BlockLocal(rhs, F32),
                                       BlockLocal(out, F32)))


def _copy(read, width, ref, out_layout=LayoutInfo.IsRef, rank=2, axis=None):
    ops = (FuseOp.assign(read, BlockLocal(0, F32)),
           _binary("Add", 0, 0, 1),
           FuseOp.assign(BlockLocal(1, F32), Output(0, F32, out_layout)))
    return FuseBlockConfig(rank, ref, ops, width, rank - 1 if axis is None else axis)


@pytest.mark.usefixtures("block_tier")
def test_emit_parity_swap_dims_read_and_swap_reference(gpu_device):
    """``InputSwapDims`` read against a ``SwapDims`` virtual reference (the original's
    vector size, 1), written by offset."""
    read = InputSwapDims(Input(0, F32, LayoutInfo.Unknown), (0, 1), False)
    config = _copy(read, 1, SwapDimsLayout(Input(0, F32, LayoutInfo.Unknown), (0, 1)),
                   LayoutInfo.Unknown)
    _parity(gpu_device, config, [{"values": _rand((4, 6)), "vs": 1}],
            [{"shape": (6, 4), "vs": 1}])


@pytest.mark.usefixtures("block_tier")
def test_emit_parity_swap_dims_read_lane_by_lane(gpu_device):
    """The swapped inner dim has stride 6: vector size 1, read lane by lane under width 2
    (the aligned path, stepping the swapped stride)."""
    read = InputSwapDims(Input(0, F32, LayoutInfo.Unknown), (0, 1), False)
    config = _copy(read, 2, ConcreteLayout(Output(0, F32, LayoutInfo.IsRef)))
    _parity(gpu_device, config, [{"values": _rand((4, 6)), "vs": 1}],
            [{"shape": (6, 4), "vs": 2}])


@pytest.mark.usefixtures("block_tier")
def test_emit_misaligned_vector_read_is_refused_like_the_emulation(gpu_device):
    """A vec2 read through a swap whose inner stride is 6 starts vectors mid-vector."""
    read = InputSwapDims(Input(0, F32, LayoutInfo.Unknown), (0, 1), False)
    config = _copy(read, 2, SwapDimsLayout(Input(0, F32, LayoutInfo.Unknown), (0, 1)),
                   LayoutInfo.Unknown)
    memory, launch, scalars = _block_case(config, [{"values": _rand((4, 6)), "vs": 2}],
                                          [{"shape": (6, 4), "vs": 2}])
    with pytest.raises(KernelError, match="misaligned"):
        run_block(config, launch, memory, ())
    with pytest.raises(KernelError, match="misaligned"):
        _gpu_block(gpu_device, memory, launch, scalars)


@pytest.mark.usefixtures("block_tier")
def test_emit_parity_reshape_read_and_reshaped_reference(gpu_device):
    read = InputReshaped(Input(0, F32, LayoutInfo.Unknown), (ScalarShape(0), ScalarShape(1)),
                         False)
    config = _copy(read, 1, ReshapedLayout(0, 1), LayoutInfo.Unknown)
    _parity(gpu_device, config, [{"values": _rand((4, 6)), "strides": (1, 4), "vs": 1}],
            [{"shape": (8, 3), "vs": 1}], reshapes=(8, 3))


@pytest.mark.usefixtures("block_tier")
def test_emit_parity_padded_input_as_virtual_shape_reference(gpu_device):
    """A padded input cannot be the concrete reference (#5395): ``VirtualShape``; its own
    read remaps, vector size 1 under width 2 takes the aligned path."""
    config = _copy(Input(0, F32, LayoutInfo.Unknown), 2,
                   ShapeLayout(Input(0, F32, LayoutInfo.Unknown), 2), LayoutInfo.Unknown)
    _parity(gpu_device, config, [{"values": _rand((3, 4)), "strides": (5, 1), "vs": 1}],
            [{"shape": (3, 4), "vs": 2}])


@pytest.mark.usefixtures("block_tier")
def test_emit_parity_runtime_reference_with_literal_and_scalar(gpu_device):
    ops = (FuseOp.assign(Literal(1, F32), BlockLocal(0, F32)),
           FuseOp("Mul", BinaryFuseArgs(BlockLocal(0, F32), Scalar(0, F32), BlockLocal(1, F32))),
           FuseOp.assign(BlockLocal(1, F32), Output(0, F32, LayoutInfo.Unknown)))
    config = FuseBlockConfig(2, RuntimeLayout(0), ops, 4, 1)
    _parity(gpu_device, config, [], [{"shape": (3, 8), "vs": 4}],
            runtime_layouts=(((3, 8), (8, 1)),), scalars=(2.5,))


@pytest.mark.usefixtures("block_tier")
def test_emit_parity_transposed_input_aligned_path_and_broadcast(gpu_device):
    """Width 4 over a transposed (vector size 1) input, read lane by lane along its stride,
    plus a broadcast row (vector size 1, replicated) and an offset buffer, computing
    ``x * y - z``. An adapter may contract the multiply into the subtraction (one FMA, one
    rounding: NVIDIA does), so the result is held to the chain bound of ``x * y - z`` (a
    wrong index is off by far more), every other buffer bit for bit."""
    ops = (FuseOp.assign(Input(0, F32, LayoutInfo.Unknown), BlockLocal(0, F32)),
           FuseOp.assign(Input(1, F32, LayoutInfo.Unknown), BlockLocal(1, F32)),
           FuseOp.assign(Input(2, F32, LayoutInfo.SameAsRef), BlockLocal(2, F32)),
           _binary("Mul", 0, 1, 3),
           _binary("Sub", 3, 2, 4),
           FuseOp.assign(BlockLocal(4, F32), Output(0, F32, LayoutInfo.IsRef)))
    config = FuseBlockConfig(2, ConcreteLayout(Output(0, F32, LayoutInfo.IsRef)), ops, 4, 1)
    x, y, z = _rand((4, 8), 1), _rand((1, 8), 2), _rand((4, 8), 3)
    builder = StreamBuilder()
    ids = [builder.add_input(v.shape, DType.F32, data=v.tolist()) for v in (x, y, z)]
    product = builder.op("NumericFloat.Mul", (4, 8), DType.F32, lhs=ids[0], rhs=ids[1])
    builder.sync((builder.op("NumericFloat.Sub", (4, 8), DType.F32, lhs=product, rhs=ids[2]),))
    _parity(gpu_device, config,
            [{"values": x, "strides": (1, 4), "vs": 1},
             {"values": y, "vs": 1, "broadcasted": True},
             {"values": z, "vs": 4, "offset": 64}],
            [{"shape": (4, 8), "vs": 4}], chained=builder.build())


def test_emit_offset_word_only_for_tensors_past_element_0():
    """A contiguous block at width 4 reads ``in{k}[pos]``; an input starting at element 64
    of its buffer reads its offset word (and only that one), and a kernel emitted for
    offset 0 refuses a launch whose input starts elsewhere."""
    ops = (FuseOp.assign(Input(0, F32, LayoutInfo.IsRef), BlockLocal(0, F32)),
           FuseOp.assign(Input(1, F32, LayoutInfo.SameAsRef), BlockLocal(1, F32)),
           _binary("Add", 0, 1, 2),
           FuseOp.assign(BlockLocal(2, F32), Output(0, F32, LayoutInfo.IsRef)))
    config = FuseBlockConfig(2, ConcreteLayout(Output(0, F32, LayoutInfo.IsRef)), ops, 4, 1)
    outputs = [{"shape": (4, 8), "vs": 4}]
    _, dense, _ = _block_case(config, [{"values": _rand((4, 8), 1), "vs": 4},
                                       {"values": _rand((4, 8), 2), "vs": 4}], outputs)
    _, shifted, _ = _block_case(config, [{"values": _rand((4, 8), 1), "vs": 4},
                                         {"values": _rand((4, 8), 2), "vs": 4, "offset": 64}],
                                outputs)
    plain = emit_block(config, signature_of(dense))
    body = plain.source.split("// Fuse on write begin")[1]
    assert "in0[pos]" in body and "in1[pos]" in body and "out0[pos] = " in body
    assert "info[" not in body
    offset = emit_block(config, signature_of(shifted))
    word = offset.layout.slot_offset(1)
    assert f"in1[info[{word}u] / 4u + pos]" in offset.source and "in0[pos]" in offset.source
    with pytest.raises(ValueError, match="offset 64"):
        launch_words(plain, shifted, ())


@pytest.mark.usefixtures("block_tier")
def test_emit_parity_inplace_and_aligned_isref_write(gpu_device):
    """The in-place output is the reference with its input's vector size 1 under width 4
    (a [1, 4] input whose outer stride is 5): stored lane by lane, stepping the inner stride;
    a second, owned output takes whole vectors."""
    ops = (FuseOp.assign(Input(0, F32, LayoutInfo.IsRef), BlockLocal(0, F32)),
           FuseOp("Add", BinaryFuseArgs(BlockLocal(0, F32), Scalar(0, F32), BlockLocal(1, F32))),
           FuseOp.assign(BlockLocal(1, F32), Output(0, F32, LayoutInfo.IsRef)),
           FuseOp.assign(BlockLocal(0, F32), Output(1, F32, LayoutInfo.Unknown)))
    config = FuseBlockConfig(2, ConcreteLayout(Output(0, F32, LayoutInfo.IsRef)), ops, 4, 1)
    memory, launch = _parity(gpu_device, config,
                             [{"values": _rand((1, 4)), "strides": (5, 1), "vs": 1}],
                             [{"inplace": 0}, {"shape": (1, 4), "vs": 4}], scalars=(0.5,))
    assert launch.output_handles[0].buffer == launch.input_handles[0].buffer
    assert "var<storage, read_write> in0: array<f32>;" in emit_block(
        config, signature_of(launch)).source


@pytest.mark.parametrize("dim", [0, 1])
def test_emit_parity_gather_select_cat(gpu_device, dim):
    idx_shape = (2, 4) if dim == 0 else (3, 2)
    rng = np.random.default_rng(dim)
    out_shape = idx_shape
    ops = (FuseOp("Gather", GatherArgs(Input(0, F32), Input(1, I32), BlockLocal(0, F32), dim)),
           FuseOp("Select", SelectArgs(Input(2, F32), Input(3, I32), BlockLocal(1, F32), dim)),
           FuseOp("Cat", CatArgs((Input(4, F32), Input(5, F32)), BlockLocal(2, F32), dim)),
           _binary("Add", 0, 1, 3),
           _binary("Add", 3, 2, 4),
           FuseOp.assign(BlockLocal(4, F32), Output(0, F32, LayoutInfo.IsRef)))
    width = 2
    config = FuseBlockConfig(2, ConcreteLayout(Output(0, F32, LayoutInfo.IsRef)), ops, width, 1)
    gather_src = _rand((3, 4), 4)
    count = out_shape[dim]
    cat_parts = [(1, 4), (1, 4)] if dim == 0 else [(3, 1), (3, 1)]
    _parity(gpu_device, config, [
        {"values": gather_src, "strides": (1, 3), "vs": 1},
        {"values": rng.integers(0, gather_src.shape[dim], idx_shape).astype(np.int32), "vs": 1},
        {"values": _rand((3, 4), 5), "vs": 1},
        {"values": rng.integers(0, 3 if dim == 0 else 4, (count,)).astype(np.int32), "vs": 1},
        {"values": _rand(cat_parts[0], 6), "vs": 1},
        {"values": _rand(cat_parts[1], 7), "vs": 1},
    ], [{"shape": out_shape, "vs": width}])
