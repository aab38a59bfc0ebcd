"""The plan-cache policy (``cache.Policy`` and ``ExecutionPlanStore``), on refimpl and on
fastplan (the ``planner_impl`` fixture): driven by the same calls as refimpl's, it must give the
same advice and expose the same candidates, available plans and found plan at every step.

refimpl validates every candidate plan op by op (``refimpl/planner/stream/cache.py``); fastplan walks a
prefix trie of the stored plans' op keys (``fastplan/stream/_trie.pyx``, walked by
``fastplan/stream/cache.pyx``), so the cases below also reach what a trie must get right: plans stored
mid-matching, plans ending inside one another, nodes with many children, very long plans.

burn counterpart: ``crates/burn-fusion/src/stream/execution/{policy,validator}.rs`` (notes
§9.4).
"""

from __future__ import annotations

import dataclasses
import threading

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, invariant, precondition, rule,
                                 run_state_machine_as_test)

from refimpl.ir import OperationIr
from refimpl.planner.stream import cache as reference
from refimpl.planner.stream.cache import (
    Always,
    Defer,
    Execute,
    ExecutionMode,
    Explore,
    OnOperations,
    OnSync,
)
from tests.planner.burn_mocks import operation_1, operation_2, operation_3
from tests.planner.helpers import availables, execution_plan, policy_state


def _with_scalar(op: OperationIr, value: float) -> OperationIr:
    return OperationIr(op.op, dataclasses.replace(op.desc, rhs=value))


# Small alphabets, so that random plans share prefixes, end inside one another and repeat; the
# wide one gives trie nodes more children than fastplan compares one by one (TRIE_SCAN).
NARROW = (operation_1(), operation_2(), operation_3(), _with_scalar(operation_2(), 7.0))
WIDE = NARROW + tuple(_with_scalar(operation_2(), float(k)) for k in range(8, 16))
# Ops are drawn as indices (taken modulo the machine's alphabet), triggers as (kind, indices).
_letters = st.integers(0, len(WIDE) - 1)
_ops = st.lists(_letters, min_size=1, max_size=4)
_triggers = st.one_of(
    st.just(("Always", ())),
    st.just(("OnSync", ())),
    st.tuples(st.just("OnOperations"), st.lists(_letters, min_size=1, max_size=2)),
)
_MODES = (ExecutionMode.Lazy, ExecutionMode.Sync)


def _candidates(policy) -> list:
    return [(c.target, policy_state(c.state), c.size) for c in policy.candidates]


def _advice(policy, store, operations, mode):
    """The policy's action, or the type of the error it raised."""
    try:
        return policy.action(store, operations, mode)
    except RuntimeError as error:
        return type(error)


