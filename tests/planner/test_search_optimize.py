"""The search (``search.StreamOptimizer``, ``search.BlocksOptimizer``), on refimpl and on
fastplan (the ``planner_impl`` fixture): refimpl's results, block positions and log lines.

On burn's mock fusers: the first pass, ``optimize`` and ``BlocksOptimizer``'s result, its log
at every level (a log set or replaced after construction included), capped searches that merge
blocks, unfused blocks and invalid orders the repair falls back on. On the real fusers: blocks
a drop opens (then taking more ops, merging, reset between rounds), and blocks forced to take
their ops (one block's order taken without a DAG, or several).

fastplan skips Python calls on these paths: ``BlocksOptimizer``'s result is unwrapped for the
search (refimpl's dataclass for ``optimize`` and ``_first_pass``), log levels are read once per
log object, blocks are sorted by start position in C, a merge list is made only when two blocks
touch the op, a one-block pass hands back its block's optimization, and the fusers a drop
closes are shared by the next blocks a drop opens (``StreamOptimizer._opened``).
"""

from __future__ import annotations

import importlib
import io
from functools import partial

import pytest

from refimpl.devices import profile_named
from refimpl.planner.fusers import registry as ref_registry
from refimpl.planner.search import search as ref_search
from refimpl.planner.log import NO_LOG, FusionLog, LogLevel
from tests.planner.burn_mocks import add, add_rw, builders
from tests.planner.fuser_ops import NI, RO, RW, drop, op, relative, t, unary_chain
from tests.planner.helpers import A1, A2, B1, B2, C1

# (ops, fuser patterns): one block, two blocks, a hole, a search the block cap stops
CASES = [
    ([A1, A2], [[A1, A2]]),
    ([A1, B1, A2, B2], [[A1, A2], [B1, B2]]),
    ([A1, B1, A2, B2], [[A1, A2, B1, B2]]),
    ([A1, B1, A2], [[A1, A2]]),
    ([A1, B1, C1, A2, B2], [[A1], [B1, B2]]),
]


def _search(module, ops, patterns, log=NO_LOG, max_blocks=5):
    search = module.StreamOptimizer(builders(*patterns), max_blocks, log)
    for operation in ops:
        search.register(operation)
    return search


@pytest.mark.parametrize(("ops", "patterns"), CASES)
def test_first_pass_is_refimpls_result(planner_impl, ops, patterns):
    fast_search = planner_impl.search.search
    ours = _search(fast_search, ops, patterns)._first_pass()
    theirs = _search(ref_search, ops, patterns)._first_pass()
    assert type(ours) is ref_search.BlocksOptimizerResult
    assert ours == theirs
    assert ours.full() == theirs.full()


@pytest.mark.parametrize(("ops", "patterns"), CASES)
@pytest.mark.parametrize("max_blocks", [1, 2, 5])
def test_optimize_equals_refimpl(planner_impl, ops, patterns, max_blocks):
    fast_search = planner_impl.search.search
    ours = _search(fast_search, ops, patterns, max_blocks=max_blocks).optimize(ops)
    theirs = _search(ref_search, ops, patterns, max_blocks=max_blocks).optimize(ops)
    assert ours == theirs


@pytest.mark.parametrize(("ops", "patterns"), CASES)
def test_blocks_optimizer_result(planner_impl, ops, patterns):
    fast_search = planner_impl.search.search
    ours = fast_search.BlocksOptimizer(_search(fast_search, ops, patterns).blocks).optimize()
    theirs = ref_search.BlocksOptimizer(_search(ref_search, ops, patterns).blocks).optimize()
    assert type(ours) is ref_search.BlocksOptimizerResult
    assert ours == theirs


def test_blocks_optimizer_of_no_block_raises_as_refimpl(planner_impl):
    fast_search = planner_impl.search.search
    with pytest.raises(ValueError):
        ref_search.BlocksOptimizer([])
    with pytest.raises(ValueError):
        fast_search.BlocksOptimizer([])


def _log(level):
    out = io.StringIO()
    return FusionLog(level, out), out


def test_blocks_optimizer_reads_a_replaced_log(planner_impl):
    """The levels are read from the log the optimizer holds when it runs: a log set after
    construction prints, one replaced by NO_LOG does not."""
    fast_search = planner_impl.search.search
    blocks = _search(fast_search, [A1, A2], [[A1, A2]]).blocks
    optimizer = fast_search.BlocksOptimizer(blocks)
    log, out = _log(LogLevel.FULL)
    optimizer.log = log
    optimizer.optimize()
    assert "[search] 1 strategy chunk(s), holes=[]" in out.getvalue()
    assert "[block]" in out.getvalue()
    quiet_blocks = _search(fast_search, [A1, A2], [[A1, A2]]).blocks
    optimizer = fast_search.BlocksOptimizer(quiet_blocks, log)
    optimizer.log = NO_LOG
    before = out.getvalue()
    optimizer.optimize()
    assert out.getvalue() == before


