# cython: language_level=3
"""The dependency-graph toolkit the search uses: data-flow nodes, the block DAG, transitive
reachability (the merge guard) and the lifetime check of an execution order.

burn counterpart: ``crates/burn-fusion/src/search/graph/{node,dag,subgraph,lifetime}.rs``.
Mirrors ``refimpl/planner/search/graph.py``: same names, same order, same results.

Differs from refimpl:

* a node's data flow is read once per ``Dag`` (``produced()``, ``read()``, ``freed()`` and
  ``position()``); ``produces``/``reads`` are answered by membership in those tuples, which is
  what the ``GraphNode`` protocol says they are;
* ``bits`` refuses a negative mask (``ValueError``): refimpl's loop would never end on one;
* ``dag_of_sets`` builds a ``Dag`` over nodes given as dicts of ids (the repair's chunks):
  the same edges as over their flows, membership read in the dicts themselves; a flow's
  frozensets are made by ``PyFrozenSet_New``, not by a call of the type.

``GraphNode`` (a ``Protocol``) and ``TestNode`` (a plain test node) are refimpl's classes.
Bit sets are Python ``int``s, as in refimpl, so any number of nodes works.
"""

import heapq

cimport cython

from cpython.long cimport PyLong_Check
from cpython.set cimport PyFrozenSet_New

from fastplan._keys cimport exact_long_long
from fastplan._vec cimport mem_calloc, mem_free

from refimpl.planner.search.graph import GraphNode, TestNode

__all__ = [
    "GraphNode",
    "TestNode",
    "bits",
    "Dag",
    "Reachability",
    "depends_on",
    "is_valid_execution_order",
]

cdef object _ONE = 1  # a Python int: bit sets grow past 64 bits

_heappush = heapq.heappush
_heappop = heapq.heappop
_heapify = heapq.heapify


cdef list bits_of(object mask):
    """The set bits of a non-negative ``int``, ascending."""
    cdef list found = []
    cdef unsigned long long word
    cdef int shift = 0
    if mask < 0:
        raise ValueError(f"a bit set is a non-negative int, not {mask}")
    while mask:
        word = mask & 0xFFFFFFFFFFFFFFFF
        while word:
            found.append(shift + _ctz(word))
            word &= word - 1
        mask >>= 64
        shift += 64
    return found


cdef extern from *:
    """
    static int fastplan_ctz64(unsigned long long w) {
    #if defined(__GNUC__) || defined(__clang__)
        return __builtin_ctzll(w);
    #else
        int n = 0;
        while (!(w & 1ULL)) { w >>= 1; n++; }
        return n;
    #endif
    }
    """
    int _ctz "fastplan_ctz64"(unsigned long long w) noexcept nogil


def bits(mask):
    """The node indices of a bit set, ascending.

    Mirrors refimpl.planner.search.graph.bits.

    >>> bits(0b10110)
    [1, 2, 4]
    """
    if not PyLong_Check(mask):
        raise TypeError(f"a bit set is an int, not {type(mask).__name__}")
    return bits_of(mask)


@cython.freelist(64)  # made and dropped by the thousand per search
cdef class _Flow:
    """One node's data flow, read once: tuples for order, frozensets for membership."""


cdef _Flow flow_new(tuple produced, tuple read, tuple freed):
    cdef _Flow flow = _Flow.__new__(_Flow)
    flow.produced = produced
    flow.read = read
    flow.freed = freed
    flow.produced_set = PyFrozenSet_New(produced)
    flow.read_set = PyFrozenSet_New(read)
    return flow


cdef _Flow _flow_of(object node):
    return flow_new(tuple(node.produced()), tuple(node.read()), tuple(node.freed()))


cdef bint _depends(_Flow node, _Flow other) except -1:
    for resource in node.read:
        if resource in other.produced_set:
            return True
    for resource in node.freed:
        if resource in other.read_set:
            return True
    return False


def depends_on(node, other):
    """Whether ``node`` must run after ``other`` (read-after-write or write-after-read).

    Mirrors refimpl.planner.search.graph.depends_on.
    """
    for resource in node.read():
        if other.produces(resource):
            return True
    for resource in node.freed():
        if other.reads(resource):
            return True
    return False