class PolicyTwins(RuleBasedStateMachine):
    """refimpl's store and policy and those of ``twin`` (a ``cache`` module), given the same
    calls."""

    alphabet = NARROW

    def __init__(self, twin) -> None:
        super().__init__()
        self.stores = (reference.ExecutionPlanStore(), twin.ExecutionPlanStore())
        self.policies = (reference.Policy(), twin.Policy())
        self.queue: list[OperationIr] = []

    def _both(self, call) -> tuple:
        return tuple(call(store, policy) for store, policy in zip(self.stores, self.policies))

    def _spell(self, letters) -> list[OperationIr]:
        return [self.alphabet[letter % len(self.alphabet)] for letter in letters]

    def _trigger(self, drawn):
        kind, letters = drawn
        return OnOperations(tuple(self._spell(letters))) if kind == "OnOperations" else \
            {"Always": Always(), "OnSync": OnSync()}[kind]

    def _add(self, ops, triggers) -> None:
        triggers = [self._trigger(trigger) for trigger in triggers]
        ids = self._both(lambda store, _: store.add(execution_plan(ops, triggers)))
        assert ids[0] == ids[1]

    @rule(ops=_ops, triggers=st.lists(_triggers, max_size=2))
    def add_plan(self, ops, triggers) -> None:
        self._add(self._spell(ops), triggers)

    @precondition(lambda self: len(self.queue) > 0)
    @rule(data=st.data(), tail=st.lists(_letters, max_size=2),
          triggers=st.lists(_triggers, max_size=2))
    def add_plan_along_the_queue(self, data, tail, triggers) -> None:
        """A plan sharing a prefix with the queue: a candidate of the next segment (stored
        mid-matching, not of this one), ending at, inside or beyond the ops seen."""
        head = data.draw(st.integers(1, len(self.queue)))
        self._add(self.queue[:head] + self._spell(tail), triggers)

    @precondition(lambda self: len(self.stores[0]) > 0)
    @rule(data=st.data(), trigger=_triggers)
    def add_trigger(self, data, trigger) -> None:
        plan_id = data.draw(st.integers(0, len(self.stores[0]) - 1))
        self._both(lambda store, _: store.add_trigger(plan_id, self._trigger(trigger)))

    @precondition(lambda self: len(self.stores[0]) > 0)
    @rule(data=st.data(), trigger=_triggers, pop=st.booleans())
    def edit_triggers(self, data, trigger, pop) -> None:
        """A stored plan's trigger list changed behind the store's back."""
        plan_id = data.draw(st.integers(0, len(self.stores[0]) - 1))
        for store in self.stores:
            triggers = store.get(plan_id).triggers
            if pop and triggers:
                triggers.pop()
            else:
                triggers.append(self._trigger(trigger))

    def _update(self, op: OperationIr) -> None:
        self._both(lambda store, policy: policy.update(store, op))
        self.queue.append(op)

    @rule(letter=_letters)
    def update(self, letter) -> None:
        self._update(self._spell([letter])[0])

    @precondition(lambda self: len(self.stores[0]) > 0)
    @rule(data=st.data())
    def update_along_a_plan(self, data) -> None:
        """The op a stored plan has next (at this position), so that matches run deep."""
        plan_id = data.draw(st.integers(0, len(self.stores[0]) - 1))
        ops = self.stores[0].get(plan_id).operations
        self._update(ops[len(self.queue) % len(ops)])

    @rule(data=st.data(), mode=st.sampled_from(_MODES))
    def action(self, data, mode) -> None:
        n = data.draw(st.integers(0, len(self.queue) + 1))
        operations = (self.queue + [self.alphabet[0]])[:n]
        advice = self._both(lambda store, policy: _advice(policy, store, operations, mode))
        assert advice[0] == advice[1]
        assert advice[0] in (Explore(), Defer(), RuntimeError) or isinstance(advice[0], Execute)

    @rule()
    def reset(self) -> None:
        self._both(lambda _, policy: policy.reset())
        self.queue = []

    @invariant()
    def same_state(self) -> None:
        ref, fast = self.policies
        assert ref.num_operations == fast.num_operations == len(self.queue)
        assert ref.found == fast.found
        assert _candidates(ref) == _candidates(fast)
        assert availables(ref) == availables(fast)
        ref_store, fast_store = self.stores
        assert len(ref_store) == len(fast_store)
        assert [ref_store.find(op) for op in self.alphabet] == \
            [fast_store.find(op) for op in self.alphabet]


class WidePolicyTwins(PolicyTwins):
    """The same, over more ops than a trie node compares one by one."""

    alphabet = WIDE


def test_policy_trie_matches_refimpl(planner_impl):
    run_state_machine_as_test(lambda: PolicyTwins(planner_impl.stream.cache))


def test_policy_trie_matches_refimpl_wide(planner_impl):
    run_state_machine_as_test(lambda: WidePolicyTwins(planner_impl.stream.cache))


# --- the odd cases, spelled out --------------------------------------------------------------


def _run(impl, plans, ops, add_after=()) -> list:
    """Feed ``ops`` one by one; after the first, add ``add_after``. Per op: candidates, available
    plan ids, found, and the Lazy and Sync advice for the whole queue."""
    store, policy = impl.ExecutionPlanStore(), impl.Policy()
    for ops_of, triggers in plans:
        store.add(execution_plan(ops_of, triggers))
    seen = []
    for position, op in enumerate(ops):
        policy.update(store, op)
        if position == 0:
            for ops_of, triggers in add_after:
                store.add(execution_plan(ops_of, triggers))
        queue = ops[:position + 1]
        seen.append(([c.target for c in policy.candidates],
                     [a.plan_id for a in policy.availables], policy.found,
                     policy.action(store, queue, ExecutionMode.Lazy),
                     policy.action(store, queue, ExecutionMode.Sync)))
    return seen


o1, o2, o3 = operation_1(), operation_2(), operation_3()

