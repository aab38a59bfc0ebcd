"""The fusion search: partition a segment into blocks, merge them, pick a fuser per block.

burn counterpart: ``crates/burn-fusion/src/search/optimization/stream.rs``
(``StreamOptimizer``) and ``.../optimization/blocks.rs`` (``BlocksOptimizer``); notes §9.1–§9.3.

``StreamOptimizer.register`` places each op (at the next segment position):

1. the first op opens a block;
2. if the op touches tensors of two or more blocks, those blocks are merged; if they cannot
   all be merged, the op gets its own block that depends on them (``on_dependent_op``), after
   a forced merge of everything when the block cap is reached; a cycle or no room stops the
   optimizer;
3. otherwise it joins the block sharing its tensors, or opens a new block while fewer than
   ``max_blocks`` (5) exist; at the cap every block is force-merged, and if that leaves the cap
   reached the optimizer **stops** (later ops are not registered).

``StreamOptimizer.optimize`` runs ``BlocksOptimizer`` (merging pass, blocks emitted in
topological order, each block's best strategy), re-optimizes interior *holes* (positions left
unresolved before a resolved one) with fresh fusers until none remain, then ``repair_order``.
Trailing unresolved positions are left for the next round. Hole searches nest; an explicit
stack of ``_HoleFrame``s replaces burn's recursion.

The log names ops by stream index: the search's log maps its positions (``FusionLog.at``,
set by ``StreamPlanner``), and a hole search's log maps the holes (``FusionLog.mapped``).

Invariants:

* Registered positions are ``0..length`` without gaps; an optimization's ordering covers a
  prefix ``0..k`` of them (holes filled, trailing positions excluded).
* Ties: blocks sort stably by start position; topological order by ``(position, index)``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Sequence

from refimpl.ir import OperationIr
from refimpl.planner.engine.fuser import OperationFuser
from refimpl.planner.log import NO_LOG, FusionLog, LogLevel
from refimpl.planner.search.block import Block, RegistrationResult
from refimpl.planner.search.graph import Dag
from refimpl.planner.search.merging import merge_blocks
from refimpl.planner.search.repair import repair_order
from refimpl.planner.search.strategy import (
    BlockOptimization,
    Composed,
    ExecutionStrategy,
    map_block_ordering,
)

__all__ = ["MAX_BLOCKS", "StreamOptimizer", "BlocksOptimizer", "BlocksOptimizerResult"]

MAX_BLOCKS = 5  # burn ``fusion.beam_search.max_blocks`` default


class _MergeStep(enum.Enum):
    Full = "Full"
    Partial = "Partial"
    Fail = "Fail"
    NoNeed = "NoNeed"


@dataclass
class BlocksOptimizerResult:
    """``holes`` empty: ``optimization`` covers everything resolved. Otherwise the
    strategies/ordering found so far and the interior positions still to optimize."""

    strategies: list[ExecutionStrategy]
    ordering: list[int]
    holes: list[int]

    def full(self) -> BlockOptimization:
        strategy = Composed(tuple(self.strategies)) if len(self.strategies) > 1 \
            else self.strategies[0]
        return BlockOptimization(strategy, tuple(self.ordering))


class BlocksOptimizer:
    """Turns a list of blocks into a strategy (burn ``BlocksOptimizer``)."""

    def __init__(self, blocks: list[Block], log: FusionLog = NO_LOG):
        self.blocks = blocks
        self.num_ops = max(block.end_pos for block in blocks)
        self.log = log

    def optimize(self) -> BlocksOptimizerResult:
        """Merge, emit in dependency order, optimize each block, find the holes."""
        self._merging_pass()
        order = Dag(self.blocks).topological_order()
        if order is None:
            order = list(range(len(self.blocks)))
        strategies: list[ExecutionStrategy] = []
        ordering: list[int] = []
        resolved = [False] * self.num_ops
        for index in order:
            block_opt = self.blocks[index].optimize(self.log)
            for pos in block_opt.ordering:
                resolved[pos] = True
            ordering.extend(block_opt.ordering)
            strategies.append(block_opt.strategy)
        end = _last_resolved_end(resolved)
        holes = [pos for pos in range(end) if not resolved[pos]]
        if self.log.enabled(LogLevel.FULL):
            self.log.write(f"[search] {len(strategies)} strategy chunk(s), "
                           f"holes={self.log.indices(holes)}")
        return BlocksOptimizerResult(strategies, ordering, holes)

    def _merging_pass(self) -> None:
        if len(self.blocks) == 1:
            return
        self.blocks.sort(key=Block.sort_key)
        for index, block in enumerate(self.blocks):
            block.seed_constituent(index)
        guard = Dag(self.blocks).reachability()
        result = merge_blocks(self.blocks, guard)
        if result.kind == "Full":
            self.blocks = result.merged
        elif result.kind == "Partial":
            self.blocks = sorted(result.merged + result.failed, key=Block.sort_key)


def _last_resolved_end(resolved: Sequence[bool]) -> int:
    for pos in range(len(resolved) - 1, -1, -1):
        if resolved[pos]:
            return pos + 1
    return 0


@dataclass
class _HoleFrame:
    """One optimize call waiting for its holes to be filled."""

    optimizer: StreamOptimizer
    operations: Sequence[OperationIr]
    strategies: list[ExecutionStrategy]
    ordering: list[int]
    holes: list[int]

    def absorb(self, holes_opt: BlockOptimization) -> None:
        """Append the optimization of the first holes (its positions index ``holes``)."""
        mapped = map_block_ordering(holes_opt, self.holes)
        self.strategies.append(mapped.strategy)
        self.ordering.extend(mapped.ordering)
        del self.holes[: len(mapped.ordering)]

    def hole_operations(self) -> list[OperationIr]:
        return [self.operations[pos] for pos in self.holes]


class StreamOptimizer:
    """Incremental partition of a segment into blocks (burn ``StreamOptimizer``)."""

    def __init__(self, fusers: Sequence[OperationFuser], max_blocks: int | None = MAX_BLOCKS,
                 log: FusionLog = NO_LOG):
        self.fusers = list(fusers)
        self.blocks: list[Block] = []
        self.length = 0
        self.stopped = False
        self.max_blocks = max_blocks
        self.log = log

    # --- registration ------------------------------------------------------------------------

    def register(self, operation: OperationIr) -> None:
        """Place the next op of the segment (see the module docstring)."""
        if self.stopped:
            self._trace("op {1} dropped (optimizer stopped at op {0})", self.length,
                        operation.name)
            return
        if not self.blocks:
            self._on_new_block(operation)
            self.length += 1
            return
        step = self._merge_blocks(operation, False)
        if step in (_MergeStep.Fail, _MergeStep.Partial):
            self._on_dependent_op(operation)
            if not self.stopped:
                self.length += 1
            return
        if self.max_blocks is not None:
            if self._register_max_block(operation, self.max_blocks):
                self.length += 1
            else:
                self._trace("stopped (max_blocks={1}) at op {0}", self.length, self.max_blocks)
                self.stopped = True
            return
        if self._register_inner(operation, False) == 0:
            self._on_new_block(operation)
        self.length += 1

    def still_optimizing(self) -> bool:
        """Not stopped, and no block yet or some block with an open fuser."""
        if self.stopped:
            return False
        if not self.blocks:
            return True
        for block in self.blocks:
            if block.still_optimizing():
                return True
        return False

    def reset(self) -> None:
        for fuser in self.fusers:
            fuser.reset()
        self.length = 0
        self.blocks = []
        self.stopped = False

    def _trace(self, template: str, pos: int, *args: object) -> None:
        """A ``full``-level stream event at position ``pos`` (the template's first field,
        printed as its stream index); the text is only built when it is printed."""
        if self.log.enabled(LogLevel.FULL):
            self.log.write("[stream] " + template.format(self.log.index(pos), *args))

    def _register_max_block(self, operation: OperationIr, max_blocks: int) -> bool:
        if max_blocks == 1:
            self._register_inner(operation, True)
            return True
        if self._register_inner(operation, False) > 0:
            return True
        if len(self.blocks) < max_blocks:
            self._on_new_block(operation)
            return True
        self._merge_blocks(operation, True)
        if len(self.blocks) >= max_blocks:
            self.stopped = True
            return False
        if self._register_inner(operation, False) == 0:
            self._on_new_block(operation)
        return True

    def _register_inner(self, operation: OperationIr, force: bool) -> int:
        added = 0
        for block in self.blocks:
            if block.register(operation, self.length, force) is RegistrationResult.Accepted:
                added += 1
        if added:
            self._trace("op {} {} -> accepted in {} block(s)", self.length, operation.name, added)
        return added

    def _merge_blocks(self, operation: OperationIr, everything: bool) -> _MergeStep:
        nodes = operation.nodes()
        chosen = [i for i, block in enumerate(self.blocks)
                  if everything or block.contains_tensors(nodes)]
        if len(chosen) <= 1:
            return _MergeStep.NoNeed
        for index, block in enumerate(self.blocks):
            block.seed_constituent(index)
        guard = Dag(self.blocks).reachability()
        result = merge_blocks([self.blocks[i] for i in chosen], guard)
        if result.kind == "Fail":
            return _MergeStep.Fail
        kept = [block for i, block in enumerate(self.blocks) if i not in chosen]
        self.blocks = sorted(kept + result.merged + result.failed, key=Block.sort_key)
        return _MergeStep.Full if result.kind == "Full" else _MergeStep.Partial

    def _on_new_block(self, operation: OperationIr) -> None:
        block = Block(self.fusers)
        block.register(operation, self.length, True)
        self.blocks.append(block)
        self._trace("op {} {} -> new block (total: {})", self.length, operation.name,
                    len(self.blocks))

    def _on_dependent_op(self, operation: OperationIr) -> None:
        """Give the op its own block depending on the blocks it reads from."""
        if self.max_blocks is not None and len(self.blocks) >= self.max_blocks:
            self._merge_blocks(operation, True)
            if len(self.blocks) >= self.max_blocks:
                self._trace("stopped (max_blocks={1} reached on dependency) at op {0}",
                            self.length, self.max_blocks)
                self.stopped = True
                return
        block = Block(self.fusers)
        block.register(operation, self.length, True)
        self.blocks.append(block)
        if not Dag(self.blocks).is_acyclic():
            self.blocks.pop()
            self._trace("stopped (unresolvable dependency cycle) at op {}", self.length)
            self.stopped = True
            return
        self._trace("op {} {} -> new dependent block (total: {})", self.length,
                    operation.name, len(self.blocks))

    # --- optimization ------------------------------------------------------------------------

    def new_empty_search(self) -> StreamOptimizer:
        """A fresh optimizer with reset clones of the same fusers (for holes)."""
        fusers = []
        for fuser in self.fusers:
            clone = fuser.clone()
            clone.reset()
            fusers.append(clone)
        return StreamOptimizer(fusers, self.max_blocks, self.log)

    def _first_pass(self) -> BlocksOptimizerResult:
        return BlocksOptimizer([block.clone() for block in self.blocks], self.log).optimize()

    def optimize(self, operations: Sequence[OperationIr]) -> BlockOptimization:
        """The segment's strategy; ``operations`` are the ops registered so far (at least)."""
        first = self._first_pass()
        if not first.holes:
            return repair_order(first.full(), operations)
        stack = [_HoleFrame(self, operations, first.strategies, first.ordering, first.holes)]
        done: BlockOptimization | None = None
        while stack:
            frame = stack[-1]
            if done is not None:
                frame.absorb(done)
                done = None
                if not frame.holes:
                    stack.pop()
                    whole = BlockOptimization(Composed(tuple(frame.strategies)),
                                              tuple(frame.ordering))
                    done = repair_order(whole, frame.operations)
                    continue
            done = self._search_holes(frame, stack)
        return done

    @staticmethod
    def _search_holes(frame: _HoleFrame, stack: list[_HoleFrame]) -> BlockOptimization | None:
        """Start a fresh search over the frame's holes: its result, or ``None`` after pushing
        a nested frame for holes of its own."""
        search = frame.optimizer.new_empty_search()
        search.log = search.log.mapped(frame.holes)  # its position p is frame.holes[p]
        hole_ops = frame.hole_operations()
        for operation in hole_ops:
            search.register(operation)
        first = search._first_pass()
        if not first.holes:
            return repair_order(first.full(), hole_ops)
        stack.append(_HoleFrame(search, hole_ops, first.strategies, first.ordering, first.holes))
        return None
