# cython: language_level=3
"""The last pass of the search: put the strategy chunks into an order that respects every
tensor lifetime, or fall back to running the segment unfused in stream order.

burn counterpart: ``repair_order``, ``repair_order_split``, ``assemble``,
``unfused_stream_order``, ``ordering_is_valid`` and ``Chunk`` in
``crates/burn-fusion/src/search/optimization/stream.rs`` (notes §9.3 step 4).
Mirrors ``refimpl/planner/search/repair.py``: same names, same order, same results.

Differs from refimpl:

* each op's data flow is read once per call (``block.op_flow``) and shared by the chunks and
  the lifetime checks; a chunk's position (the least of its positions) is a loop in C;
* the search's own repairs (``repaired``, given the flows it read) return an unfused block in
  ascending order as it is when that order is valid, else ``unfused_stream_order`` of the
  same positions, an equal value (``_unfused_in_order``);
* a Composed repair's chunk DAG reads its edges in the chunks' id dicts
  (``graph.dag_of_sets``), and a chunk looks each op's flow up once.
"""

from fastplan.search.block cimport op_flow
from fastplan.search.graph cimport _Flow, Dag, dag_of_sets, valid_flows
from fastplan.search.strategy cimport len_of, unfused_block
from fastplan.stream.relative cimport EncodedOp, new_frozen

from refimpl.planner.search.strategy import BlockOptimization, Composed, Operations

__all__ = ["Chunk", "repair_order", "ordering_is_valid", "unfused_stream_order"]

_BlockOptimization = BlockOptimization
_Composed = Composed
_Operations = Operations


cdef class _Flows:
    """The flows of a segment's ops, read on first use; ``known``: flows the search read
    already (by position), used where they are the flow of the op at that position. Flows
    are kept by position in a list (positions are list indices); any other position (a
    negative one: Python indexing) in a dict."""

    cdef object operations
    cdef list by_pos
    cdef dict cache
    cdef list known

    def __cinit__(self, operations, list known=None):
        cdef Py_ssize_t n = 0
        self.operations = operations
        try:
            n = len(operations)
        except TypeError:  # indexable without a length: every position goes to the dict
            pass
        self.by_pos = [None] * n
        self.cache = {}
        self.known = known

    cdef _Flow at(self, object pos):
        cdef _Flow flow
        cdef Py_ssize_t i = -1
        if type(pos) is int and 0 <= pos < len(self.by_pos):
            i = pos
            found = self.by_pos[i]
        else:
            found = self.cache.get(pos)
        if found is None:
            operation = self.operations[pos]
            if self.known is not None and 0 <= pos < len(self.known):
                flow = self.known[pos]
                if flow.encoded is not None and (<EncodedOp>flow.encoded).source is operation:
                    found = flow
            if found is None:
                found = op_flow(operation)
            if i >= 0:
                self.by_pos[i] = found
            else:
                self.cache[pos] = found
        return <_Flow>found


cdef class Chunk:
    """One top-level strategy seen as a single graph node over its positions.

    Mirrors refimpl.planner.search.repair.Chunk.
    """

    def __init__(self, positions, operations):
        _fill(self, positions, _Flows(operations))

    def produced(self):
        return tuple(self.produced_ids)

    def read(self):
        return tuple(self.read_ids)

    def freed(self):
        return tuple(self.freed_ids)

    def produces(self, resource):
        return resource in self.produced_ids

    def reads(self, resource):
        return resource in self.read_ids

    def position(self):
        return _position(self)


cdef object _position(Chunk chunk):
    """``Chunk.position`` without a Python call: ``min`` as a loop (the first of the least,
    compared with ``<`` as ``min`` does; the builtin's call cost more than the loop)."""
    cdef tuple positions = chunk.positions
    if not positions:
        return 0
    least = positions[0]
    for pos in positions:
        if pos < least:
            least = pos
    return least


cdef int _fill(Chunk chunk, object positions, _Flows flows) except -1:
    cdef _Flow flow
    cdef tuple read, read_rw
    cdef Py_ssize_t i
    cdef list found = []
    chunk.positions = tuple(positions)
    chunk.produced_ids = {}
    chunk.read_ids = {}
    chunk.freed_ids = {}
    for pos in chunk.positions:  # each flow looked up once
        flow = flows.at(pos)
        found.append(flow)
        for tid in flow.produced:
            chunk.produced_ids[tid] = None
    for flow in found:
        # A ReadWrite read frees the tensor even if this chunk produced it: readers in other
        # chunks must still run first.
        read, read_rw = flow.read, flow.read_rw
        for i in range(min(len(read), len(read_rw))):  # zip's pairs
            tid = read[i]
            if read_rw[i]:
                chunk.freed_ids[tid] = None
            if tid not in chunk.produced_ids:
                chunk.read_ids[tid] = None
    return 0


cdef Chunk _chunk(object positions, _Flows flows):
    cdef Chunk chunk = Chunk.__new__(Chunk)
    _fill(chunk, positions, flows)
    return chunk


