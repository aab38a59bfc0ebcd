"""The plan-cache policy's trigger checks on a cache hit, on refimpl and on fastplan (the
``planner_impl`` fixture): driven by the same calls as refimpl's, the policy must give the same
advice, available plans and found plan at every step, whatever a plan's triggers are or become.

refimpl (``refimpl/planner/stream/cache.py``) keeps ``_TriggerCheck`` objects per available plan;
fastplan (``fastplan/stream/cache.pyx``) keeps them as C structs, one pass over all of them per op,
and reads a plan's triggers through borrowed items.

burn counterpart: ``crates/burn-fusion/src/stream/execution/{policy,validator}.rs`` (notes
§9.4).
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl.ir import OperationIr
from refimpl.planner.stream import cache as reference
from refimpl.planner.stream.cache import Always, ExecutionMode, OnOperations, OnSync
from tests.planner.burn_mocks import operation_1, operation_2, operation_3
from tests.planner.helpers import availables, execution_plan

o1, o2, o3 = operation_1(), operation_2(), operation_3()


def _with_scalar(op: OperationIr, value: float) -> OperationIr:
    return OperationIr(op.op, dataclasses.replace(op.desc, rhs=value))


o4 = _with_scalar(o2, 7.0)
ALPHABET = (o1, o2, o3, o4)


def _steps(impl, plans, ops, edit=None) -> list:
    """Feed ``ops`` one by one (``edit(store)`` after the first); per op: available plans and
    their checks, found, and the Lazy and Sync advice for the whole queue."""
    store, policy = impl.ExecutionPlanStore(), impl.Policy()
    for ops_of, triggers in plans:
        store.add(execution_plan(ops_of, triggers))
    seen = []
    for position, op in enumerate(ops):
        policy.update(store, op)
        if position == 0 and edit is not None:
            edit(store)
        queue = ops[:position + 1]
        seen.append((availables(policy), policy.found,
                     policy.action(store, queue, ExecutionMode.Lazy),
                     policy.action(store, queue, ExecutionMode.Sync)))
    return seen


def _twins(twin, plans, ops, edit=None) -> list:
    fast = _steps(twin, plans, ops, edit)
    assert fast == _steps(reference, plans, ops, edit)
    return fast


def test_checks_of_several_available_plans_fire_in_refimpl_order(planner_impl):
    """Three plans available together, each with several triggers: the first check to fire,
    in plan order then trigger order, names the found plan (not the first to match)."""
    plans = [([o1], [OnOperations((o2, o3, o1)), OnSync()]),
             ([o1], [OnSync(), OnOperations((o2, o4)), OnOperations((o2, o3))]),
             ([o1, o2], [OnOperations((o3,)), Always()])]
    steps = _twins(planner_impl.stream.cache, plans, [o1, o2, o3, o1])
    assert steps[1][1] is not None  # several checks fire at o1 o2: the first one names it


def test_long_trigger_matched_to_its_end_and_one_past_it(planner_impl):
    plans = [([o2], [OnOperations((o1, o3, o4, o1))]), ([o2], [OnOperations((o1, o3))])]
    steps = _twins(planner_impl.stream.cache, plans, [o2, o1, o3, o4, o1, o2])
    assert steps[2][1] == (1, 1)  # o2 o1 o3: plan 1's trigger matched in full


def test_trigger_that_does_not_match_invalidates_only_its_check(planner_impl):
    plans = [([o3], [OnOperations((o1, o2)), OnOperations((o1, o4))])]
    _twins(planner_impl.stream.cache, plans, [o3, o1, o4, o2])


def test_triggers_replaced_by_an_equal_new_list_and_by_a_tuple(planner_impl):
    """A plan's ``triggers`` swapped for another list of the same objects (the keys still
    hold), for a tuple (not a list: read the generic way), or for fewer triggers."""
    plans = [([o1], [OnOperations((o2,)), OnSync()]), ([o1], [Always()])]

    def same_objects(store):
        store.get(0).triggers = list(store.get(0).triggers)

    def as_tuple(store):
        store.get(0).triggers = tuple(reversed(store.get(0).triggers))

    def fewer(store):
        store.get(1).triggers = []

    for edit in (same_objects, as_tuple, fewer):
        # the edit lands after the first op: the next segment (after a reset) sees it
        twin = planner_impl.stream.cache
        for impl in (reference, twin):
            store, policy = impl.ExecutionPlanStore(), impl.Policy()
            for ops_of, triggers in plans:
                store.add(execution_plan(ops_of, triggers))
            edit(store)
            policy.update(store, o1)
            policy.update(store, o2)
            impl_seen = (availables(policy), policy.found,
                         policy.action(store, [o1, o2], ExecutionMode.Lazy))
            if impl is reference:
                expected = impl_seen
            else:
                assert impl_seen == expected


def test_plans_list_shrunk_behind_the_store_raises_not_crashes(planner_impl):
    """``plans`` is public: a plan removed after the store recorded it makes refimpl's lookup
    raise ``IndexError`` (it reads every candidate's ops at each op); fastplan, which reads a
    plan when it matches in full, must raise it too, and not read past the list."""
    for impl in (reference, planner_impl.stream.cache):
        store, policy = impl.ExecutionPlanStore(), impl.Policy()
        for k in range(3):
            store.add(execution_plan([o1] * (k + 1), [Always()]))
        policy.update(store, o1)  # the three plans are this segment's candidates
        del store.plans[1:]
        with pytest.raises(IndexError):
            policy.update(store, o1)


def test_many_available_plans_and_checks(planner_impl):
    """Hundreds of plans end along one path (the check arrays grow many times)."""
    plans = [([o1] * (k % 7 + 1), [OnOperations((o1,) * (k % 3 + 1)), Always()][:k % 2 + 1])
             for k in range(300)]
    _twins(planner_impl.stream.cache, plans, [o1] * 10)


_letters = st.integers(0, len(ALPHABET) - 1)
_trigger = st.one_of(st.just(("Always", ())), st.just(("OnSync", ())),
                     st.tuples(st.just("OnOperations"), st.lists(_letters, min_size=1,
                                                                 max_size=4)))


def _make(drawn):
    kind, letters = drawn
    if kind == "OnOperations":
        return OnOperations(tuple(ALPHABET[k] for k in letters))
    return Always() if kind == "Always" else OnSync()


@settings(max_examples=150, deadline=None)
@given(plans=st.lists(st.tuples(st.lists(_letters, min_size=1, max_size=3),
                                st.lists(_trigger, max_size=4)), min_size=1, max_size=8),
       ops=st.lists(_letters, min_size=1, max_size=9))
def test_trigger_checks_match_refimpl(planner_impl, plans, ops):
    plans = [([ALPHABET[k] for k in ops_of], [_make(t) for t in triggers])
             for ops_of, triggers in plans]
    _twins(planner_impl.stream.cache, plans, [ALPHABET[k] for k in ops])
