# cython: language_level=3
"""One block of the search: ops that share tensors, fed to a private clone of every fuser.

burn counterpart: ``crates/burn-fusion/src/search/block.rs`` (``Block``, ``OperationNode``,
``RegistrationResult``, ``find_best_optimization_index``).
Mirrors ``refimpl/planner/search/block.py``: same names, same order, same results.
``RegistrationResult`` and ``OperationNode`` are refimpl's classes (plain data).

Differs from refimpl:

* each op's data flow (ids produced, read, freed) is read once, from its C encoding, and kept
  as a ``graph._Flow`` beside the op; ``can_append`` checks those flows instead of building
  ``OperationNode``s;
* fastplan's five fusers are cloned, fed, checked and scored in C (``_clone``, ``_feed``,
  ``_frozen``, ``_is_open``, ``_properties``, ``_finish``); any other fuser goes through its
  Python methods. The search makes its blocks with ``new_block``;
* a block's own flow (``as_flow``, its node in the block DAG) is built once per contents (the
  ``state`` each registration renews) and kept;
* ``op_flow`` fills its tuples in place; the id it hands over is a Python int variable
  (``cdef object tid``), so that the reference ``Py_INCREF`` takes is the one the tuple
  steals (an inferred ``int64_t`` would make an int per use and free the tuple's under it).

Invariants (refimpl's):

* Every fuser of the block has been fed exactly the block's ops, in registration order.
* ``optimize`` picks the ready fuser with the highest score strictly above 0; ties go to the
  earlier fuser (``BUILTIN_NAMES`` order); if it covers fewer ops than the block holds, the
  ordering is truncated to its prefix (the rest is left for the next round).
"""

cimport cython

import sys

from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from fastplan.search.graph cimport _Flow, flow_new, valid_flows
from fastplan.search.strategy cimport unfused_block
from fastplan.stream.relative cimport EncodedOp, READ_WRITE, encode_cached, new_frozen

from fastplan.fusers.elemwise cimport ElementWiseFuser
from fastplan.fusers.matmul cimport MatmulFuser
from fastplan.fusers.nhwc cimport NHWCRelayoutFuser
from fastplan.fusers.reduce cimport ReduceFuser
from fastplan.fusers.reduce_broadcasted cimport ReduceBroadcastedFuser

from refimpl.ir import OP_IR_STRUCTS
from refimpl.planner.search.block import OperationNode, RegistrationResult
from refimpl.planner.engine.fuser import FuserStatus
from refimpl.planner.log import NO_LOG, LogLevel, log_block
from refimpl.planner.fusers.elemwise import ElemwiseOptimization, FusedOptimization
from refimpl.planner.fusers.matmul import MatmulOptimization
from refimpl.planner.fusers.nhwc import NHWCRelayoutOptimization
from refimpl.planner.fusers.reduce import ReduceOptimization
from refimpl.planner.fusers.reduce_broadcasted import ReduceBroadcastedOptimization
from refimpl.planner.search.strategy import BlockOptimization, Optimization

__all__ = ["RegistrationResult", "OperationNode", "Block", "find_best_fuser_index"]

cdef object _ONE = 1  # a Python int: bit sets grow past 64 bits

_ACCEPTED = RegistrationResult.Accepted
_NOT_PART = RegistrationResult.NotPartOfTheGraph
_OPEN = FuserStatus.Open
_BASIC = LogLevel.BASIC
_MAXSIZE = sys.maxsize
_BlockOptimization = BlockOptimization
_Optimization = Optimization
# The optimizations whose len() is FusedOptimization's (their num_ops field), checked at import
cdef tuple _NUM_OPS_IS_LEN = tuple([
    cls for cls in (ElemwiseOptimization, ReduceOptimization, MatmulOptimization,
                    NHWCRelayoutOptimization, ReduceBroadcastedOptimization)
    if cls.len is FusedOptimization.len])

cdef unsigned long long _last_state = 0


cdef inline unsigned long long _new_state() noexcept:
    global _last_state
    _last_state += 1
    return _last_state


