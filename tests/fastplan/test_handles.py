"""fastplan's planning memory (``fastplan.launch.handles.Memory``) against refimpl's
(``refimpl.planner.launch.handles.Memory(with_values=False)``).

* drawn streams (``refimpl.strategies.streams``), some with inputs turned into ``Init``
  targets or an item deleted: every op runs unfused through both memories; after each op the
  live handles, ``next_buffer``, ``sizes`` and ``users`` of every buffer agree, and an op
  that fails fails with the same class in both (and leaves the same state behind);
* ``fork``/``adopt``: a discarded fork leaves its original as it was, an adopted one hands
  over its state (equal to a memory that ran everything itself);
* trials (fastplan's fork without the copy, what the launch walk uses): an undone trial leaves
  the memory as it was, layout ids included, a kept one as if it had run everything itself;
  trials do not nest;
* fastplan's ``layouts`` (the launch memo's layout ids) follow the live handles;
* ``sizes`` is shared with forks in fastplan: a buffer number a discarded fork allocated is
  written again, with the right size, when the original allocates it;
* the small API: ``take`` ReadWrite vs ReadOnly, ``remove`` of an unknown id, ``handle`` of an
  unknown id, ``with_values=True``, ``users`` of a buffer shared by views;
* ``alloc`` fills its handles' slots directly: refimpl's ``Handle``, contiguous strides
  included; ``init_targets`` passes over an op of the table that creates nothing by the op's
  address (every such op of ``OPS``, in a tuple or a list of items); lookups probe the live
  table inline (``live_find``) after growth and removals.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

import fastplan
from refimpl.data import contiguous_strides
from refimpl.dtypes import DType
from refimpl.errors import TensorIdError
from refimpl.frontend import Session
from refimpl.planner.launch.handles import Handle
from refimpl.planner.launch.handles import Memory as RefMemory
from refimpl.planner.launch.handles import init_targets as ref_init_targets
from refimpl.ir import InitOperationIr, OperationIr, Sync, TensorIr, TensorStatus
from refimpl.ops import OPS, OpKind, op_named
from refimpl.strategies import elementwise_streams, streams
from refimpl.stream import InputSpec, Stream

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fastplan.launch.handles import Memory as FastMemory
    from fastplan.launch.handles import init_targets as fast_init_targets
    from fastplan.launch.handles import unfused_view
    from refimpl.planner.launch.handles import unfused_view as ref_unfused_view


# --- helpers ---------------------------------------------------------------------------------


def state(memory) -> tuple:
    """What planning reads of a memory: live handles, next buffer, sizes of allocated buffers,
    users of every buffer (allocated or not)."""
    users = {b: memory.users(b) for b in range(memory.next_buffer + 2)}
    sizes = {b: memory.sizes[b] for b in range(memory.next_buffer)}
    return dict(memory.handles), memory.next_buffer, sizes, users


def assert_same_state(fast, ref) -> None:
    __tracebackhide__ = True
    f_handles, f_next, f_sizes, f_users = state(fast)
    r_handles, r_next, r_sizes, r_users = state(ref)
    assert f_handles == r_handles
    assert f_next == r_next
    assert f_sizes == r_sizes
    assert f_users == r_users
    for handle in r_handles.values():
        assert fast.users(handle.buffer) == ref.users(handle.buffer) >= 1
    check_layout_ids(fast)


def check_layout_ids(fast) -> None:
    """fastplan's ``layouts`` (tensor id -> layout id, what the launch memo keys on): one per
    live handle, equal ids exactly for equal (shape, strides, offset, dtype)."""
    __tracebackhide__ = True
    assert set(fast.layouts) == set(fast.handles)
    by_layout: dict = {}
    for tid, handle in fast.handles.items():
        layout = (handle.shape, handle.strides, handle.offset, handle.dtype)
        assert by_layout.setdefault(layout, fast.layouts[tid]) == fast.layouts[tid]
    assert len(set(by_layout.values())) == len(by_layout)


def run_op(memory, op) -> type | None:
    """Run one op unfused; the class of the error it raised, if any."""
    try:
        memory.run_unfused(op)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return type(exc)
    return None


def both(stream: Stream) -> tuple:
    fast, ref = FastMemory(), RefMemory(with_values=False)
    fast.load_inputs(stream)
    ref.load_inputs(stream)
    return fast, ref


def init_op(tensor_id: int, spec: InputSpec) -> OperationIr:
    out = TensorIr(tensor_id, tuple(spec.shape), spec.dtype, TensorStatus.NotInit)
    return OperationIr(op_named("Init"), InitOperationIr(out))


@st.composite
def mutated_streams(draw, base) -> Stream:
    """A drawn stream; some inputs become ``Init`` targets (the ``Init`` placed anywhere, so
    also after a use: an error), and at times one item is deleted (a later use of what it
    made, or a double release, is an error)."""
    stream = draw(base)
    items = list(stream.items)
    if items and draw(st.integers(0, 3)) == 0:
        del items[draw(st.integers(0, len(items) - 1))]
    for tid in sorted(stream.inputs):
        if draw(st.integers(0, 3)) == 0:
            items.insert(draw(st.integers(0, len(items))), init_op(tid, stream.inputs[tid]))
    return Stream(dict(stream.inputs), tuple(items))


def sample_stream() -> Stream:
    """Two inputs (one transposed), a view, an element-wise op, a drop."""
    s = Session(executor=None)
    a = s.random((4, 8), seed=0)
    b = s.random((8, 4), seed=1, strides=(1, 8))
    t = a.swap_dims(0, 1)
    c = (t + b).exp()
    del b
    s.sync(a, c, t)
    return s.close()


# --- drawn streams ---------------------------------------------------------------------------


def check_stream(stream: Stream) -> None:
    __tracebackhide__ = True
    fast, ref = both(stream)
    assert_same_state(fast, ref)
    for index, item in enumerate(stream.items):
        if isinstance(item, Sync):
            continue
        fast_error, ref_error = run_op(fast, item), run_op(ref, item)
        assert fast_error == ref_error, f"item {index}: {item.name}"
        if ref_error is not None:
            event(f"error: {ref_error.__name__}")
        assert_same_state(fast, ref)


@given(mutated_streams(streams()))
def test_memory_unfused_stream_matches_refimpl(stream: Stream) -> None:
    check_stream(stream)


@given(mutated_streams(elementwise_streams(max_ops=14)))
def test_memory_unfused_elementwise_stream_matches_refimpl(stream: Stream) -> None:
    check_stream(stream)


def run_to_split(stream: Stream, data) -> tuple:
    """Both memories after the stream's ops up to a drawn split: ``(ops, split, fast, ref)``."""
    ops = stream.ops
    split = data.draw(st.integers(0, len(ops)), label="split")
    fast, ref = both(stream)
    for op in ops[:split]:
        assert run_op(fast, op) == run_op(ref, op)
    return ops, split, fast, ref


