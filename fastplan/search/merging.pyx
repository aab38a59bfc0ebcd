# cython: language_level=3
"""Merging a set of blocks into fewer, larger ones.

burn counterpart: ``crates/burn-fusion/src/search/merging.rs`` (``merge_blocks``,
``MergeBlocksResult``, ``merge_blocks_step1/step2``, ``merge_accumulator``, ``merge_two``).
Mirrors ``refimpl/planner/search/merging.py``: same names, same order, same results.

The strategy is burn's, step for step (halving into chunks, then the accumulators), with the
same explicit stack of pending splits as refimpl. ``MergeBlocksResult`` is refimpl's class
(plain data); the blocks are ``fastplan.search.block.Block``s.

The search merges through a ``_Merger`` (``merge_two`` and ``merge_blocks`` do not; they keep
refimpl's copies), which changes the work, not the result:

* a block is never changed by merging (a merge registers into a copy), and the search drops
  the input blocks once it has the result, so a block that is not merged is returned as it is
  instead of as a copy;
* the copy a merge registers into shares every fuser that can no longer change, and is
  refused without being made when every fuser of ``base`` is such a one (``Block.live``,
  ``Block.merged_copy``);
* a refused merge (``other`` after ``base``: not appendable, or ``merge`` refused) depends only
  on the two blocks' contents, which ``Block.state`` names, so it is remembered and not tried
  again; the guard still runs every time (it depends on the other blocks).
"""

from fastplan.search.block cimport Block
from fastplan.search.graph cimport Reachability
from fastplan.stream.relative cimport new_frozen

from refimpl.planner.search.merging import MergeBlocksResult

__all__ = ["MergeBlocksResult", "merge_blocks", "merge_two"]

cdef type _Result = MergeBlocksResult
_FAIL = "Fail"


# MergeBlocksResult(kind, merged, failed), built without its dataclass __init__ (new_frozen);
# the lists its field defaults would make are given.
cdef object _full(Block block):
    return new_frozen(_Result, ("Full", [block], []))


cdef object _fail():
    return new_frozen(_Result, (_FAIL, [], []))


cdef object _partial(object merged, object failed):
    return new_frozen(_Result, ("Partial", merged, failed))


# Memo entries kept before the memo starts over (a state pair is 2 small ints).
cdef Py_ssize_t _MEMO_LIMIT = 1 << 16


cdef class _Merger:
    """The search's merging context: the refused-merge memo (see the module docstring)."""

    def __cinit__(self):
        self.refused = set()

    cdef void forget(self):
        self.refused.clear()


cdef Block _kept(Block block, _Merger merger):
    """A block returned unmerged: itself under a ``_Merger``, else a copy (refimpl)."""
    return block if merger is not None else block.clone()


cdef bint _guard_ok(object guard, object a, object b) except -1:
    if type(guard) is Reachability:
        return (<Reachability>guard).can_contract(a, b)
    return guard.can_contract(a, b)


cdef object merge_pair(Block a, Block b, object guard, _Merger merger):
    """``merge_two`` (see there); ``merger``: the search's context, or ``None``."""
    if not _guard_ok(guard, a.constituents, b.constituents):
        return None
    merged = _merge_into_copy(a, b, merger)
    if merged is None:
        merged = _merge_into_copy(b, a, merger)
    return merged


cdef object _merge_into_copy(Block base, Block other, _Merger merger):
    """``other`` registered after ``base`` into a copy of ``base``, or ``None`` if refused."""
    cdef Block merged
    if merger is None:
        if base.appendable(other):
            merged = base.clone()
            if merged.merge_appendable(other):
                return merged
        return None
    key = (base.state, other.state)
    if key in merger.refused:
        return None
    if base.live() and base.appendable(other):
        merged = base.merged_copy(other)
        if merged is not None:
            return merged
    if len(merger.refused) >= _MEMO_LIMIT:
        merger.forget()
    merger.refused.add(key)
    return None


def merge_two(a, b, guard):
    """``a`` and ``b`` merged (``a`` then ``b``, else ``b`` then ``a``), or ``None``.

    Mirrors refimpl.planner.search.merging.merge_two.
    """
    return merge_pair(a, b, guard, None)


cdef object _merge_direct(object blocks, object guard, _Merger merger):
    """The result for 0, 1 or 2 blocks; ``None`` when the list needs splitting."""
    cdef Py_ssize_t n = len(blocks)
    if n == 0:
        return _fail()
    if n == 1:
        return _full(_kept(blocks[0], merger))
    if n == 2:
        merged = merge_pair(blocks[0], blocks[1], guard, merger)
        return _full(merged) if merged is not None else _fail()
    return None