cdef bint _frozen(object fuser) except -1:
    """Whether ``fuser`` can no longer change: closed, so that every ``fuse`` is a no-op (the
    flag each fuser's ``fuse`` tests first), and ``properties`` and ``finish`` only read it (the
    search never resets a block's fusers). Classes other than fastplan's five: no."""
    cdef type kind = type(fuser)
    if kind is ElementWiseFuser:
        return (<ElementWiseFuser>fuser).fuser.st.s.closed
    if kind is ReduceFuser:
        return (<ReduceFuser>fuser).fuser.st.s.closed
    if kind is MatmulFuser:
        return (<MatmulFuser>fuser).fuser.st.s.closed
    if kind is NHWCRelayoutFuser:
        return (<NHWCRelayoutFuser>fuser)._closed
    if kind is ReduceBroadcastedFuser:
        return (<ReduceBroadcastedFuser>fuser).closed()
    return False


cdef object _clone(object fuser):
    """``fuser.clone()``: a C call for fastplan's five fusers (each one's ``copy``), the
    Python method for any other."""
    cdef type kind = type(fuser)
    if kind is ElementWiseFuser:
        return (<ElementWiseFuser>fuser).copy()
    if kind is ReduceFuser:
        return (<ReduceFuser>fuser).copy()
    if kind is MatmulFuser:
        return (<MatmulFuser>fuser).copy()
    if kind is ReduceBroadcastedFuser:
        return (<ReduceBroadcastedFuser>fuser).copy()
    if kind is NHWCRelayoutFuser:
        return (<NHWCRelayoutFuser>fuser).copy()
    return fuser.clone()


cdef list _clones(list fusers):
    cdef list found = []
    for fuser in fusers:
        found.append(_clone(fuser))
    return found


cdef bint _is_open(object fuser) except -1:
    """``fuser.status() is Open``, read in C for the four fusers whose status is their closed
    flag."""
    cdef type kind = type(fuser)
    if kind is ElementWiseFuser:
        return not (<ElementWiseFuser>fuser).fuser.st.s.closed
    if kind is ReduceFuser:
        return not (<ReduceFuser>fuser).fuser.st.s.closed
    if kind is MatmulFuser:
        return not (<MatmulFuser>fuser).fuser.st.s.closed
    if kind is NHWCRelayoutFuser:
        return not (<NHWCRelayoutFuser>fuser)._closed
    if kind is ReduceBroadcastedFuser:
        return (<ReduceBroadcastedFuser>fuser).is_open()
    return fuser.status() is _OPEN


cdef object _finish(object fuser):
    """``fuser.finish()``: a C call for fastplan's five fusers, the Python method for any
    other."""
    cdef type kind = type(fuser)
    if kind is ReduceBroadcastedFuser:
        return (<ReduceBroadcastedFuser>fuser).finish_c()
    if kind is ReduceFuser:
        return (<ReduceFuser>fuser).finish_c()
    if kind is MatmulFuser:
        return (<MatmulFuser>fuser).finish_c()
    if kind is ElementWiseFuser:
        return (<ElementWiseFuser>fuser).finish_c()
    if kind is NHWCRelayoutFuser:
        return (<NHWCRelayoutFuser>fuser).finish_c()
    return fuser.finish()


cdef bint _any_live(list fusers) except -1:
    for fuser in fusers:
        if not _frozen(fuser):
            return True
    return False


cdef bint _any_open(list fusers) except -1:
    for fuser in fusers:
        if _is_open(fuser):
            return True
    return False


cdef int _properties(object fuser, int64_t* score) except -1:
    """``fuser.properties()`` read in C for fastplan's five fusers (each one's
    ``score_ready``): 1 if ready, else 0, with the score in ``score``; 2 for any other
    fuser, whose ``properties`` the caller calls."""
    cdef type kind = type(fuser)
    if kind is ElementWiseFuser:
        return (<ElementWiseFuser>fuser).score_ready(score)
    if kind is MatmulFuser:
        return (<MatmulFuser>fuser).score_ready(score)
    if kind is ReduceFuser:
        return (<ReduceFuser>fuser).score_ready(score)
    if kind is ReduceBroadcastedFuser:
        return (<ReduceBroadcastedFuser>fuser).score_ready(score)
    if kind is NHWCRelayoutFuser:
        return (<NHWCRelayoutFuser>fuser).score_ready(score)
    return 2