@given(streams(), st.data())
def test_memory_fork_discarded_or_adopted(stream: Stream, data) -> None:
    ops, split, fast, ref = run_to_split(stream, data)
    before_fast, before_ref = state(fast), state(ref)
    fast_fork, ref_fork = fast.fork(), ref.fork()
    for op in ops[split:]:
        assert run_op(fast_fork, op) == run_op(ref_fork, op)
        assert_same_state(fast_fork, ref_fork)
    # discarded: the originals are as they were (sizes of their own buffers included)
    assert state(fast) == before_fast == before_ref == state(ref)
    if data.draw(st.booleans(), label="adopt"):
        fast.adopt(fast_fork)
        ref.adopt(ref_fork)
        straight_fast, straight_ref = both(stream)
        for op in ops:
            run_op(straight_fast, op)
            run_op(straight_ref, op)
        assert_same_state(fast, ref)
        assert state(fast) == state(straight_fast) == state(straight_ref)
    else:
        # the original goes on as if the fork never existed
        for op in ops[split:]:
            assert run_op(fast, op) == run_op(ref, op)
            assert_same_state(fast, ref)


@given(streams(), st.data())
def test_memory_trial_undone_or_kept(stream: Stream, data) -> None:
    ops, split, fast, ref = run_to_split(stream, data)
    before, layouts = state(fast), dict(fast.layouts)
    ref_fork = ref.fork()
    fast.begin_trial()
    for op in ops[split:]:
        assert run_op(fast, op) == run_op(ref_fork, op)
        assert_same_state(fast, ref_fork)
    if data.draw(st.booleans(), label="keep"):
        fast.keep_trial()
        straight, _ = both(stream)
        for op in ops:
            run_op(straight, op)
        assert state(fast) == state(straight)
        assert dict(fast.layouts) == dict(straight.layouts)
    else:
        fast.undo_trial()
        assert state(fast) == before
        assert dict(fast.layouts) == layouts
        # the memory goes on as if the trial never ran
        for op in ops[split:]:
            assert run_op(fast, op) == run_op(ref, op)
            assert_same_state(fast, ref)