cdef class _Step1:
    cdef list full
    cdef list partial
    cdef list failed

    def __cinit__(self):
        self.full = []
        self.partial = []
        self.failed = []

    cdef void absorb(self, object result, object chunk, _Merger merger) except *:
        cdef Block block
        if result.kind == "Full":
            self.full.append(result.merged[0])
        elif result.kind == "Partial":
            self.partial.extend(result.merged)
            self.failed.extend(result.failed)
        else:
            for block in chunk:
                self.failed.append(_kept(block, merger))


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


cdef object blocks_merged(object blocks, object guard, bint sort, _Merger merger):
    """``merge_blocks`` (see there); ``merger``: the search's context, or ``None``."""
    cdef list stack
    cdef _Split top
    cdef Py_ssize_t start, end
    direct = _merge_direct(blocks, guard, merger)
    if direct is not None:
        return direct
    stack = [_Split(blocks)]
    finished = None
    while True:
        top = stack[len(stack) - 1]
        if finished is not None:
            top.step1.absorb(finished, top.current, merger)
            finished = None
        if top.next < len(top.chunks):
            start, end = top.chunks[top.next]
            top.next += 1
            top.current = top.blocks[start:end]
            finished = _merge_direct(top.current, guard, merger)
            if finished is None:
                stack.append(_Split(top.current))
            continue
        stack.pop()
        finished = _conclude(top.step1, guard, merger)
        if not stack:
            return _sorted(finished) if sort else finished


def merge_blocks(blocks, guard, sort=False):
    """Merge as many of ``blocks`` as possible. ``sort`` orders the lists of a ``Partial``
    result by start position (burn's ``sorted`` flag, used by tests).

    Mirrors refimpl.planner.search.merging.merge_blocks.
    """
    return blocks_merged(blocks, guard, sort, None)


cdef object _conclude(_Step1 step1, object guard, _Merger merger):
    if len(step1.full) == 1 and not step1.failed and not step1.partial:
        return _full(step1.full[0])
    if len(step1.partial) == 1 and not step1.failed and not step1.full:
        return _full(step1.partial[0])
    return _step2(step1, guard, merger)


cdef list _fold(list into, _Step1 step1, object guard, _Merger merger):
    """Fold ``into[1:]`` into ``into[0]``; the failures join ``step1.failed``; returns the new
    list (burn's match on ``merge_accumulator``: ``Fail`` leaves the list as it was)."""
    result = _merge_accumulator(into[0], into[1:], guard, merger)
    if result.kind == "Full":
        return result.merged
    if result.kind == "Partial":
        step1.failed.extend(result.failed)
        return result.merged
    return into


cdef object _step2(_Step1 step1, object guard, _Merger merger):
    cdef list joined
    if len(step1.partial) > 1:
        step1.partial = _fold(step1.partial, step1, guard, merger)
    if step1.failed:
        joined = step1.partial + step1.failed
        step1.failed = []
        step1.partial = _fold(joined, step1, guard, merger)
    if len(step1.full) > 1:
        step1.full = _fold(step1.full, step1, guard, merger)
    if step1.full:
        joined = step1.full + step1.failed
        step1.failed = []
        step1.full = _fold(joined, step1, guard, merger)
    if step1.full or step1.partial:
        joined = step1.full + step1.partial
        step1.partial = []
        step1.full = _fold(joined, step1, guard, merger)
    if not step1.full:
        return _fail()
    if not step1.failed:
        if len(step1.full) == 1:
            return _full(step1.full[0])
        return _partial(step1.full, [])
    return _partial(step1.full, step1.failed)


cdef object _merge_accumulator(Block base, list blocks, object guard, _Merger merger):
    """Merge each of ``blocks`` into a growing copy of ``base``."""
    # refimpl starts from ``base.clone()``; ``merge_pair`` only reads its arguments (it merges
    # into a clone), and a result holds the accumulator only once a merge replaced it, so
    # ``base`` itself serves: the same result, one clone less.
    cdef Block accumulator = base
    cdef Block block
    cdef list failed = []
    cdef bint merged_any = False
    for block in blocks:
        merged = merge_pair(accumulator, block, guard, merger)
        if merged is None:
            failed.append(_kept(block, merger))
        else:
            merged_any = True
            accumulator = merged
    if not merged_any:
        return _fail()
    if not failed:
        return _full(accumulator)
    return _partial([accumulator], failed)


def _start(Block block):
    return block.start_pos


cdef object _sorted(object result):
    if result.kind != "Partial":
        return result
    merged = sorted(result.merged, key=_start)
    failed = sorted(result.failed, key=_start)
    return _partial(merged, failed)