cdef bint _valid(object ordering, _Flows flows) except -1:
    return valid_flows([flows.at(p) for p in ordering])


def ordering_is_valid(ordering, operations):
    """Whether running the ops at ``ordering`` in that order keeps every input live.

    Mirrors refimpl.planner.search.repair.ordering_is_valid.
    """
    return _valid(ordering, _Flows(operations))


cdef object unfused_order(object positions):
    """``unfused_stream_order`` (see there)."""
    ordering = tuple(sorted(positions))
    return unfused_block(ordering)


def unfused_stream_order(positions):
    """Every op unfused in ascending position: the always-valid last resort.

    Mirrors refimpl.planner.search.repair.unfused_stream_order.
    """
    return unfused_order(positions)


cdef Dag _dag(list chunks):
    """The chunks' DAG, its edges read in the chunks' id dicts (``graph.dag_of_sets``)."""
    cdef Chunk chunk
    cdef list produced = [], read = [], freed = [], positions = []
    for chunk in chunks:
        produced.append(chunk.produced_ids)
        read.append(chunk.read_ids)
        freed.append(chunk.freed_ids)
        positions.append(_position(chunk))
    return dag_of_sets(produced, read, freed, positions)


cdef bint _unfused_in_order(object opt, Py_ssize_t registered) except -1:
    """Whether ``opt`` runs registered positions unfused in ascending order: an
    ``Operations`` strategy over ``opt``'s own ordering, exact ints, none decreasing, each
    below ``registered``. Its repair is ``opt`` if the order is valid, else
    ``unfused_stream_order`` of the same positions: an equal value either way."""
    cdef tuple ordering
    cdef Py_ssize_t i, pos, last = -1
    strategy = opt.strategy
    if type(strategy) is not _Operations or type(opt) is not _BlockOptimization:
        return False
    if type(opt.ordering) is not tuple:
        return False
    ordering = opt.ordering
    if type(strategy.ordering) is not tuple or strategy.ordering != ordering:
        return False
    for i in range(len(ordering)):
        value = ordering[i]
        if type(value) is not int:
            return False
        try:
            pos = value
        except OverflowError:  # (past int64: no position the search gave)
            return False
        if pos < 0 or pos < last or pos >= registered:
            return False
        last = pos
    return True


cdef object repaired(object opt, object operations, list known=None):
    """``repair_order`` (see there); ``known``: the flows of the ops the search registered, by
    position (taken where they belong to ``operations``' op at that position). Given
    ``known``, an unfused block in ascending order is returned as it is (its repair is an
    equal value whether the order is valid or not: ``_unfused_in_order``)."""
    cdef _Flows flows
    cdef list strategies, chunks
    cdef Py_ssize_t offset, size
    if known is not None and _unfused_in_order(opt, len(known)):
        return opt
    flows = _Flows(operations, known)
    strategy = opt.strategy
    if not isinstance(strategy, _Composed):
        if _valid(opt.ordering, flows):
            return opt
        return unfused_order(opt.ordering)
    strategies = list(strategy.items)
    chunks = []
    offset = 0
    for item in strategies:
        size = len_of(item)
        chunks.append(_chunk(opt.ordering[offset: offset + size], flows))
        offset += size
    order = _dag(chunks).topological_order()
    if order is None:
        return _repair_order_split(strategies, chunks, flows)
    return _assemble(strategies, chunks, order, flows)


def repair_order(opt, operations):
    """``opt`` with its top-level chunks in a lifetime-respecting order.

    Mirrors refimpl.planner.search.repair.repair_order.
    """
    return repaired(opt, operations)


cdef object _repair_order_split(list strategies, list chunks, _Flows flows):
    """Retry with every unfused chunk split per op; fused chunks stay atomic."""
    cdef list split_strategies = []
    cdef list split_chunks = []
    cdef Chunk chunk
    cdef Py_ssize_t i
    if len(strategies) != len(chunks):
        raise ValueError("strategies and chunks differ in length")
    for i in range(len(strategies)):
        strategy = strategies[i]
        chunk = chunks[i]
        if isinstance(strategy, _Operations):
            for pos in chunk.positions:
                split_strategies.append(new_frozen(_Operations, ((pos,),)))
                split_chunks.append(_chunk((pos,), flows))
        else:
            split_strategies.append(strategy)
            split_chunks.append(chunk)
    order = _dag(split_chunks).topological_order()
    if order is None:
        return unfused_order([p for chunk in split_chunks for p in chunk.positions])
    return _assemble(split_strategies, split_chunks, order, flows)


cdef object _assemble(list strategies, list chunks, list order, _Flows flows):
    """The strategies in chunk order; unfused stream order if the result is still invalid."""
    cdef list ordering = []
    for index in order:
        ordering.extend((<Chunk>chunks[index]).positions)
    if not _valid(ordering, flows):
        return unfused_order(ordering)
    return new_frozen(_BlockOptimization, (
        new_frozen(_Composed, (tuple([strategies[i] for i in order]),)), tuple(ordering)))