cdef bint _any_ready(list fusers) except -1:
    cdef int64_t score
    cdef int ready
    for fuser in fusers:
        ready = _properties(fuser, &score)
        if ready == 2:
            ready = fuser.properties().ready
        if ready:
            return True
    return False


cdef int _feed(object fuser, object operation, object encoded) except -1:
    """``fuser.fuse(operation)``: fastplan's fusers take the op's encoding (``encoded``, from
    its flow) in C, and are skipped once frozen (their ``fuse`` would do nothing)."""
    cdef type kind = type(fuser)
    if encoded is not None:
        if kind is ElementWiseFuser:
            if not (<ElementWiseFuser>fuser).fuser.st.s.closed:
                (<ElementWiseFuser>fuser).fuse_open(<EncodedOp>encoded)
            return 0
        if kind is ReduceFuser:
            if not (<ReduceFuser>fuser).fuser.st.s.closed:
                (<ReduceFuser>fuser).fuse_encoded(<EncodedOp>encoded)
            return 0
        if kind is MatmulFuser:
            if not (<MatmulFuser>fuser).fuser.st.s.closed:
                (<MatmulFuser>fuser).fuse_open(<EncodedOp>encoded)
            return 0
        if kind is NHWCRelayoutFuser:
            if not (<NHWCRelayoutFuser>fuser)._closed:
                (<NHWCRelayoutFuser>fuser).fuse_open(<EncodedOp>encoded)
            return 0
        if kind is ReduceBroadcastedFuser:
            if not (<ReduceBroadcastedFuser>fuser).closed():
                (<ReduceBroadcastedFuser>fuser).fuse_encoded(<EncodedOp>encoded)
            return 0
    if not _frozen(fuser):
        fuser.fuse(operation)
    return 0


cdef int _after_out(object struct) except -2:
    """How many tensors follow ``out`` among the encoded tensors (-1: no ``out`` field)."""
    names = [name for name, kind in struct.SCHEMA if kind.name in ("TENSOR", "TENSORS")]
    if "out" not in names:
        return -1
    after = struct.SCHEMA[[n for n, _ in struct.SCHEMA].index("out") + 1:]
    if any(kind.name == "TENSORS" for _, kind in after):
        raise ValueError(f"{struct.__name__}: a TENSORS field after out")
    return sum(kind.name == "TENSOR" for _, kind in after)


# The encoded tensors of an op are its TENSOR/TENSORS fields in SCHEMA order (a TENSORS field
# contributes all its tensors). ``out`` sits _AFTER_OUT[struct] entries before the end; the
# other tensors are ``op.inputs()``, in order, and ``out`` is ``op.outputs()``.
cdef tuple _AFTER_OUT = tuple(_after_out(s) for s in OP_IR_STRUCTS)


cdef _Flow op_flow(object operation):
    """The data flow of one relative op: ``(outputs, inputs, ReadWrite inputs)`` ids."""
    cdef EncodedOp encoded = encode_cached(operation)
    cdef Py_ssize_t i, k = 0, j = 0, n_read, n_freed = 0, out = -1
    cdef int after = _AFTER_OUT[encoded.c.struct_code]
    cdef tuple read, freed, rw
    cdef tuple produced = ()
    cdef _Flow flow
    # a Python int: PyTuple_SET_ITEM steals the reference Py_INCREF takes on this object (an
    # int64_t here, as Cython would infer, makes each call a new int, the first one leaked and
    # the one the tuple holds freed under it: an id past the small-int cache was freed in use)
    cdef object tid
    if after >= 0:
        out = encoded.c.n_tensors - 1 - after
    n_read = encoded.c.n_tensors - (1 if out >= 0 else 0)
    for i in range(encoded.c.n_tensors):
        if i != out and encoded.c.tensors[i].status == READ_WRITE:
            n_freed += 1
    # the tuples filled in place (a list per field, then a copy, cost twice as many objects)
    read, freed, rw = PyTuple_New(n_read), PyTuple_New(n_freed), PyTuple_New(n_read)
    for i in range(encoded.c.n_tensors):
        tid = encoded.c.tensors[i].id
        if i == out:
            produced = (tid,)
            continue
        Py_INCREF(tid)
        PyTuple_SET_ITEM(read, k, tid)
        if encoded.c.tensors[i].status == READ_WRITE:
            Py_INCREF(tid)
            PyTuple_SET_ITEM(freed, j, tid)
            j += 1
            Py_INCREF(True)
            PyTuple_SET_ITEM(rw, k, True)
        else:
            Py_INCREF(False)
            PyTuple_SET_ITEM(rw, k, False)
        k += 1
    flow = _Flow.__new__(_Flow)  # no membership sets: op flows are only walked in order
    flow.produced = produced
    flow.read = read
    flow.freed = freed
    flow.read_rw = rw
    flow.encoded = encoded
    return flow


