# cython: language_level=3
"""C-level declarations of fastplan.search.graph (used by block, merging, repair and search)."""


cdef class _Flow:
    cdef tuple produced  # ids the node outputs, in order
    cdef tuple read  # ids it reads (a ReadWrite read included), in order
    cdef tuple freed  # ids it reads ReadWrite (frees), in order
    cdef object produced_set  # frozenset(produced): membership (None until a Dag needs it)
    cdef object read_set  # frozenset(read): membership (None likewise)
    cdef tuple read_rw  # ops only: per entry of read, whether that use is ReadWrite
    cdef object encoded  # ops only: the op's relative.EncodedOp


cdef class Dag:
    cdef public list dependencies  # direct: bit j set when node i must run after node j
    cdef public list dependents  # the transpose
    cdef public list positions  # node.position() of each node
    cpdef object topological_order(self)
    cpdef bint is_acyclic(self) except -1
    cpdef Reachability reachability(self)


cdef class Reachability:
    cdef readonly tuple ancestors  # bit set of every transitive ancestor, per node
    cdef readonly tuple descendants  # bit set of every transitive descendant, per node
    cpdef bint can_contract(self, object a, object b) except -1


cdef list bits_of(object mask)
cdef _Flow _flow_of(object node)
cdef _Flow flow_new(tuple produced, tuple read, tuple freed)
cdef Dag dag_from(list flows, list positions)
cdef Dag dag_of_sets(list produced, list read, list freed, list positions)
cdef bint valid_order(object order) except -1
cdef bint valid_flows(list flows) except -1
