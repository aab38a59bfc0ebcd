# cython: language_level=3
"""One block of the search: ops that share tensors, fed to a private clone of every fuser.

burn counterpart: ``crates/burn-fusion/src/search/block.rs`` (``Block``, ``OperationNode``,
``RegistrationResult``, ``find_best_optimization_index``). Mirrors refimpl/planner/block.py:
same names, same order, same results.

Where the structure differs (the result must not):

* each op's data flow (ids produced, read, freed) is read once, from its C encoding
  (``fastplan.relative.encode_cached``: the fusers then find it in the one-entry cache), and
  kept as a ``graph._Flow`` beside the op; ``can_append`` checks those flows instead of
  building ``OperationNode``s;
* ``RegistrationResult`` and ``OperationNode`` are refimpl's classes (plain data).

Invariants (refimpl's):

* Every fuser of the block has been fed exactly the block's ops, in registration order.
* ``optimize`` picks the ready fuser with the highest score strictly above 0; ties go to the
  earlier fuser (``BUILTIN_NAMES`` order); if it covers fewer ops than the block holds, the
  ordering is truncated to its prefix (the rest is left for the next round).
"""

import sys

from fastplan.graph cimport _Flow, flow_new, valid_flows
from fastplan.relative cimport EncodedOp, READ_WRITE, encode_cached

from refimpl.ir import OP_IR_STRUCTS
from refimpl.planner.block import OperationNode, RegistrationResult
from refimpl.planner.fuser import FuserStatus
from refimpl.planner.log import NO_LOG, log_block
from refimpl.planner.strategy import BlockOptimization, Operations, Optimization

__all__ = ["RegistrationResult", "OperationNode", "Block", "find_best_fuser_index"]

cdef object _ONE = 1  # a Python int: bit sets grow past 64 bits

_ACCEPTED = RegistrationResult.Accepted
_NOT_PART = RegistrationResult.NotPartOfTheGraph
_OPEN = FuserStatus.Open
_MAXSIZE = sys.maxsize
_BlockOptimization = BlockOptimization
_Operations = Operations
_Optimization = Optimization


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
    cdef Py_ssize_t i, out = -1
    cdef int after = _AFTER_OUT[encoded.c.struct_code]
    cdef list read = []
    cdef list freed = []
    cdef list rw = []
    cdef tuple produced = ()
    cdef _Flow flow
    if after >= 0:
        out = encoded.c.n_tensors - 1 - after
    for i in range(encoded.c.n_tensors):
        if i == out:
            produced = (encoded.c.tensors[i].id,)
            continue
        read.append(encoded.c.tensors[i].id)
        if encoded.c.tensors[i].status == READ_WRITE:
            freed.append(encoded.c.tensors[i].id)
            rw.append(True)
        else:
            rw.append(False)
    flow = flow_new(produced, tuple(read), tuple(freed))
    flow.read_rw = tuple(rw)
    return flow


cdef object best_fuser(list fusers):
    """``find_best_fuser_index`` (see there)."""
    best = None
    best_score = 0
    for index, fuser in enumerate(fusers):
        properties = fuser.properties()
        if properties.ready and properties.score > best_score:
            best = (index, properties.score)
            best_score = properties.score
    return best


def find_best_fuser_index(fusers):
    """``(index, score)`` of the ready fuser with the best score > 0, or ``None``.

    Mirrors refimpl.planner.block.find_best_fuser_index.

    A score of 0 is never chosen (running unfused is as good); ties keep the earlier fuser.
    """
    return best_fuser(list(fusers))


cdef class Block:
    """A list of ops (not necessarily in stream order) with one clone of every fuser.

    Mirrors refimpl.planner.block.Block.
    """

    def __init__(self, fusers):
        self.fusers = [fuser.clone() for fuser in fusers]
        self.operations = []
        self.ordering = []
        self.ids = set()
        self.produced_ids = {}
        self.read_ids = {}
        self.freed_ids = {}
        self.constituents = 0
        self.start_pos = _MAXSIZE
        self.end_pos = 0
        self.flows = []

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
        return flow_new(tuple(self.produced_ids), tuple(self.read_ids), tuple(self.freed_ids))

    # --- construction ------------------------------------------------------------------------

    cpdef Block clone(self):
        """A deep copy: fusers cloned, lists and sets copied."""
        cdef Block other = Block.__new__(Block)
        other.fusers = [fuser.clone() for fuser in self.fusers]
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
        self.operations.append(operation)
        self.ordering.append(pos)
        self.flows.append(flow)
        if pos < self.start_pos:
            self.start_pos = pos
        if pos + 1 > self.end_pos:
            self.end_pos = pos + 1
        for fuser in self.fusers:
            fuser.fuse(operation)
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
        for fuser in self.fusers:
            if fuser.status() is _OPEN:
                return True
        return False

    def has_ready_optimization(self):
        return self.ready()

    cdef bint ready(self) except -1:
        for fuser in self.fusers:
            if fuser.properties().ready:
                return True
        return False

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
        cdef Py_ssize_t i
        if not len(other.operations) == len(other.ordering) == len(other.flows):
            raise ValueError("a block's operations and ordering differ in length")
        if not self.appendable(other):
            return False
        self_ready = self.ready()
        other_ready = other.ready()
        self.constituents |= other.constituents
        for i in range(len(other.operations)):
            self.register_op(other.operations[i], other.ordering[i], <_Flow>other.flows[i])
        if self.open_():
            return True
        return not self_ready and not other_ready and self.ready()

    def optimize(self, log=NO_LOG):
        """The block's best strategy: one fused optimization over a prefix of its ops, or all
        its ops unfused."""
        best = best_fuser(self.fusers)
        log_block(log, self, best)
        if best is None:
            ordering = tuple(self.ordering)
            return _BlockOptimization(_Operations(ordering), ordering)
        index, score = best
        opt = self.fusers[index].finish()
        ordering = tuple(self.ordering[: opt.len()])
        return _BlockOptimization(_Optimization(opt, ordering, score), ordering)

    def sorted_positions(self):
        """The positions it covers, ascending (burn compares blocks this way)."""
        return sorted(self.ordering)

    def __repr__(self):
        return f"Block(pos=[{self.start_pos}, {self.end_pos}; {len(self.ordering)}])"
