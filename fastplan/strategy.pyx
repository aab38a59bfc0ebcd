# cython: language_level=3
"""How a segment of relative ops is executed: ``ExecutionStrategy`` and ``BlockOptimization``.

burn counterpart: ``crates/burn-fusion/src/stream/store/base.rs`` (``ExecutionStrategy``) and
``crates/burn-fusion/src/search/block.rs`` (``BlockOptimization``, ``map_ordering``,
``include_trailing``). Mirrors refimpl/planner/strategy.py: same names, same order, same
results.

The strategy classes are refimpl's own (plain frozen data: the twins must return equal trees,
so they return the same classes); the functions are compiled. Trees are walked with explicit
stacks, as in refimpl.
"""

from refimpl.planner.strategy import (
    BlockOptimization,
    Composed,
    ExecutionStrategy,
    Operations,
    Optimization,
)

__all__ = [
    "ExecutionStrategy",
    "Optimization",
    "Operations",
    "Composed",
    "BlockOptimization",
    "leaves",
    "strategy_len",
    "map_ordering",
    "map_block_ordering",
    "include_trailing",
    "max_relative_shape_id",
]

_Composed = Composed
_Operations = Operations
_Optimization = Optimization
_BlockOptimization = BlockOptimization


cdef list leaves_of(object strategy):
    """The leaves in execution order (explicit stack, as refimpl)."""
    cdef list found = []
    cdef list stack = [strategy]
    cdef tuple items
    cdef Py_ssize_t i
    while stack:
        node = stack.pop()
        if isinstance(node, _Composed):
            items = node.items
            for i in range(len(items) - 1, -1, -1):
                stack.append(items[i])
        else:
            found.append(node)
    return found


cdef Py_ssize_t len_of(object strategy) except -1:
    """The number of positions a strategy covers."""
    cdef Py_ssize_t total = 0
    if not isinstance(strategy, _Composed):
        return len(strategy.ordering)
    for leaf in leaves_of(strategy):
        total += len(leaf.ordering)
    return total


def leaves(strategy):
    """The ``Optimization``/``Operations`` leaves in execution order.

    Mirrors refimpl.planner.strategy.leaves.
    """
    return leaves_of(strategy)


def strategy_len(strategy):
    """How many segment positions the strategy covers (its share of the ordering).

    Mirrors refimpl.planner.strategy.strategy_len.
    """
    return len_of(strategy)


cdef object _remap(object leaf, object mapping):
    cdef tuple ordering = tuple([mapping[p] for p in leaf.ordering])
    if isinstance(leaf, _Optimization):
        return _Optimization(leaf.opt, ordering, leaf.score)
    return _Operations(ordering)


cdef object map_ordering_of(object strategy, object mapping):
    """``map_ordering``: the same tree with every leaf's positions mapped (post-order)."""
    cdef list done = []
    cdef list stack = [(strategy, False)]
    cdef Py_ssize_t count, i
    cdef tuple items
    if not isinstance(strategy, _Composed):
        return _remap(strategy, mapping)
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, _Composed):
            done.append(_remap(node, mapping))
        elif expanded:
            count = len(node.items)
            items = tuple(done[len(done) - count:])
            del done[len(done) - count:]
            done.append(_Composed(items))
        else:
            stack.append((node, True))
            items = node.items
            for i in range(len(items) - 1, -1, -1):
                stack.append((items[i], False))
    return done[0]


def map_ordering(strategy, mapping):
    """Every position ``p`` of every leaf replaced by ``mapping[p]`` (burn
    ``ExecutionStrategy::map_ordering``).

    Mirrors refimpl.planner.strategy.map_ordering.
    """
    return map_ordering_of(strategy, mapping)


cdef object map_block_ordering_of(object block_opt, object mapping):
    """``map_block_ordering`` (see there)."""
    ordering = tuple([mapping[p] for p in block_opt.ordering])
    return _BlockOptimization(map_ordering_of(block_opt.strategy, mapping), ordering)


def map_block_ordering(block_opt, mapping):
    """``map_ordering`` on both the strategy and the concatenated ordering.

    Mirrors refimpl.planner.strategy.map_block_ordering.
    """
    return map_block_ordering_of(block_opt, mapping)


def include_trailing(block_opt, num_operations):
    """Extend the optimization to cover all ``num_operations`` positions of its segment: the
    uncovered trailing positions run unfused after it (burn ``include_trailing``, #5137).

    Mirrors refimpl.planner.strategy.include_trailing.
    """
    return trailing_included(block_opt, num_operations)


cdef object trailing_included(object block_opt, object num_operations):
    """``include_trailing`` (see there)."""
    covered = len(block_opt.ordering)
    if covered >= num_operations:
        return block_opt
    trailing = tuple(range(covered, num_operations))
    tail = _Operations(trailing)
    strategy = block_opt.strategy
    if isinstance(strategy, _Composed):
        strategy = _Composed(strategy.items + (tail,))
    else:
        strategy = _Composed((strategy, tail))
    return _BlockOptimization(strategy, block_opt.ordering + trailing)


def max_relative_shape_id(strategy):
    """The highest relative shape id any optimization of the strategy names, or ``None``
    (burn ``ExecutionStrategy::max_relative_shape_id``, #5400).

    Mirrors refimpl.planner.strategy.max_relative_shape_id.
    """
    best = None
    for leaf in leaves_of(strategy):
        if not isinstance(leaf, _Optimization):
            continue
        report = getattr(leaf.opt, "max_relative_shape_id", None)
        found = report() if report is not None else None
        if found is not None and (best is None or found > best):
            best = found
    return best