cdef int _init(Block block, list fusers) except -1:
    """``Block.__init__`` once the fusers are cloned: an empty block."""
    block.fusers = fusers
    block.operations = []
    block.ordering = []
    block.ids = set()
    block.produced_ids = {}
    block.read_ids = {}
    block.freed_ids = {}
    block.constituents = 0
    block.start_pos = _MAXSIZE
    block.end_pos = 0
    block.flows = []
    block.state = _new_state()
    return 0


cdef Block new_block(list fusers):
    """``Block(fusers)`` without the Python call: an empty block with a clone of every fuser."""
    cdef Block block = Block.__new__(Block)
    _init(block, _clones(fusers))
    return block


cdef Block block_sharing(list fusers):
    """An empty block holding ``fusers`` themselves, not clones: only for fusers that are all
    frozen (``_frozen``), which no op fed to the block changes (the search shares them)."""
    cdef Block block = Block.__new__(Block)
    _init(block, list(fusers))
    return block


cdef object best_fuser(list fusers):
    """``find_best_fuser_index`` (see there)."""
    cdef int64_t score
    cdef int ready
    best = None
    best_score = 0
    for index, fuser in enumerate(fusers):
        ready = _properties(fuser, &score)
        if ready == 2:
            properties = fuser.properties()
            if properties.ready and properties.score > best_score:
                best = (index, properties.score)
                best_score = properties.score
        elif ready and score > best_score:
            best = (index, score)
            best_score = score
    return best


def find_best_fuser_index(fusers):
    """``(index, score)`` of the ready fuser with the best score > 0, or ``None``.

    Mirrors refimpl.planner.search.block.find_best_fuser_index.

    A score of 0 is never chosen (running unfused is as good); ties keep the earlier fuser.
    """
    return best_fuser(list(fusers))


