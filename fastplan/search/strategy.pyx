# cython: language_level=3
"""How a segment of relative ops is executed: ``ExecutionStrategy`` and ``BlockOptimization``.

burn counterpart: ``crates/burn-fusion/src/stream/store/base.rs`` (``ExecutionStrategy``) and
``crates/burn-fusion/src/search/block.rs`` (``BlockOptimization``, ``map_ordering``,
``include_trailing``). Mirrors ``refimpl/planner/search/strategy.py``: same names, same order, same
results.

The strategy classes are refimpl's own (plain frozen data: the twins must return equal trees,
so they return the same classes); the functions are compiled. Trees are walked with explicit
stacks, as in refimpl.
"""

from fastplan.stream.relative cimport new_frozen

from refimpl.planner.fusers.elemwise import ElemwiseOptimization
from refimpl.planner.fusers.matmul import MatmulOptimization
from refimpl.planner.fusers.nhwc import NHWCRelayoutOptimization
from refimpl.planner.fusers.reduce import ReduceOptimization
from refimpl.planner.fusers.reduce_broadcasted import ReduceBroadcastedOptimization
from refimpl.planner.search.strategy import (
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

    Mirrors refimpl.planner.search.strategy.leaves.
    """
    return leaves_of(strategy)


def strategy_len(strategy):
    """How many segment positions the strategy covers (its share of the ordering).

    Mirrors refimpl.planner.search.strategy.strategy_len.
    """
    return len_of(strategy)


cdef object _remap(object leaf, object mapping):
    cdef tuple ordering = tuple([mapping[p] for p in leaf.ordering])
    if isinstance(leaf, _Optimization):
        return new_frozen(_Optimization, (leaf.opt, ordering, leaf.score))
    return new_frozen(_Operations, (ordering,))


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
            done.append(new_frozen(_Composed, (items,)))
        else:
            stack.append((node, True))
            items = node.items
            for i in range(len(items) - 1, -1, -1):
                stack.append((items[i], False))
    return done[0]


def map_ordering(strategy, mapping):
    """Every position ``p`` of every leaf replaced by ``mapping[p]`` (burn
    ``ExecutionStrategy::map_ordering``).

    Mirrors refimpl.planner.search.strategy.map_ordering.
    """
    return map_ordering_of(strategy, mapping)


cdef object map_block_ordering_of(object block_opt, object mapping):
    """``map_block_ordering`` (see there)."""
    ordering = tuple([mapping[p] for p in block_opt.ordering])
    strategy = map_ordering_of(block_opt.strategy, mapping)
    return new_frozen(_BlockOptimization, (strategy, ordering))


def map_block_ordering(block_opt, mapping):
    """``map_ordering`` on both the strategy and the concatenated ordering.

    Mirrors refimpl.planner.search.strategy.map_block_ordering.
    """
    return map_block_ordering_of(block_opt, mapping)


def include_trailing(block_opt, num_operations):
    """Extend the optimization to cover all ``num_operations`` positions of its segment: the
    uncovered trailing positions run unfused after it (burn ``include_trailing``, #5137).

    Mirrors refimpl.planner.search.strategy.include_trailing.
    """
    return trailing_included(block_opt, num_operations)


cdef object trailing_included(object block_opt, object num_operations):
    """``include_trailing`` (see there)."""
    covered = len(block_opt.ordering)
    if covered >= num_operations:
        return block_opt
    trailing = tuple(range(covered, num_operations))
    tail = new_frozen(_Operations, (trailing,))
    strategy = block_opt.strategy
    if isinstance(strategy, _Composed):
        strategy = new_frozen(_Composed, (strategy.items + (tail,),))
    else:
        strategy = new_frozen(_Composed, ((strategy, tail),))
    return new_frozen(_BlockOptimization, (strategy, block_opt.ordering + trailing))


def max_relative_shape_id(strategy):
    """The highest relative shape id any optimization of the strategy names, or ``None``
    (burn ``ExecutionStrategy::max_relative_shape_id``, #5400).

    Mirrors refimpl.planner.search.strategy.max_relative_shape_id.
    """
    return max_shape_id_of(strategy)


cdef object unfused_block(tuple ordering):
    """``BlockOptimization(Operations(ordering), ordering)``: the ops at ``ordering`` run
    unfused, in that order (refimpl writes it out where it needs it; built here without the
    dataclasses' ``__init__``)."""
    return new_frozen(_BlockOptimization, (new_frozen(_Operations, (ordering,)), ordering))


cdef object max_shape_id_of(object strategy):
    best = None
    for leaf in leaves_of(strategy):
        if not isinstance(leaf, _Optimization):
            continue
        found = _opt_max_shape_id(leaf.opt)
        if found is not None and (best is None or found > best):
            best = found
    return best


# --- the fusers' optimizations ------------------------------------------------------------------
# What the queue reads of the optimizations fastplan's fusers finish into (refimpl's frozen
# dataclasses, FusedOptimization's subclasses), read at their fields: the same values as their
# methods (``main_trace``, ``traces``, ``max_relative_shape_id``, ``global_inputs``, ...),
# without a Python frame per call. Any other optimization answers its methods.

cdef type _ELEMWISE = ElemwiseOptimization
cdef type _MATMUL = MatmulOptimization
cdef type _NHWC = NHWCRelayoutOptimization
cdef type _REDUCE = ReduceOptimization
cdef type _REDUCE_BROADCASTED = ReduceBroadcastedOptimization


cdef bint fused_optimization(object opt) noexcept:
    """Whether ``opt`` is exactly one of the optimizations the fusers finish into."""
    cdef type t = type(opt)
    return (t is _ELEMWISE or t is _MATMUL or t is _REDUCE or t is _NHWC
            or t is _REDUCE_BROADCASTED)


cdef object main_trace_of(object opt):
    """``opt.main_trace()``."""
    cdef type t = type(opt)
    if t is _ELEMWISE or t is _MATMUL or t is _REDUCE or t is _NHWC:
        return opt.trace
    if t is _REDUCE_BROADCASTED:
        return opt.broadcasted.trace
    return opt.main_trace()


cdef int _add_traces(object opt, list found) except -1:
    """Append ``opt.traces()``."""
    cdef type t = type(opt)
    if t is _ELEMWISE or t is _NHWC:
        found.append(opt.trace)
    elif t is _MATMUL:
        found.append(opt.trace)
        found.append(opt.trace_fallback)
    elif t is _REDUCE:
        found.append(opt.trace)
        found.append(opt.trace_read_fallback)
        found.append(opt.trace_write_fallback)
    elif t is _REDUCE_BROADCASTED:
        found.append(opt.broadcasted.trace)
        for fallback in opt.fallbacks:
            _add_traces(fallback, found)
    else:
        found.extend(opt.traces())
    return 0


cdef object _opt_max_shape_id(object opt):
    """``opt.max_relative_shape_id()`` (``None`` for an optimization without it)."""
    cdef list traces = []
    if not fused_optimization(opt):
        report = getattr(opt, "max_relative_shape_id", None)
        return report() if report is not None else None
    _add_traces(opt, traces)
    best = None
    for trace in traces:  # FuseTrace.max_relative_shape_id, over every trace
        for block in trace.blocks:
            for d in block.shape_ref:
                if best is None or d > best:
                    best = d
    return best


cdef tuple trace_ids(object trace, bint outputs):
    """``trace.output_ids()`` or ``trace.input_ids()``."""
    entries = trace.resources.outputs if outputs else trace.resources.inputs
    return tuple([entry.tensor.id for entry in entries])


cdef tuple trace_op_names(object trace):
    """``FusedOptimization.block_op_names`` of an optimization whose main trace this is."""
    return tuple([tuple([op.name for op in block.ops]) for block in trace.blocks])