def test_memory_trials_do_not_nest() -> None:
    fast = FastMemory()
    fast.begin_trial()
    with pytest.raises(RuntimeError, match="already running"):
        fast.begin_trial()
    fast.undo_trial()
    fast.undo_trial()  # none running: nothing to undo
    fast.begin_trial()
    fast.keep_trial()


# --- sizes shared with forks ---------------------------------------------------------------


def test_memory_sizes_rewritten_after_discarded_fork() -> None:
    fast, ref = FastMemory(), RefMemory(with_values=False)
    for memory in (fast, ref):
        memory.alloc((2, 3), DType.F32)
    fast_fork, ref_fork = fast.fork(), ref.fork()
    fork_handles = [memory.alloc((5, 7), DType.F16) for memory in (fast_fork, ref_fork)]
    assert fork_handles[0] == fork_handles[1]
    assert fast_fork.sizes[1] == ref_fork.sizes[1] == 35
    # the fork is discarded; the original allocates buffer 1 again, padded:
    # 1 + (3-1)*4 + (2-1)*1 = 10 elements
    padded = [memory.alloc((3, 2), DType.F32, strides=(4, 1)) for memory in (fast, ref)]
    assert padded[0] == padded[1] == Handle(1, (3, 2), (4, 1), 0, DType.F32)
    assert fast.sizes[1] == ref.sizes[1] == 10
    assert fast.next_buffer == ref.next_buffer == 2
    # a fork that allocated two numbers: both are rewritten by the original's next allocs
    fast_fork = fast.fork()
    fast_fork.alloc((100,), DType.F32)
    fast_fork.alloc((200,), DType.F32)
    fast.alloc((4,), DType.F32)
    assert fast.sizes[2] == 4
    fast.alloc((0, 3), DType.F32)
    assert fast.sizes[3] == 0
    assert {b: fast.sizes[b] for b in range(fast.next_buffer)} == {0: 6, 1: 10, 2: 4, 3: 0}


def test_memory_sizes_rewritten_by_unfused_ops_after_discarded_fork() -> None:
    stream = sample_stream()
    fast, ref = both(stream)
    ops = stream.ops
    fork = fast.fork()
    fork.alloc((1000,), DType.F32)  # takes the number the next op's output will get
    fork.alloc((1000,), DType.F32)
    for op in ops:
        assert run_op(fast, op) is run_op(ref, op) is None
        assert_same_state(fast, ref)


# --- the small API ---------------------------------------------------------------------------


def test_memory_with_values_refused() -> None:
    with pytest.raises(ValueError):
        FastMemory(with_values=True)
    assert FastMemory().with_values is False
    assert FastMemory(with_values=False).with_values is False


@pytest.mark.parametrize("shape, strides", [
    ((2, 3, 4), None),
    ((), None),
    ((1,), None),
    ((2**31, 2**31 - 1, 3), None),  # products past the C bound: Python ints
    ((4, 5), (1, 4)),
])
def test_alloc_builds_refimpls_handle(shape, strides) -> None:
    from fastplan.launch.handles import Memory

    fast, ref = Memory(), RefMemory(with_values=False)
    handle, expected = fast.alloc(shape, DType.F16, strides), ref.alloc(shape, DType.F16, strides)
    assert type(handle) is Handle
    assert handle == expected
    assert all(type(s) is int for s in handle.strides)
    assert fast.sizes == ref.sizes


@pytest.mark.parametrize("status", [TensorStatus.ReadOnly, TensorStatus.ReadWrite])
def test_memory_take_read_write_removes_read_only_keeps(status: TensorStatus) -> None:
    stream = sample_stream()
    fast, ref = both(stream)
    for memory in (fast, ref):
        memory.run_unfused(stream.ops[0])  # SwapDims: a view of input 0
    assert fast.users(0) == ref.users(0) == 2
    taken = [memory.take(0, status) for memory in (fast, ref)]
    assert taken[0] == taken[1] == Handle(0, (4, 8), (8, 1), 0, DType.F32)
    kept = status is TensorStatus.ReadOnly
    assert (0 in fast.handles) is (0 in ref.handles) is kept
    assert fast.users(0) == ref.users(0) == (2 if kept else 1)
    assert_same_state(fast, ref)
    if not kept:
        with pytest.raises(TensorIdError):
            fast.take(0, status)