@pytest.mark.parametrize("level", [LogLevel.OFF, LogLevel.BASIC, LogLevel.FULL])
@pytest.mark.parametrize(("ops", "patterns"), CASES)
def test_search_log_matches_refimpl(planner_impl, level, ops, patterns):
    """The search's own BlocksOptimizers take the levels its log setter read: the same lines
    as refimpl's, at every level (and none when off)."""
    fast_search = planner_impl.search.search
    ours_log, ours_out = _log(level)
    theirs_log, theirs_out = _log(level)
    ours = _search(fast_search, ops, patterns, ours_log).optimize(ops)
    theirs = _search(ref_search, ops, patterns, theirs_log).optimize(ops)
    assert ours == theirs
    assert ours_out.getvalue() == theirs_out.getvalue()
    if level is LogLevel.OFF:
        assert ours_out.getvalue() == ""
    else:
        assert ours_out.getvalue() != ""


def test_search_log_replaced_after_construction(planner_impl):
    fast_search = planner_impl.search.search
    search = _search(fast_search, [A1, B1, A2, B2], [[A1, A2], [B1, B2]])
    log, out = _log(LogLevel.FULL)
    search.log = log
    search.optimize([A1, B1, A2, B2])
    assert "[search]" in out.getvalue()


# --- capped searches, unfused blocks and invalid orders ----------------------------------------

D1 = add(40, 41, 42)
E1 = add(50, 51, 52)
# B1 frees 21 (ReadWrite) and X reads it after: B1 then X is an invalid order
X = add(21, 60, 61)
B1_RW = add_rw(21, 20, 22)

CAPPED_CASES = [
    ([A1, A2], [[A1, A2]], 5),  # one fused block
    ([A1, A2], [], 5),  # one block, no fuser: unfused in order
    ([A1, B1, A2, B2], [[A1, A2], [B1, B2]], 5),  # two blocks
    ([A1, B1, A2, B2], [], 5),  # two unfused blocks: a Composed repair
    ([A1, B1, A2], [[A1, A2]], 5),  # a hole
    ([A1, B1, C1, A2, B2], [[A1], [B1, B2]], 5),
    ([A1, B1, C1, D1, E1, A2, B2], [[A1, A2]], 3),  # the cap: a merge of every block
    ([A1, B1, C1, D1, E1, A2, B2], [], 2),
    ([A1, B1, C1, A2, B2], [[A1, B1, C1]], 2),
    ([B1_RW, X], [], 5),  # unfused, in an invalid order: unfused stream order, equal
    ([B1_RW, X], [[B1_RW, X]], 5),  # fused, invalid: the repair falls back
    ([A1, B1_RW, A2, X], [[A1, A2]], 5),
]


def _optimized(module, ops, patterns, max_blocks):
    search = module.StreamOptimizer(builders(*patterns), max_blocks)
    for operation in ops:
        search.register(operation)
    return search.optimize(ops), [(b.start_pos, b.end_pos) for b in search.blocks]


@pytest.mark.parametrize(("ops", "patterns", "max_blocks"), CAPPED_CASES)
def test_search_is_refimpls(planner_impl, ops, patterns, max_blocks):
    fast_search = planner_impl.search.search
    ours, our_blocks = _optimized(fast_search, ops, patterns, max_blocks)
    theirs, their_blocks = _optimized(ref_search, ops, patterns, max_blocks)
    assert ours == theirs
    assert our_blocks == their_blocks


@pytest.mark.parametrize(("ops", "patterns", "max_blocks"), CAPPED_CASES)
def test_blocks_optimizer_is_refimpls(planner_impl, ops, patterns, max_blocks):
    fast_search = planner_impl.search.search
    def run(module):
        search = module.StreamOptimizer(builders(*patterns), max_blocks)
        for operation in ops:
            search.register(operation)
        blocks = [block.clone() for block in search.blocks]
        if not blocks:
            return None
        return module.BlocksOptimizer(blocks).optimize()
    assert run(fast_search) == run(ref_search)


# --- blocks a drop opens (the real fusers) ----------------------------------------------------

S = (4, 6)


def _exp(a, out, status=RO):
    return op("Float.Exp", input=t(a, S, status), out=t(out, S, NI))


def _add(a, b, out):
    return op("NumericFloat.Add", lhs=t(a, S), rhs=t(b, S), out=t(out, S, NI))


def _fuser_state(fuser):
    """What a fuser shows, as values (refimpl's and fastplan's compare equal)."""
    return (type(fuser).__name__, fuser.status(), fuser.properties(), fuser.len(),
            getattr(fuser, "closed_reason", None), getattr(fuser, "closed_log", None))