cdef class Dag:
    """The dependency graph of a fixed list of nodes (burn ``Dag``); it may hold a cycle,
    which ``topological_order`` reports as ``None``.

    Mirrors refimpl.planner.search.graph.Dag.
    """

    def __init__(self, nodes):
        _build(self, [_flow_of(node) for node in nodes], [node.position() for node in nodes])

    def __len__(self):
        return len(self.dependencies)

    def depends_on(self, i, j):
        """Whether node ``i`` directly depends on node ``j``."""
        return bool(self.dependencies[i] >> j & 1)

    cpdef object topological_order(self):
        """Dependencies first; ties by smallest ``(position, index)``; ``None`` on a cycle."""
        cdef Py_ssize_t i, count = len(self.dependencies)
        cdef list pending = [mask.bit_count() for mask in self.dependencies]
        cdef list ready = [(self.positions[i], i) for i in range(count) if pending[i] == 0]
        cdef list order = []
        _heapify(ready)
        while ready:
            _, i = _heappop(ready)
            order.append(i)
            for dependent in bits_of(self.dependents[i]):
                pending[dependent] -= 1
                if pending[dependent] == 0:
                    _heappush(ready, (self.positions[dependent], dependent))
        return order if len(order) == count else None

    cpdef bint is_acyclic(self) except -1:
        return self.topological_order() is not None

    cpdef Reachability reachability(self):
        """Transitive ancestors and descendants of every node."""
        cdef Py_ssize_t i, count = len(self.dependencies)
        cdef list ancestors = list(self.dependencies)
        cdef list descendants
        order = self.topological_order()
        if order is not None:
            for i in order:
                for j in bits_of(self.dependencies[i]):
                    ancestors[i] |= ancestors[j]
        else:
            _relax_to_fixpoint(ancestors, self.dependencies)
        descendants = [0] * count
        for i in range(count):
            for j in bits_of(ancestors[i]):
                descendants[j] |= _ONE << i
        return Reachability(tuple(ancestors), tuple(descendants))


cdef int _build(Dag dag, list flows, list positions) except -1:
    cdef Py_ssize_t i, j, count = len(flows)
    cdef _Flow flow
    for flow in flows:  # an op's flow (block.op_flow) comes without its membership sets
        if flow.produced_set is None:
            flow.produced_set = PyFrozenSet_New(flow.produced)
            flow.read_set = PyFrozenSet_New(flow.read)
    dag.dependencies = [0] * count
    dag.dependents = [0] * count
    for i in range(count):
        for j in range(count):
            if i != j and _depends(<_Flow>flows[i], <_Flow>flows[j]):
                dag.dependencies[i] |= _ONE << j
                dag.dependents[j] |= _ONE << i
    dag.positions = positions
    return 0


cdef Dag dag_from(list flows, list positions):
    """A ``Dag`` over nodes already read into flows (``positions``: their positions)."""
    cdef Dag dag = Dag.__new__(Dag)
    _build(dag, flows, positions)
    return dag


cdef Dag dag_of_sets(list produced, list read, list freed, list positions):
    """A ``Dag`` over nodes given as dicts of ids (insertion-ordered sets: ``produced``,
    ``read`` and ``freed`` of node ``i`` at index ``i``): the edges ``_build`` finds, with
    membership in the dicts themselves (no tuples nor frozensets made per node)."""
    cdef Dag dag = Dag.__new__(Dag)
    cdef Py_ssize_t i, j, count = len(positions)
    cdef dict node_read, node_freed, other_produced, other_read
    cdef bint depends
    if not len(produced) == len(read) == len(freed) == count:
        raise ValueError("a node's id sets and positions differ in number")
    dag.dependencies = [0] * count
    dag.dependents = [0] * count
    for i in range(count):
        node_read, node_freed = <dict?>read[i], <dict?>freed[i]
        for j in range(count):
            if i == j:
                continue
            other_produced, other_read = <dict?>produced[j], <dict?>read[j]
            depends = False
            for resource in node_read:
                if resource in other_produced:
                    depends = True
                    break
            if not depends:
                for resource in node_freed:
                    if resource in other_read:
                        depends = True
                        break
            if depends:
                dag.dependencies[i] |= _ONE << j
                dag.dependents[j] |= _ONE << i
    dag.positions = positions
    return dag


cdef void _relax_to_fixpoint(list ancestors, list dependencies) except *:
    """On a cyclic graph no linear pass exists: union along direct edges until stable."""
    cdef bint changed = True
    cdef Py_ssize_t i
    while changed:
        changed = False
        for i in range(len(ancestors)):
            before = ancestors[i]
            for j in bits_of(dependencies[i]):
                ancestors[i] |= ancestors[j]
            changed = changed or ancestors[i] != before