def test_memory_remove_unknown_is_noop() -> None:
    stream = sample_stream()
    fast, ref = both(stream)
    before = state(fast)
    fast.remove(12345)
    ref.remove(12345)
    assert state(fast) == before
    assert_same_state(fast, ref)
    fast.remove(0)
    fast.remove(0)  # a second remove of the same id: nothing left to release
    ref.remove(0)
    ref.remove(0)
    assert_same_state(fast, ref)
    assert fast.users(0) == 0


def test_memory_handle_unknown_raises() -> None:
    for memory in (FastMemory(), RefMemory(with_values=False)):
        with pytest.raises(TensorIdError):
            memory.handle(7)
        with pytest.raises(TensorIdError):
            memory.take(7, TensorStatus.ReadOnly)


def test_memory_users_count_views_sharing_a_buffer() -> None:
    stream = sample_stream()
    fast, ref = both(stream)
    swap, add, exp = stream.ops[:3]
    assert swap.op.variant == "SwapDims" and swap.desc.input.status is TensorStatus.ReadOnly
    for memory in (fast, ref):
        memory.run_unfused(swap)
    t = swap.desc.out.id
    assert fast.handle(t) == ref.handle(t) == Handle(0, (8, 4), (1, 8), 0, DType.F32)
    assert fast.users(0) == ref.users(0) == 2
    assert fast.users(1) == ref.users(1) == 1  # input 1 (transposed strides)
    for memory in (fast, ref):
        memory.run_unfused(add)
        memory.run_unfused(exp)
    assert_same_state(fast, ref)
    assert fast.users(0) == 2
    fast.remove(t)
    assert fast.users(0) == 1
    fast.remove(0)
    assert fast.users(0) == 0


def test_memory_register_over_a_live_id_releases_its_buffer() -> None:
    fast, ref = FastMemory(), RefMemory(with_values=False)
    for memory in (fast, ref):
        first = memory.alloc((2,), DType.F32)
        second = memory.alloc((2,), DType.F32)
        memory.register(0, first)
        memory.register(1, first)
        memory.register(0, second)
    assert fast.users(0) == ref.users(0) == 1
    assert fast.users(1) == ref.users(1) == 1
    assert_same_state(fast, ref)


def test_memory_init_defers_and_unknown_init_fails() -> None:
    stream = sample_stream()
    spec = stream.inputs[1]
    items = (init_op(1, spec),) + stream.items
    deferred = Stream(dict(stream.inputs), items)
    fast, ref = both(deferred)
    assert 1 not in fast.handles and 1 not in ref.handles
    for item in deferred.ops:
        assert run_op(fast, item) is run_op(ref, item) is None
        assert_same_state(fast, ref)
    unknown = init_op(99, spec)
    assert run_op(fast, unknown) is run_op(ref, unknown) is KeyError
    assert_same_state(fast, ref)


def test_init_targets_match_refimpl_on_odd_items() -> None:
    """fastplan skips an op of the table that creates nothing without reading its desc; the
    rest goes through the full check, so odd items are classified as refimpl does: an ``Init``
    whose op is a copy of the table's (kind Init), the table's ``Init`` with another struct,
    an ``Add`` with a garbage desc."""
    spec = InputSpec((2, 3), DType.F32, random=1)
    init = init_op(7, spec)
    copied = OperationIr(dataclasses.replace(init.op), init.desc)
    other_struct = OperationIr(init.op, type("Desc", (), {"out": init.desc.out})())
    garbage = OperationIr(op_named("NumericFloat.Add"), object())
    for items, expected in (([init], {7}), ([copied], {7}), ([other_struct], {7}),
                            ([garbage, init], {7}), ([garbage], set())):
        stream = Stream({7: spec}, tuple(items))
        assert fast_init_targets(stream) == ref_init_targets(stream) == expected, items