def _state(search):
    return [(block.start_pos, block.end_pos, [_fuser_state(f) for f in block.fusers])
            for block in search.blocks]


# (ops, max_blocks): drops opening blocks, then ops touching the dropped ids' blocks, merges
# once the cap is reached, a drop as the first op of all, and drops only
DROP_CASES = [
    ([_exp(0, 1), drop(5, S), drop(6, S), _exp(1, 2)], 5),
    ([drop(5, S), drop(6, S), drop(7, S), _add(5, 6, 8), _exp(8, 9)], 5),
    ([_exp(0, 1), drop(5, S), drop(6, S), drop(7, S), _exp(20, 21), _add(5, 1, 9)], 3),
    ([drop(5, S), _exp(0, 1), drop(6, S), _add(6, 1, 2), drop(7, S), _exp(2, 3)], 2),
    ([drop(5, S), drop(6, S), drop(7, S), drop(8, S)], 5),
    ([drop(5, S), drop(6, S), drop(7, S), drop(8, S), drop(9, S), drop(10, S)], 4),
]


def _run(search_module, registry_module, ops, max_blocks, rounds):
    fusers = registry_module.FusionRegistry().fusers(profile_named("metal"))
    search = search_module.StreamOptimizer(fusers, max_blocks)
    found = []
    for _ in range(rounds):  # a reset between rounds: the fusers are reset once
        for operation in ops:
            search.register(operation)
        found.append((_state(search), search.optimize(ops)))
        search.reset()
    return found


@pytest.mark.parametrize(("ops", "max_blocks"), DROP_CASES)
def test_drop_opened_blocks_match_refimpl(planner_impl, ops, max_blocks):
    fast_search, fast_registry = planner_impl.search.search, planner_impl.fusers.registry
    ops = relative(ops)
    ours = _run(fast_search, fast_registry, ops, max_blocks, 3)
    theirs = _run(ref_search, ref_registry, ops, max_blocks, 3)
    assert ours == theirs


# --- blocks forced to take their ops (the real fusers) ----------------------------------------

FUSERS = (("fusers.elemwise", "ElementWiseFuser"), ("fusers.matmul", "MatmulFuser"), ("fusers.reduce", "ReduceFuser"),
          ("fusers.reduce_broadcasted", "ReduceBroadcastedFuser"), ("fusers.nhwc", "NHWCRelayoutFuser"))

SOFTMAX = [
    op("BaseFloat.Ones", out=t(0, (1, 2), NI)),
    op("NumericFloat.Add", lhs=t(0, (1, 2), RO), rhs=t(2, (1, 2), RO), out=t(3, (1, 2), NI)),
    op("NumericFloat.SumDim", input=t(3, (1, 2), RO), out=t(1, (1, 0), NI), axis=1),
    op("NumericFloat.Sub", lhs=t(3, (1, 2), RW), rhs=t(1, (1, 0), RO), out=t(4, (1, 2), NI)),
    op("Float.Exp", input=t(4, (1, 2), RW), out=t(5, (1, 2), NI)),
    op("NumericFloat.SumDim", input=t(5, (1, 2), RO), out=t(6, (1, 0), NI), axis=1),
    op("NumericFloat.Div", lhs=t(5, (1, 2), RW), rhs=t(6, (1, 0), RW), out=t(7, (1, 2), NI)),
]


def _refimpl_module(name: str):
    return importlib.import_module(f"refimpl.planner.{name}")


def make(module_of, module: str, name: str, max_bindings: int = 28):
    return getattr(module_of(module), name)(max_bindings)


def optimize_blocks(module_of, segments):
    """``BlocksOptimizer.optimize`` over one block per segment of ops (positions running on
    across the segments), each block forced to take its ops; ``module_of(name)`` gives the
    planner module ``name`` of one implementation."""
    block_module = module_of("search.block")
    search = module_of("search.search")
    blocks, pos = [], 0
    for segment in segments:
        block = block_module.Block([make(module_of, m, n) for m, n in FUSERS])
        for operation in segment:
            block.register(operation, pos, True)
            pos += 1
        blocks.append(block)
    return search.BlocksOptimizer(blocks).optimize()


@pytest.mark.parametrize("segments", [
    [relative(SOFTMAX)],
    [relative(unary_chain(4))],
    [relative(unary_chain(3)), relative(unary_chain(3, first=20))],
    [relative(SOFTMAX[:3]), relative(SOFTMAX[3:])],
], ids=["softmax", "chain", "two-chains", "softmax-split"])
def test_blocks_optimizer_equals_refimpl(planner_impl, segments):
    """One block (its order taken without a DAG) or several: refimpl's result."""
    assert optimize_blocks(partial(getattr, planner_impl), segments) == \
        optimize_blocks(_refimpl_module, segments)