CASES = {
    # a plan stored after the segment's first op is never a candidate of that segment
    "added_mid_matching": ([([o1, o2], [])], [o1, o2, o3], [([o1, o2, o3], [Always()])]),
    # ... nor is one stored then that ends on the path of an older candidate
    "added_inside_a_candidate": ([([o1, o2, o3], [OnSync()])], [o1, o2, o3],
                                 [([o1, o2], [Always()]), ([o1, o2, o3, o1], [])]),
    # ... nor one stored then that branches off an older candidate's path
    "added_off_a_candidate": ([([o1, o3], [])], [o1, o2, o3], [([o1, o2, o3], [Always()])]),
    # plans whose ops are prefixes of one another become available one after the other
    "prefix_plans": ([([o1, o2, o3], [Always()]), ([o1], [OnOperations((o2,))]),
                      ([o1, o2], [OnSync()])], [o1, o2, o3], ()),
    # identical plans are available together, oldest first
    "duplicates": ([([o1, o2], [OnSync()]), ([o1, o2], [Always()]), ([o1, o2], [])],
                   [o1, o2, o1], ()),
    "no_match": ([([o2, o1], [Always()])], [o1, o2], ()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_policy_trie_odd_cases_match_refimpl(planner_impl, case):
    plans, ops, add_after = CASES[case]
    twin = planner_impl.stream.cache
    assert _run(twin, plans, ops, add_after) == _run(reference, plans, ops, add_after)


@pytest.mark.parametrize("letter", range(len(WIDE)))
def test_policy_trie_wide_fanout_matches_refimpl(planner_impl, letter):
    """Nodes with more children than fastplan compares one by one (the root, and the node of
    ``o1``), whichever child the ops take."""
    plans = [([op], [OnOperations((o3,))]) for op in WIDE] + \
        [([o1, op, o3], [Always()]) for op in reversed(WIDE)]
    twin = planner_impl.stream.cache
    for ops in ([WIDE[letter], o3], [o1, WIDE[letter], o3]):
        assert _run(twin, plans, ops) == _run(reference, plans, ops)


def test_policy_trie_very_wide_node_finds_every_child(planner_impl):
    """A node with hundreds of children (its index table doubled several times) finds each
    of them, and no op it does not hold, as refimpl does."""
    many = tuple(_with_scalar(operation_2(), float(k)) for k in range(300))
    plans = [([op], [Always()]) for op in many]
    twin = planner_impl.stream.cache
    for k in (0, 1, 7, 8, 9, 150, 299):
        assert _run(twin, plans, [many[k]]) == _run(reference, plans, [many[k]])
    stranger = _with_scalar(operation_2(), 1000.5)
    assert _run(twin, plans, [stranger]) == _run(reference, plans, [stranger])


def test_policy_trie_plan_added_mid_matching_is_not_a_candidate(planner_impl):
    twin = planner_impl.stream.cache
    store, policy = twin.ExecutionPlanStore(), twin.Policy()
    policy.update(store, o1)
    late = store.add(execution_plan([o1, o2], [Always()]))
    assert policy.action(store, [o1], ExecutionMode.Lazy) == Explore()
    policy.update(store, o2)
    assert policy.candidates == [] and policy.availables == [] and policy.found is None
    policy.reset()
    policy.update(store, o1)
    assert [c.target for c in policy.candidates] == [late]
    policy.update(store, o2)
    assert policy.action(store, [o1, o2], ExecutionMode.Lazy) == Execute(late)


@pytest.mark.parametrize("replacement", [Always(), OnOperations((o2,))])
def test_policy_trie_sees_a_trigger_replaced_after_add(planner_impl, replacement):
    """A stored plan's trigger swapped for another (same count) counts from then on."""
    seen = []
    for impl in (reference, planner_impl.stream.cache):
        store, policy = impl.ExecutionPlanStore(), impl.Policy()
        plan_id = store.add(execution_plan([o1], []))
        store.add_trigger(plan_id, OnSync())
        store.get(plan_id).triggers[0] = replacement
        for op in (o1, o2):
            policy.update(store, op)
        seen.append((policy.found, policy.action(store, [o1, o2], ExecutionMode.Lazy)))
    assert seen[0] == seen[1] == ((0, 1), Execute(0))


def test_policy_trie_sync_executes_a_candidate_as_long_as_the_queue(planner_impl):
    """refimpl's sync also executes a candidate exactly as long as the queue; a candidate is
    longer than the ops seen, so only a hand-set ``num_operations`` lets the queue reach it."""
    plans = [execution_plan([o1, o2, o3], []), execution_plan([o1, o2], []),
             execution_plan([o1, o3], [])]
    advice = []
    for impl in (reference, planner_impl.stream.cache):
        store, policy = impl.ExecutionPlanStore(), impl.Policy()
        for plan in plans:
            store.add(plan)
        policy.update(store, o1)
        policy.num_operations = 3
        advice.append([policy.action(store, [o1] * n, ExecutionMode.Sync) for n in range(4)])
    assert advice[0] == advice[1] == [Explore(), Explore(), Execute(1), Execute(0)]


def test_policy_trie_frees_a_very_long_plan(planner_impl):
    """A plan's trie path is one node per op: freeing a long one must not recurse once per op
    (here on a thread with a small C stack, which such a recursion overflows: the process
    crashes)."""
    twin = planner_impl.stream.cache
    store, policy = twin.ExecutionPlanStore(), twin.Policy()
    plan_id = store.add(execution_plan([o1] * 100_000, [Always()]))
    for _ in range(3):
        policy.update(store, o1)
    assert [c.target for c in policy.candidates] == [plan_id]
    assert policy.action(store, [o1] * 3, ExecutionMode.Lazy) == Defer()
    held = [store, policy]  # the policy holds a node deep in the trie, the store its root
    del store, policy
    previous = threading.stack_size(256 * 1024)
    try:
        freeing = threading.Thread(target=held.clear)
        freeing.start()
    finally:
        threading.stack_size(previous)
    freeing.join()
    assert held == []