def test_init_targets_skips_every_plain_op_of_the_table() -> None:
    from fastplan.launch.handles import init_targets as fast_init_targets
    from refimpl.planner.launch.handles import init_targets as ref_init_targets

    spec = InputSpec((2, 3), DType.F32, random=1)
    plain = [OperationIr(op, object()) for op in OPS if op.kind is not OpKind.INIT]
    assert plain
    init = init_op(7, spec)
    copied = OperationIr(dataclasses.replace(init.op), init.desc)  # not the table's entry
    sync = Sync((TensorIr(7, (2, 3), DType.F32, TensorStatus.ReadOnly),))
    for items, expected in ((plain, set()), (plain + [init], {7}), ([sync, copied], {7}),
                            ([init, sync] + plain[:3], {7}), ([], set())):
        for container in (tuple, list):
            stream = Stream({7: spec}, container(items))
            assert fast_init_targets(stream) == ref_init_targets(stream) == expected


def test_unfused_view_matches_refimpl_and_keeps_out_dtype() -> None:
    stream = sample_stream()
    fast = both(stream)[0]
    swap = stream.ops[0]
    handles = {0: fast.handle(0)}
    assert unfused_view(swap, handles) == ref_unfused_view(swap, handles)
    cast_out = dataclasses.replace(swap.desc.out, dtype=DType.F16)
    retyped = OperationIr(swap.op, dataclasses.replace(swap.desc, out=cast_out))
    view = unfused_view(retyped, handles)
    assert view == ref_unfused_view(retyped, handles)
    assert view.dtype is DType.F16
    assert unfused_view(stream.ops[1], {0: handles[0], 1: fast.handle(1)}) is None


_EDGE_INTS = st.one_of(st.integers(-3, 5), st.sampled_from([2**29, 2**30 - 1, 2**30, 2**31,
                                                             -(2**30) + 1, 2**62, 2**70]))


@given(st.lists(_EDGE_INTS, max_size=10), st.lists(_EDGE_INTS, max_size=10))
def test_memory_alloc_size_matches_refimpl_buffer_length(shape, strides) -> None:
    """A buffer's size is refimpl's ``buffer_length`` whatever the dims and strides: C
    arithmetic where it is exact, Python ints past it (huge, negative, unpaired, > 8 dims)."""
    from refimpl.data import buffer_length

    memory = FastMemory()
    handle = memory.alloc(shape, DType.F32, strides)
    assert memory.sizes[handle.buffer] == buffer_length(shape, strides)
    assert type(memory.sizes[handle.buffer]) is int


@given(st.lists(st.lists(st.one_of(_EDGE_INTS, st.integers(-(2**30) + 1, 2**30 - 1)),
                         max_size=9), min_size=1, max_size=4),
       st.lists(_EDGE_INTS, min_size=1, max_size=4))
def test_memory_contiguous_strides_and_layout_ids(shapes, offsets) -> None:
    """Contiguous strides are refimpl's (C arithmetic while the running product fits, Python
    ints past it), and a layout keeps one id whichever form its key takes (bytes for small
    ints, a tuple for huge ones or more than 8 dims): every shape is registered twice, under
    every drawn offset."""
    fast, ref = FastMemory(), RefMemory(with_values=False)
    tid = 0
    for shape in shapes + shapes:
        for memory in (fast, ref):
            memory.register(tid, memory.alloc(shape, DType.F32))
        tid += 1
        for offset in offsets:
            for memory in (fast, ref):
                handle = memory.handle(tid - 1)
                memory.register(tid, dataclasses.replace(handle, offset=offset))
            tid += 1
    assert_same_state(fast, ref)


def test_memory_load_inputs_takes_any_sequence_like_refimpl() -> None:
    """``load_inputs`` reads an ``InputSpec``'s fields at their slots; shapes and strides given
    as lists or tuples give the same handles, buffers and layout ids as refimpl's."""
    inputs = {5: InputSpec((2, 3), DType.F32), 1: InputSpec([2, 3], DType.F32),
              3: InputSpec((3, 2), DType.F32, strides=[1, 3]),
              2: InputSpec((3, 2), DType.F32, strides=(1, 3)), 4: InputSpec((), DType.I32)}
    fast, ref = both(Stream(inputs, ()))
    assert_same_state(fast, ref)
    assert fast.layouts[5] == fast.layouts[1] != fast.layouts[2] == fast.layouts[3]