@cython.freelist(64)  # made and dropped by the hundred per search
cdef class Block:
    """A list of ops (not necessarily in stream order) with one clone of every fuser.

    Mirrors refimpl.planner.search.block.Block.
    """

    def __init__(self, fusers):
        _init(self, _clones(list(fusers)))

    # --- GraphNode ---------------------------------------------------------------------------

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
        return self.start_pos

    cdef _Flow as_flow(self):
        """The block as one node of the block DAG; built once per contents (``state``), as the
        search builds a DAG of the same blocks again and again."""
        if self._flow is None or self._flow_state != self.state:
            self._flow = flow_new(tuple(self.produced_ids), tuple(self.read_ids),
                                  tuple(self.freed_ids))
            self._flow_state = self.state
        return self._flow

    # --- construction ------------------------------------------------------------------------

    cpdef Block clone(self):
        """A deep copy: fusers cloned, lists and sets copied."""
        cdef Block other = self.clone_lists()
        other.fusers = _clones(self.fusers)
        return other

    cdef list fusers_sharing(self):
        """Copies of the fusers for a merge, sharing every fuser that can no longer change
        (``_frozen``): feeding it more ops leaves it as it is, in both blocks."""
        cdef list fusers = []
        for fuser in self.fusers:
            fusers.append(fuser if _frozen(fuser) else _clone(fuser))
        return fusers

    cdef bint live(self) except -1:
        """Whether some fuser is not frozen. A merge into a block with none is refused: the
        copy would keep every fuser as it is (none open, none newly ready)."""
        return _any_live(self.fusers)

    cdef Block clone_lists(self):
        """A copy of everything but the fusers (``fusers`` is left to the caller)."""
        cdef Block other = Block.__new__(Block)
        other.operations = list(self.operations)
        other.ordering = list(self.ordering)
        other.ids = set(self.ids)
        other.produced_ids = dict(self.produced_ids)
        other.read_ids = dict(self.read_ids)
        other.freed_ids = dict(self.freed_ids)
        other.constituents = self.constituents
        other.start_pos = self.start_pos
        other.end_pos = self.end_pos
        other.flows = list(self.flows)
        other.state = self.state
        other._flow, other._flow_state = self._flow, self._flow_state
        return other

    def seed_constituent(self, index):
        """Make this block stand for original block ``index`` alone (before a merge pass)."""
        self.constituents = _ONE << index

    def sort_key(self):
        """Blocks are kept sorted by start position (burn ``Block::sort``; stable)."""
        return self.start_pos

    def register(self, operation, pos, force):
        """Add an op if it shares a tensor with the block (or ``force``, or the block is
        empty)."""
        if self.accepts(operation, pos, op_flow(operation), force):
            return _ACCEPTED
        return _NOT_PART

    cdef int accepts(self, object operation, object pos, _Flow flow, bint force) except -1:
        """``register`` on an op whose flow is known: 1 if added, 0 if not part of the graph."""
        if self.ids and not force and not self.touches(flow):
            return 0
        self.register_op(operation, pos, flow)
        return 1

    def contains_tensors(self, tensors):
        """Whether any of the tensors is already touched by the block."""
        for tensor in tensors:
            if tensor.id in self.ids:
                return True
        return False

    cdef bint touches(self, _Flow flow) except -1:
        for tid in flow.read:
            if tid in self.ids:
                return True
        for tid in flow.produced:
            if tid in self.ids:
                return True
        return False

    cdef int register_op(self, object operation, object pos, _Flow flow) except -1:
        self._record_op(operation, pos, flow)
        for fuser in self.fusers:
            _feed(fuser, operation, flow.encoded)
        return self._record_ids(flow)

    cdef int _record_op(self, object operation, object pos, _Flow flow) except -1:
        """``register_op``, first part: the op in the lists and the positions."""
        self.state = _new_state()
        self.operations.append(operation)
        self.ordering.append(pos)
        self.flows.append(flow)
        if pos < self.start_pos:
            self.start_pos = pos
        if pos + 1 > self.end_pos:
            self.end_pos = pos + 1
        return 0

    cdef int _record_ids(self, _Flow flow) except -1:
        """``register_op``, last part (after the fusers): the tensor ids."""
        for tid in flow.read:
            self.ids.add(tid)
        for tid in flow.produced:
            self.ids.add(tid)
        # An input counts as external only while nothing in the block produced it; producing
        # an id makes it internal. Order-independent, so merges in any order stay correct.
        for tid in flow.read:
            if tid not in self.produced_ids:
                self.read_ids[tid] = None
        for tid in flow.freed:
            self.freed_ids[tid] = None
        for tid in flow.produced:
            self.produced_ids[tid] = None
            self.read_ids.pop(tid, None)
        return 0

    # --- state -------------------------------------------------------------------------------

    def still_optimizing(self):
        """At least one fuser is still open."""
        return self.open_()

    cdef bint open_(self) except -1:
        return _any_open(self.fusers)

    def has_ready_optimization(self):
        return self.ready()

    cdef bint ready(self) except -1:
        return _any_ready(self.fusers)

    def operation_nodes(self):
        """The ops in registration order as graph nodes."""
        if len(self.operations) != len(self.ordering):
            raise ValueError("a block's operations and ordering differ in length")
        return [OperationNode(op, pos) for op, pos in zip(self.operations, self.ordering)]

    def can_append(self, other):
        """Whether running ``other``'s ops after this block's respects every lifetime."""
        return self.appendable(other)

    cdef bint appendable(self, Block other) except -1:
        return valid_flows(self.flows + other.flows)

    # --- merge and optimize ------------------------------------------------------------------

    def merge(self, other):
        """Append ``other``'s ops to this block; whether the merge is worth keeping.

        Kept if the merged block is still optimizing, or if it creates a ready fusion that
        neither side had. Mutates this block even when refused (callers merge a clone)."""
        return self.merge_from(other)

    cdef bint merge_from(self, Block other) except -1:
        if not len(other.operations) == len(other.ordering) == len(other.flows):
            raise ValueError("a block's operations and ordering differ in length")
        if not self.appendable(other):
            return False
        return self.merge_appendable(other)

    cdef bint merge_appendable(self, Block other) except -1:
        """``merge_from`` once ``appendable(other)`` is known to hold."""
        cdef Py_ssize_t i
        if not len(other.operations) == len(other.ordering) == len(other.flows):
            raise ValueError("a block's operations and ordering differ in length")
        self_ready = self.ready()
        other_ready = other.ready()
        self.constituents |= other.constituents
        for i in range(len(other.operations)):
            self.register_op(other.operations[i], other.ordering[i], <_Flow>other.flows[i])
        if self.open_():
            return True
        return not self_ready and not other_ready and self.ready()

    cdef object merged_copy(self, Block other):
        """``merge_from`` on a copy, ``appendable(other)`` being known to hold: the merged
        block, or ``None`` if refused. The same answer for less work: the copy shares the
        frozen fusers (``fusers_sharing``); its ops and ids are recorded only once the merge
        is kept; whether a side was ready is read from this block and ``other`` (neither
        changes) only once no fuser of the copy is open; and the ops stop being fed when every
        fuser of the copy is frozen and a side was ready (refused, whatever the rest)."""
        cdef Block merged
        cdef list fusers
        cdef _Flow flow
        cdef Py_ssize_t i, n = len(other.operations)
        cdef int side_ready = -1  # -1: not read yet
        if not n == len(other.ordering) == len(other.flows):
            raise ValueError("a block's operations and ordering differ in length")
        fusers = self.fusers_sharing()
        for i in range(n):
            flow = <_Flow>other.flows[i]
            operation = other.operations[i]
            for fuser in fusers:
                _feed(fuser, operation, flow.encoded)
            if i + 1 < n and not _any_live(fusers):
                if side_ready < 0:
                    side_ready = self.ready() or other.ready()
                if side_ready:
                    return None
        if not _any_open(fusers):
            if side_ready < 0:
                side_ready = self.ready() or other.ready()
            if side_ready or not _any_ready(fusers):
                return None
        merged = self.clone_lists()
        merged.fusers = fusers
        merged.constituents |= other.constituents
        for i in range(n):
            flow = <_Flow>other.flows[i]
            merged._record_op(other.operations[i], other.ordering[i], flow)
            merged._record_ids(flow)
        return merged

    def optimize(self, log=NO_LOG):
        """The block's best strategy: one fused optimization over a prefix of its ops, or all
        its ops unfused."""
        return self.optimized(log, log.enabled(_BASIC))

    cdef object optimized(self, object log, bint logged):
        """``optimize``; ``logged``: ``log`` prints block decisions (else it is not called)."""
        best = best_fuser(self.fusers)
        if logged:
            log_block(log, self, best)
        if best is None:
            ordering = tuple(self.ordering)
            return unfused_block(ordering)
        index, score = best
        opt = _finish(self.fusers[index])
        # refimpl's optimizations answer len() with their num_ops field (a Python frame each)
        ordering = tuple(self.ordering[: opt.num_ops if type(opt) in _NUM_OPS_IS_LEN
                                       else opt.len()])
        return new_frozen(_BlockOptimization,
                          (new_frozen(_Optimization, (opt, ordering, score)), ordering))

    def sorted_positions(self):
        """The positions it covers, ascending (burn compares blocks this way)."""
        return sorted(self.ordering)

    def __repr__(self):
        return f"Block(pos=[{self.start_pos}, {self.end_pos}; {len(self.ordering)}])"
