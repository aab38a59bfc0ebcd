# cython: language_level=3
"""Merging a set of blocks into fewer, larger ones.

burn counterpart: ``crates/burn-fusion/src/search/merging.rs`` (``merge_blocks``,
``MergeBlocksResult``, ``merge_blocks_step1/step2``, ``merge_accumulator``, ``merge_two``).
Mirrors refimpl/planner/merging.py: same names, same order, same results.

The strategy is burn's, step for step (halving into chunks, then the accumulators), with the
same explicit stack of pending splits as refimpl. ``MergeBlocksResult`` is refimpl's class
(plain data); the blocks are ``fastplan.block.Block``s.
"""

from fastplan.block cimport Block
from fastplan.graph cimport Reachability

from refimpl.planner.merging import MergeBlocksResult

__all__ = ["MergeBlocksResult", "merge_blocks", "merge_two"]

_Result = MergeBlocksResult
_FAIL = "Fail"


cdef object _full(Block block):
    return _Result("Full", [block])


cdef bint _guard_ok(object guard, object a, object b) except -1:
    if type(guard) is Reachability:
        return (<Reachability>guard).can_contract(a, b)
    return guard.can_contract(a, b)


cdef object merge_pair(Block a, Block b, object guard):
    """``merge_two`` (see there)."""
    cdef Block base, other, merged
    if not _guard_ok(guard, a.constituents, b.constituents):
        return None
    for base, other in ((a, b), (b, a)):
        if base.appendable(other):
            merged = base.clone()
            if merged.merge_from(other):
                return merged
    return None


def merge_two(a, b, guard):
    """``a`` and ``b`` merged (``a`` then ``b``, else ``b`` then ``a``), or ``None``.

    Mirrors refimpl.planner.merging.merge_two.
    """
    return merge_pair(a, b, guard)


cdef object _merge_direct(object blocks, object guard):
    """The result for 0, 1 or 2 blocks; ``None`` when the list needs splitting."""
    cdef Py_ssize_t n = len(blocks)
    if n == 0:
        return _Result(_FAIL)
    if n == 1:
        return _full((<Block>blocks[0]).clone())
    if n == 2:
        merged = merge_pair(blocks[0], blocks[1], guard)
        return _full(merged) if merged is not None else _Result(_FAIL)
    return None


cdef class _Step1:
    cdef list full
    cdef list partial
    cdef list failed

    def __cinit__(self):
        self.full = []
        self.partial = []
        self.failed = []

    cdef void absorb(self, object result, object chunk) except *:
        cdef Block block
        if result.kind == "Full":
            self.full.append(result.merged[0])
        elif result.kind == "Partial":
            self.partial.extend(result.merged)
            self.failed.extend(result.failed)
        else:
            for block in chunk:
                self.failed.append(block.clone())


cdef class _Split:
    """A pending merge of >= 3 blocks: its chunks, the next chunk to merge, step-1 results."""

    cdef object blocks
    cdef list chunks
    cdef Py_ssize_t next
    cdef object current
    cdef _Step1 step1

    def __cinit__(self, blocks):
        cdef Py_ssize_t n = len(blocks)
        cdef Py_ssize_t step = n // 2
        cdef Py_ssize_t count = (n + step - 1) // step
        cdef Py_ssize_t i
        self.blocks = blocks
        self.chunks = [(i * step, min(i * step + step, n)) for i in range(count)]
        self.next = 0
        self.current = ()
        self.step1 = _Step1()


cdef object blocks_merged(object blocks, object guard, bint sort):
    """``merge_blocks`` (see there)."""
    cdef list stack
    cdef _Split top
    cdef Py_ssize_t start, end
    direct = _merge_direct(blocks, guard)
    if direct is not None:
        return direct
    stack = [_Split(blocks)]
    finished = None
    while True:
        top = stack[len(stack) - 1]
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


def merge_blocks(blocks, guard, sort=False):
    """Merge as many of ``blocks`` as possible. ``sort`` orders the lists of a ``Partial``
    result by start position (burn's ``sorted`` flag, used by tests).

    Mirrors refimpl.planner.merging.merge_blocks.
    """
    return blocks_merged(blocks, guard, sort)


cdef object _conclude(_Step1 step1, object guard):
    if len(step1.full) == 1 and not step1.failed and not step1.partial:
        return _full(step1.full[0])
    if len(step1.partial) == 1 and not step1.failed and not step1.full:
        return _full(step1.partial[0])
    return _step2(step1, guard)


cdef list _fold(list into, _Step1 step1, object guard):
    """Fold ``into[1:]`` into ``into[0]``; the failures join ``step1.failed``; returns the new
    list (burn's match on ``merge_accumulator``: ``Fail`` leaves the list as it was)."""
    result = _merge_accumulator(into[0], into[1:], guard)
    if result.kind == "Full":
        return result.merged
    if result.kind == "Partial":
        step1.failed.extend(result.failed)
        return result.merged
    return into


cdef object _step2(_Step1 step1, object guard):
    cdef list joined
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
        return _Result(_FAIL)
    if not step1.failed:
        if len(step1.full) == 1:
            return _full(step1.full[0])
        return _Result("Partial", step1.full, [])
    return _Result("Partial", step1.full, step1.failed)


cdef object _merge_accumulator(Block base, list blocks, object guard):
    """Merge each of ``blocks`` into a growing copy of ``base``."""
    # refimpl starts from ``base.clone()``; ``merge_pair`` only reads its arguments (it merges
    # into a clone), and a result holds the accumulator only once a merge replaced it, so
    # ``base`` itself serves: the same result, one clone less.
    cdef Block accumulator = base
    cdef Block block
    cdef list failed = []
    cdef bint merged_any = False
    for block in blocks:
        merged = merge_pair(accumulator, block, guard)
        if merged is None:
            failed.append(block.clone())
        else:
            merged_any = True
            accumulator = merged
    if not merged_any:
        return _Result(_FAIL)
    if not failed:
        return _full(accumulator)
    return _Result("Partial", [accumulator], failed)


def _start(Block block):
    return block.start_pos


cdef object _sorted(object result):
    if result.kind != "Partial":
        return result
    merged = sorted(result.merged, key=_start)
    failed = sorted(result.failed, key=_start)
    return _Result("Partial", merged, failed)