def _relaid_inputs(stream: Stream, how: str, offset: int) -> Stream:
    """``stream``'s inputs under ids moved by ``offset`` (a runtime's next iteration), their
    layouts changed the way ``how`` names."""
    inputs = {}
    for tid, spec in stream.inputs.items():
        if how == "dtype":
            spec = dataclasses.replace(spec, dtype=DType.F16)
        elif how == "strides" and len(spec.shape) == 2:
            spec = dataclasses.replace(spec, strides=(1, spec.shape[0]))
        elif how == "explicit":
            spec = dataclasses.replace(spec, strides=contiguous_strides(spec.shape))
        elif how == "bool" and spec.shape and spec.shape[0] == 1:
            spec = dataclasses.replace(spec, shape=(True,) + tuple(spec.shape[1:]))
        elif how == "list":
            spec = dataclasses.replace(spec, shape=list(spec.shape))
        inputs[tid + offset] = spec
    if how == "fewer":
        inputs = dict(list(inputs.items())[::2])
    return Stream(inputs, ())


@pytest.mark.parametrize("how", ["same", "dtype", "strides", "explicit", "bool", "list",
                                 "fewer"])
def test_memory_load_inputs_through_a_memo_is_refimpls(how: str) -> None:
    """fastplan.launch.execute loads each stream's inputs into a fresh memory through its
    memo's handles (``Memory.load_inputs_with``): an input takes the handle the memo made for
    its position only where its layout is that handle's. Streams of the same inputs, then
    changed (``how``), then the same again, under new ids every time: the memory holds
    refimpl's handles, buffers and sizes, and one layout table gives equal layouts equal ids
    across the memories."""
    from fastplan.launch.handles import _InputsMemo, _load_inputs_memoized

    inputs = {3: InputSpec((1, 8), DType.F32), 1: InputSpec((4, 8), DType.F32),
              7: InputSpec((8, 4), DType.F32, strides=(1, 8)), 2: InputSpec((), DType.I32),
              5: InputSpec((4, 8), DType.F32), 9: InputSpec((1,), DType.F32)}
    base = Stream(inputs, ())
    memo, table, by_layout = _InputsMemo(), {}, {}
    for k, variant in enumerate(("same", how, "same", how)):
        stream = _relaid_inputs(base, variant, 100 * k)
        fast = _load_inputs_memoized(stream, memo, table)
        ref = RefMemory(with_values=False)
        ref.load_inputs(stream)
        assert_same_state(fast, ref)
        for tid, handle in fast.handles.items():
            layout = (handle.shape, handle.strides, handle.offset, handle.dtype)
            assert by_layout.setdefault(fast.layouts[tid], layout) == layout


def _same_home(count: int, cap: int = 64) -> list[int]:
    """``count`` ids whose probes start at the same slot of a table of ``cap`` slots
    (fastplan.launch.handles' ``_home``: Fibonacci hashing): a run a delete must close up."""
    def home(key: int) -> int:
        return ((key * 0x9E3779B97F4A7C15) % 2**64 >> 32) & (cap - 1)

    return [key for key in range(100, 100_000) if home(key) == home(100)][:count]


# The live table's keys: ids that probe from one slot (collisions: runs the delete must close
# up), small ids, and ids up to the end of burn's u64 TensorId (past 2**63: stored as the
# int64 of the same bits).
_COLLIDING = _same_home(8)
_TENSOR_IDS = st.one_of(st.sampled_from(_COLLIDING), st.integers(0, 40),
                        st.sampled_from([2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**63,
                                         2**64 - 10, 2**64 - 1]))


@given(st.lists(st.tuples(st.sampled_from(["register", "remove", "take", "trial"]),
                          _TENSOR_IDS, st.booleans()), max_size=150))
