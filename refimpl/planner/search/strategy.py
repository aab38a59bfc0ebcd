"""How a segment of relative ops is executed: ``ExecutionStrategy`` and ``BlockOptimization``.

burn counterpart: ``crates/burn-fusion/src/stream/store/base.rs`` (``ExecutionStrategy``) and
``crates/burn-fusion/src/search/block.rs`` (``BlockOptimization``, ``map_ordering``,
``include_trailing``).

A strategy is a tree: ``Optimization`` (one fused kernel from a fuser's optimization, over the
segment positions in ``ordering``), ``Operations`` (the ops at ``ordering`` run one by one,
unfused) or ``Composed`` (its items in order). Orderings are positions in the segment (the
relative op list the search was given), never global indices. Strategies are frozen; the
functions that "change" one return a new tree. Trees are walked with explicit stacks.

>>> s = Composed((Optimization("opt", (0, 2), 210), Operations((1,))))
>>> [leaf.ordering for leaf in leaves(s)]
[(0, 2), (1,)]
>>> strategy_len(map_ordering(s, (5, 6, 7)))
3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

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


class ExecutionStrategy:
    """Base of the three strategy kinds (burn ``ExecutionStrategy<O>``)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Optimization(ExecutionStrategy):
    """Run ``opt`` (what a fuser's ``finish`` returned) over the positions in ``ordering``."""

    opt: Any
    ordering: tuple[int, ...]
    score: int


@dataclass(frozen=True, slots=True)
class Operations(ExecutionStrategy):
    """Run the ops at ``ordering`` one by one, unfused."""

    ordering: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Composed(ExecutionStrategy):
    """Run each item in turn."""

    items: tuple[ExecutionStrategy, ...]


@dataclass(frozen=True, slots=True)
class BlockOptimization:
    """A strategy plus the concatenated ordering of all its leaves (burn
    ``BlockOptimization``): ``ordering`` lists the segment positions it covers, in execution
    order."""

    strategy: ExecutionStrategy
    ordering: tuple[int, ...]


def leaves(strategy: ExecutionStrategy) -> list[ExecutionStrategy]:
    """The ``Optimization``/``Operations`` leaves in execution order."""
    found: list[ExecutionStrategy] = []
    stack = [strategy]
    while stack:
        node = stack.pop()
        if isinstance(node, Composed):
            stack.extend(reversed(node.items))
        else:
            found.append(node)
    return found


def strategy_len(strategy: ExecutionStrategy) -> int:
    """How many segment positions the strategy covers (its share of the ordering)."""
    return sum(len(leaf.ordering) for leaf in leaves(strategy))


def _rebuild(
    strategy: ExecutionStrategy, leaf_fn: Callable[[ExecutionStrategy], ExecutionStrategy]
) -> ExecutionStrategy:
    """The same tree with every leaf replaced by ``leaf_fn(leaf)`` (post-order, no
    recursion)."""
    done: list[ExecutionStrategy] = []
    stack: list[tuple[ExecutionStrategy, bool]] = [(strategy, False)]
    while stack:
        node, expanded = stack.pop()
        if not isinstance(node, Composed):
            done.append(leaf_fn(node))
        elif expanded:
            count = len(node.items)
            items = tuple(done[len(done) - count :])
            del done[len(done) - count :]
            done.append(Composed(items))
        else:
            stack.append((node, True))
            stack.extend((item, False) for item in reversed(node.items))
    return done[0]


def map_ordering(strategy: ExecutionStrategy, mapping: Sequence[int]) -> ExecutionStrategy:
    """Every position ``p`` of every leaf replaced by ``mapping[p]`` (burn
    ``ExecutionStrategy::map_ordering``)."""

    def remap(leaf: ExecutionStrategy) -> ExecutionStrategy:
        ordering = tuple(mapping[p] for p in leaf.ordering)
        if isinstance(leaf, Optimization):
            return Optimization(leaf.opt, ordering, leaf.score)
        return Operations(ordering)

    return _rebuild(strategy, remap)


def map_block_ordering(block_opt: BlockOptimization, mapping: Sequence[int]) -> BlockOptimization:
    """``map_ordering`` on both the strategy and the concatenated ordering."""
    ordering = tuple(mapping[p] for p in block_opt.ordering)
    return BlockOptimization(map_ordering(block_opt.strategy, mapping), ordering)


def include_trailing(block_opt: BlockOptimization, num_operations: int) -> BlockOptimization:
    """Extend the optimization to cover all ``num_operations`` positions of its segment: the
    uncovered trailing positions run unfused after it (burn ``include_trailing``, #5137).

    Used at a sync only: the segment is final, and a plan covering part of it could never be
    matched again."""
    covered = len(block_opt.ordering)
    if covered >= num_operations:
        return block_opt
    trailing = tuple(range(covered, num_operations))
    tail = Operations(trailing)
    if isinstance(block_opt.strategy, Composed):
        strategy = Composed(block_opt.strategy.items + (tail,))
    else:
        strategy = Composed((block_opt.strategy, tail))
    return BlockOptimization(strategy, block_opt.ordering + trailing)


def max_relative_shape_id(strategy: ExecutionStrategy) -> int | None:
    """The highest relative shape id any optimization of the strategy names, or ``None``
    (burn ``ExecutionStrategy::max_relative_shape_id``, #5400).

    An optimization reports it through an optional ``max_relative_shape_id()`` method;
    ``Operations`` name none."""
    best: int | None = None
    for leaf in leaves(strategy):
        if not isinstance(leaf, Optimization):
            continue
        report = getattr(leaf.opt, "max_relative_shape_id", None)
        found = report() if report is not None else None
        if found is not None and (best is None or found > best):
            best = found
    return best
