"""The launch memo's replay (``fastplan.launch.launch_memo._replay``) on fastplan's ``Memory``:

* a replayed step registers its handles by their fields; the ``Handle`` is built when
  something first reads it (``fastplan.launch.handles.live_handle``): a later first-seen launch
  reading a replayed handle, a memory snapshot, and the next replay all see refimpl's
  handles;
* a replay counts the buffers it allocates but writes no ``sizes`` entry for them (the walk's
  memory is its own and nothing in the walk reads them); the buffer numbers still follow
  refimpl's, so the live handles after the walk equal refimpl's interpreter memory's;
* a replay finds the tensors it changes by the keys ``_push_state`` read (no second
  conversion of the tensor ids): ids at the top of [0, 2**64) are replayed too.
"""

from __future__ import annotations

import pytest

import fastplan
from refimpl.devices import PRESETS
from refimpl.frontend import Session
from refimpl.interpreter import Interpreter
from refimpl.interpreter import launch_plan_stream as reference_launch_plan_stream
from refimpl.planner import StreamPlanner as RefStreamPlanner
from refimpl.planner.fusers.registry import FusionRegistry as RefFusionRegistry
from refimpl.stream import Stream

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fuselab.workloads import build, shifted
    from fastplan.launch.execute import _walked_memory
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.stream.processor import StreamPlanner as FastStreamPlanner
    from fastplan.fusers.registry import FusionRegistry as FastFusionRegistry

DEVICES = tuple(sorted(PRESETS))


def reference_walk(stream: Stream, profile):
    """refimpl's steps and the interpreter memory its walk leaves."""
    planner = RefStreamPlanner(RefFusionRegistry().fusers(profile))
    planner.run(stream)
    steps = reference_launch_plan_stream(stream, planner.queue.executed, profile)
    interp = Interpreter(stream, profile, with_values=False)
    interp.run(planner.queue.executed)
    return steps, interp.memory


def fast_walk(stream: Stream, profile, memo):
    planner = FastStreamPlanner(FastFusionRegistry().fusers(profile))
    planner.run(stream)
    return _walked_memory(stream, planner.queue.executed, profile, memo)


def check_walk(stream: Stream, profile, memo=None) -> tuple:
    """The steps and the live handles after the walk are refimpl's; the walk's memory has no
    ``sizes`` entry refimpl's lacks, and each it has is refimpl's."""
    __tracebackhide__ = True
    expected, ref_memory = reference_walk(stream, profile)
    memo = LaunchMemo() if memo is None else memo
    hits = memo.hits
    steps, memory = fast_walk(stream, profile, memo)
    assert steps == expected
    assert memory.handles == ref_memory.handles
    assert memory.next_buffer == ref_memory.next_buffer
    for buffer, size in memory.sizes.items():
        assert ref_memory.sizes[buffer] == size
    return memo.hits - hits, memory, ref_memory


def _block(x):
    return ((x * 2.0 + 1.0).exp() * x).sum_dim(1)


def repeated_then_read(shape=(16, 64), repeats=4) -> Stream:
    """The same block on fresh inputs ``repeats`` times (the memo replays all but the first),
    each output kept; then one new expression reading every kept output: its first-seen launch
    reads the handles the replays registered."""
    s = Session(executor=None)
    kept = []
    for seed in range(repeats):
        y = _block(s.random(shape, seed=seed))
        s.sync(y)
        kept.append(y)
    total = kept[0]
    for y in kept[1:]:
        total = total + y
    z = (total * 3.0).exp()
    s.sync(z)
    return s.close()


@pytest.mark.parametrize("device", DEVICES)
def test_replayed_handles_read_by_a_later_launch(device: str) -> None:
    served, memory, _ = check_walk(repeated_then_read(), PRESETS[device])
    assert served > 0, "no step was replayed: the test does not reach the lazy handles"


@pytest.mark.parametrize("device", ["metal", "webgpu-default"])
def test_replayed_iteration_leaves_refimpls_memory(device: str) -> None:
    """transformer: 15 of 16 layers replayed; after the walk every live handle (most of them
    replayed, built only now by the snapshot) and the buffer count are refimpl's, and the
    replayed buffers have no sizes entry."""
    served, memory, ref_memory = check_walk(build("transformer", 400), PRESETS[device])
    assert served > 20
    assert len(memory.sizes) < len(ref_memory.sizes)


def test_replay_of_tensor_ids_near_two_to_the_64() -> None:
    """Ids past int64 (burn's u64 TensorId): the keys ``_push_state`` read are the memory's
    keys, and the replay removes and registers by them."""
    stream = build("transformer", 300)
    far = shifted(stream, 2**64 - 10 * (max(stream.inputs) + len(stream.items) + 10))
    served, _, _ = check_walk(far, PRESETS["metal"])
    assert served > 0


def test_a_memo_kept_across_streams_replays_onto_refimpls_memory() -> None:
    """A memo kept from one stream to the next (each planned by its own planner, so the
    optimizations are new: the step outcomes are stored again, while the input handles and
    the layout ids come from the memo): the memory after each walk is refimpl's."""
    profile = PRESETS["metal"]
    stream = build("transformer", 300)
    nxt = shifted(stream, 10 * (max(stream.inputs) + len(stream.items) + 1))
    memo = LaunchMemo()
    check_walk(stream, profile, memo)
    served, _, _ = check_walk(nxt, profile, memo)
    assert served > 0
