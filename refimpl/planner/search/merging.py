"""Merging a set of blocks into fewer, larger ones.

burn counterpart: ``crates/burn-fusion/src/search/merging.rs`` (``merge_blocks``,
``MergeBlocksResult``, ``merge_blocks_step1/step2``, ``merge_accumulator``, ``merge_two``).

Strategy (burn's, step for step):

1. Halving: split the list into chunks of ``len // 2`` blocks and merge each chunk the same
   way (this tries neighbouring permutations). Two blocks merge directly; one is a full merge
   of itself.
2. Accumulators: fold the partial results into their first element, then the failed blocks
   into that, then the full results, then full with failed, then full with partial.

Every pair is checked by the ``Reachability`` guard (no contraction across an intermediate
block) and merged in whichever direction gives a valid op order (``merge_two``).

burn recurses through step 1; here an explicit stack of pending splits does the same work in
the same order (``_Split`` frames, children finished before their parent continues).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

from refimpl.planner.search.block import Block
from refimpl.planner.search.graph import Reachability

__all__ = ["MergeBlocksResult", "merge_blocks", "merge_two"]


@dataclass
class MergeBlocksResult:
    """``kind`` is ``"Full"`` (``merged`` holds the one block), ``"Partial"`` (some merged,
    some ``failed``) or ``"Fail"`` (nothing merged)."""

    kind: str
    merged: list[Block] = field(default_factory=list)
    failed: list[Block] = field(default_factory=list)


def _full(block: Block) -> MergeBlocksResult:
    return MergeBlocksResult("Full", [block])


_FAIL = "Fail"


def merge_two(a: Block, b: Block, guard: Reachability) -> Block | None:
    """``a`` and ``b`` merged (``a`` then ``b``, else ``b`` then ``a``), or ``None``."""
    if not guard.can_contract(a.constituents, b.constituents):
        return None
    for base, other in ((a, b), (b, a)):
        if base.can_append(other):
            merged = base.clone()
            if merged.merge(other):
                return merged
    return None


def _merge_direct(blocks: Sequence[Block], guard: Reachability) -> MergeBlocksResult | None:
    """The result for 0, 1 or 2 blocks; ``None`` when the list needs splitting."""
    if not blocks:
        return MergeBlocksResult(_FAIL)
    if len(blocks) == 1:
        return _full(blocks[0].clone())
    if len(blocks) == 2:
        merged = merge_two(blocks[0], blocks[1], guard)
        return _full(merged) if merged is not None else MergeBlocksResult(_FAIL)
    return None


@dataclass
class _Step1:
    full: list[Block] = field(default_factory=list)
    partial: list[Block] = field(default_factory=list)
    failed: list[Block] = field(default_factory=list)

    def absorb(self, result: MergeBlocksResult, chunk: Sequence[Block]) -> None:
        if result.kind == "Full":
            self.full.append(result.merged[0])
        elif result.kind == "Partial":
            self.partial.extend(result.merged)
            self.failed.extend(result.failed)
        else:
            self.failed.extend(block.clone() for block in chunk)


class _Split:
    """A pending merge of ≥ 3 blocks: its chunks, the next chunk to merge, step-1 results."""

    def __init__(self, blocks: Sequence[Block]):
        self.blocks = blocks
        step = len(blocks) // 2
        count = math.ceil(len(blocks) / step)
        self.chunks = [(i * step, min(i * step + step, len(blocks))) for i in range(count)]
        self.next = 0
        self.current: Sequence[Block] = ()
        self.step1 = _Step1()


def merge_blocks(blocks: Sequence[Block], guard: Reachability, sort: bool = False
                 ) -> MergeBlocksResult:
    """Merge as many of ``blocks`` as possible. ``sort`` orders the lists of a ``Partial``
    result by start position (burn's ``sorted`` flag, used by tests)."""
    direct = _merge_direct(blocks, guard)
    if direct is not None:
        return direct
    stack = [_Split(blocks)]
    finished: MergeBlocksResult | None = None
    while True:
        top = stack[-1]
        if finished is not None:
            top.step1.absorb(finished, top.current)
            finished = None
        if top.next < len(top.chunks):
            start, end = top.chunks[top.next]
            top.next += 1
            top.current = top.blocks[start:end]
            finished = _merge_direct(top.current, guard)
            if finished is None:
                stack.append(_Split(top.current))
            continue
        stack.pop()
        finished = _conclude(top.step1, guard)
        if not stack:
            return _sorted(finished) if sort else finished


def _conclude(step1: _Step1, guard: Reachability) -> MergeBlocksResult:
    if len(step1.full) == 1 and not step1.failed and not step1.partial:
        return _full(step1.full[0])
    if len(step1.partial) == 1 and not step1.failed and not step1.full:
        return _full(step1.partial[0])
    return _step2(step1, guard)


def _fold(into: list[Block], step1: _Step1, guard: Reachability) -> list[Block]:
    """Fold ``into[1:]`` into ``into[0]``; the failures join ``step1.failed``; returns the new
    list (burn's match on ``merge_accumulator``: ``Fail`` leaves the list as it was)."""
    result = _merge_accumulator(into[0], into[1:], guard)
    if result.kind == "Full":
        return result.merged
    if result.kind == "Partial":
        step1.failed.extend(result.failed)
        return result.merged
    return into


def _step2(step1: _Step1, guard: Reachability) -> MergeBlocksResult:
    if len(step1.partial) > 1:
        step1.partial = _fold(step1.partial, step1, guard)
    if step1.failed:
        joined = step1.partial + step1.failed
        step1.failed = []
        step1.partial = _fold(joined, step1, guard)
    if len(step1.full) > 1:
        step1.full = _fold(step1.full, step1, guard)
    if step1.full:
        joined = step1.full + step1.failed
        step1.failed = []
        step1.full = _fold(joined, step1, guard)
    if step1.full or step1.partial:
        joined = step1.full + step1.partial
        step1.partial = []
        step1.full = _fold(joined, step1, guard)
    if not step1.full:
        return MergeBlocksResult(_FAIL)
    if not step1.failed:
        if len(step1.full) == 1:
            return _full(step1.full[0])
        return MergeBlocksResult("Partial", step1.full, [])
    return MergeBlocksResult("Partial", step1.full, step1.failed)


def _merge_accumulator(base: Block, blocks: Sequence[Block], guard: Reachability
                       ) -> MergeBlocksResult:
    """Merge each of ``blocks`` into a growing copy of ``base``."""
    accumulator = base.clone()
    failed: list[Block] = []
    merged_any = False
    for block in blocks:
        merged = merge_two(accumulator, block, guard)
        if merged is None:
            failed.append(block.clone())
        else:
            merged_any = True
            accumulator = merged
    if not merged_any:
        return MergeBlocksResult(_FAIL)
    if not failed:
        return _full(accumulator)
    return MergeBlocksResult("Partial", [accumulator], failed)


def _sorted(result: MergeBlocksResult) -> MergeBlocksResult:
    if result.kind != "Partial":
        return result
    merged = sorted(result.merged, key=Block.sort_key)
    failed = sorted(result.failed, key=Block.sort_key)
    return MergeBlocksResult("Partial", merged, failed)