def test_memory_live_table_follows_refimpl(steps) -> None:
    """fastplan keeps the live handles in an open-addressing table (linear probing, entries
    moved back on delete instead of tombstones, doubled when half full): any sequence of
    registrations, removals and ``ReadWrite`` takes, some of them in trials that are undone,
    leaves the same live handles, use counts and layout ids as refimpl's dict."""
    fast, ref = FastMemory(), RefMemory(with_values=False)
    shared = [memory.alloc((2, 2), DType.F32) for memory in (fast, ref)]
    for action, tid, flag in steps:
        if action == "trial":  # the next registrations, undone (flag) or kept
            fast.begin_trial()
            fork = ref.fork()
            for memory in (fast, fork):
                memory.register(tid, memory.alloc((3,), DType.F32))
                memory.remove(0)
            if flag:
                fast.undo_trial()
            else:
                fast.keep_trial()
                ref.adopt(fork)
        for memory, handle in zip((fast, ref), shared):
            if action == "register":
                memory.register(tid, handle if flag else memory.alloc((4, 1), DType.F32))
            elif action == "remove":
                memory.remove(tid)
            elif action == "take" and tid in memory.handles:
                memory.take(tid, TensorStatus.ReadWrite if flag else TensorStatus.ReadOnly)
        assert_same_state(fast, ref)
        live = fast.handles
        for t in [*range(41), *_COLLIDING, 2**63, 2**64 - 1]:
            assert (t in live) is (t in ref.handles)
            assert t not in live or fast.handle(t) == ref.handle(t)


def test_live_table_probe_after_growth_and_removals() -> None:
    """``Memory``'s lookups probe the live table inline (``live_find``): ids that collide,
    a table grown several times and entries removed between them are found as a dict
    finds them."""
    from fastplan.launch.handles import Memory as FastMemory
    from refimpl.planner.launch.handles import Memory as RefMemory

    fast, ref = FastMemory(), RefMemory(with_values=False)
    ids = [k * 2**32 for k in range(40)] + list(range(300, 700, 3)) + [2**64 - 1, 2**63]
    for memory in (fast, ref):
        for n, tid in enumerate(ids):
            memory.register(tid, memory.alloc((2, n + 1), DType.F32))
        for tid in ids[::3]:
            memory.remove(tid)
    assert fast.handles == ref.handles
    for tid in ids + [1, 2**32 + 1, 299]:
        assert (tid in fast.handles) == (tid in ref.handles)
        if tid in ref.handles:
            assert fast.handle(tid) == ref.handle(tid)
            assert fast.users(ref.handle(tid).buffer) == ref.users(ref.handle(tid).buffer)


@pytest.mark.parametrize("tensor_id", [True, 1.0, "1", -1, -(2**63), 2**64])
def test_memory_refuses_a_tensor_id_outside_u64_with_boundary_error(tensor_id) -> None:
    """Tensor ids are exact ints in [0, 2**64) in fastplan's memory (burn's u64 ``TensorId``,
    what the stream loader builds); any other id is outside its boundary: a ``BoundaryError``
    (a ``TypeError``) naming it, and the planner then plans the launch with refimpl
    (``test_launch_plan_stream_outside_the_boundary_is_refimpls``)."""
    from fastplan._keys import BoundaryError

    memory = FastMemory()
    handle = memory.alloc((2,), DType.F32)
    for call in (lambda: memory.register(tensor_id, handle), lambda: memory.remove(tensor_id),
                 lambda: memory.handle(tensor_id),
                 lambda: memory.take(tensor_id, TensorStatus.ReadOnly)):
        with pytest.raises(BoundaryError, match="tensor id"):
            call()
    assert memory.handles == {} and memory.users(handle.buffer) == 0


@pytest.mark.parametrize("buffer", [1, -1, True, "0", 2**64])
def test_memory_refuses_a_buffer_it_did_not_allocate_with_boundary_error(buffer) -> None:
    """Use counts are kept per buffer number this memory allocated (every handle of the launch
    walk carries one); a handle on any other buffer is outside the boundary, refused before
    anything changes. ``users`` of any number answers as refimpl's (0 where none is live)."""
    from fastplan._keys import BoundaryError

    memory = FastMemory()
    memory.register(0, memory.alloc((2,), DType.F32))
    foreign = Handle(buffer, (2,), (1,), 0, DType.F32)
    with pytest.raises(BoundaryError, match="not allocated"):
        memory.register(0, foreign)
    assert memory.users(0) == 1 and memory.handle(0).buffer == 0
    assert memory.users(buffer) == RefMemory(with_values=False).users(buffer) == 0
    ref = RefMemory(with_values=False)
    ref.register(0, ref.alloc((2,), DType.F32))
    for number in (0, False, 0.0, "0", 1):
        assert memory.users(number) == ref.users(number)