cdef class Reachability:
    """Transitive reachability over a ``Dag`` (burn ``Reachability``): the merge guard.

    Mirrors refimpl.planner.search.graph.Reachability.
    """

    def __init__(self, ancestors, descendants):
        self.ancestors = tuple(ancestors)
        self.descendants = tuple(descendants)

    def __eq__(self, other):
        if type(other) is not Reachability:
            return NotImplemented
        return (self.ancestors, self.descendants) == \
            ((<Reachability>other).ancestors, (<Reachability>other).descendants)

    def __hash__(self):
        return hash((self.ancestors, self.descendants))

    def __repr__(self):
        return f"Reachability(ancestors={self.ancestors!r}, descendants={self.descendants!r})"

    cpdef bint can_contract(self, object a, object b) except -1:
        """Whether contracting subgraphs ``a`` and ``b`` into one node keeps the graph
        acyclic: no node outside ``a | b`` may be both an ancestor and a descendant of it."""
        if a == 0 or b == 0:
            return False
        union = a | b
        above = 0
        below = 0
        for i in bits_of(union):
            above |= self.ancestors[i]
            below |= self.descendants[i]
        return (above & below & ~union) == 0


cdef bint valid_order(object order) except -1:
    """``is_valid_execution_order`` (see there)."""
    return valid_flows([_flow_of(node) for node in order])


# Per-id state of the array walk in ``valid_flows``.
cdef enum:
    _PRODUCED_HERE = 1
    _ALIVE = 2
    _DEAD = 4

# Ids at or above this (or below 0, or not exactly ``int``) take the set walk instead.
cdef long long _ID_LIMIT = 1 << 20


cdef long long _top_id(tuple ids, long long top) except -3:
    """The largest of ``top`` and ``ids``; -2 if an id is not a small non-negative int."""
    cdef Py_ssize_t i
    cdef long long value
    for i in range(len(ids)):
        if not exact_long_long(ids[i], &value) or value < 0 or value >= _ID_LIMIT:
            return -2
        if value > top:
            top = value
    return top


cdef bint valid_flows(list flows) except -1:
    """``is_valid_execution_order`` over nodes already read into flows: the walk below on a
    byte per id (relative ids are small positions), or on sets for any other ids."""
    cdef _Flow flow
    cdef long long top = -1
    cdef unsigned char* state
    cdef Py_ssize_t i
    cdef long long tid
    cdef unsigned char s
    for flow in flows:
        top = _top_id(flow.produced, top)
        if top >= -1:
            top = _top_id(flow.read, top)
        if top >= -1:
            top = _top_id(flow.freed, top)
        if top < -1:
            return _valid_flows_sets(flows)
    state = <unsigned char*>mem_calloc(top + 2, 1)
    if state == NULL:
        raise MemoryError()
    try:
        for flow in flows:
            for i in range(len(flow.produced)):
                state[<long long>flow.produced[i]] |= _PRODUCED_HERE
        for flow in flows:
            for i in range(len(flow.read)):
                tid = flow.read[i]
                s = state[tid]
                if s & _DEAD:
                    return False
                if not s & _ALIVE:
                    if s & _PRODUCED_HERE:
                        return False
                    state[tid] = s | _ALIVE
            for i in range(len(flow.freed)):
                tid = flow.freed[i]
                state[tid] = (state[tid] & ~_ALIVE) | _DEAD
            for i in range(len(flow.produced)):
                tid = flow.produced[i]
                state[tid] = (state[tid] & ~_DEAD) | _ALIVE
        return True
    finally:
        mem_free(state)


cdef bint _valid_flows_sets(list flows) except -1:
    """``valid_flows`` on Python sets (any hashable ids)."""
    cdef set produced_here = set()
    cdef set alive = set()
    cdef set dead = set()
    cdef _Flow flow
    for flow in flows:
        produced_here.update(flow.produced)
    for flow in flows:
        for resource in flow.read:
            if resource in dead:
                return False
            if resource not in alive:
                if resource in produced_here:
                    return False
                alive.add(resource)
        for resource in flow.freed:
            alive.discard(resource)
            dead.add(resource)
        for resource in flow.produced:
            dead.discard(resource)
            alive.add(resource)
    return True


def is_valid_execution_order(order):
    """Whether running ``order`` keeps every read resource live: no read after a free, no
    read of a resource some ordered node produces before that node ran.

    Mirrors refimpl.planner.search.graph.is_valid_execution_order.
    """
    return valid_order(order)
