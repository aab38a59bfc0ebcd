# cython: language_level=3
"""The prefix trie of a plan store's op keys: how fastplan finds burn's candidate plans.

burn counterpart: none of its own. It stands beside ``ExecutionPlanStore`` and the ``Policy``
of ``crates/burn-fusion/src/stream/{store/base.rs,execution/policy.rs}``, where every plan
stored under a segment's first op is a candidate, validated op by op
(``OperationsValidator``). fastplan.stream.cache walks this trie instead (its module docstring gives
the correspondence); refimpl/planner/stream/cache.py keeps burn's validators.

A node is a prefix of stored plans' op keys (``fastplan._keys``): the ids of the plans whose
ops end there, the nodes one op further, and the least id of the plans ending strictly below
it. Plan ids grow as plans are stored, so that least id is set once, by the first plan that
passes through the node.

``trie_child_at`` reads a node's children through borrowed pointers: a lookup writes no
reference count but that of the node it returns, so the children it compares stay clean in
the cache.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.ref cimport PyObject
from libc.string cimport memcmp

from fastplan._keys cimport KeySlot, KeyTable, _bytes_data, _tuple_item, _var_size, key_hash


@cython.no_gc  # holds tuples and KeyTables of keys, ids and nodes below it: never a cycle
cdef class _Node:
    """A prefix of stored plans' op keys: the plans ending here and the nodes one op further.

    Not tracked by the cyclic collector (a store of thousands of plans holds tens of thousands
    of nodes); the children sit in tuples, whose deallocation the interpreter keeps from
    recursing deeply, so freeing a very long plan's chain cannot overflow the C stack."""

    def __cinit__(self, Py_ssize_t depth):
        self.children = None
        self.index = None
        self.ends = None
        self.min_below = PY_SSIZE_T_MAX
        self.depth = depth


cdef _Node trie_child(_Node node, bytes key):
    """The node one op (``key``) below ``node``, or ``None`` (``trie_child_at``)."""
    cdef PyObject* stored
    return trie_child_at(node, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), &stored)


cdef _Node trie_child_at(_Node node, const char* data, Py_ssize_t size, PyObject** stored):
    """The node one op below ``node`` whose key is ``data[:size]``, or ``None``; ``stored``
    is then the trie's own ``bytes`` of that key (borrowed: the node holds it), which an
    encoding that found it uses instead of making another. Few children are compared one by
    one (a key is hashed only where many ops may follow, with ``key_hash``: a ``bytes``
    object's siphash costs several times that), by length and ``memcmp`` (the keys are exact
    ``bytes``: ``trie_add`` stores the store's). The children are read through borrowed
    pointers: a lookup writes no reference count but the found node's."""
    cdef PyObject* children = <PyObject*>node.children
    cdef const KeySlot* entry
    cdef PyObject* other
    cdef Py_ssize_t i, n
    if node.index is not None:
        entry = node.index.find_slot(data, size, key_hash(data, size))
        if entry == NULL:
            return None
        stored[0] = entry.key
        return <_Node>entry.value
    if children != <PyObject*>None:
        n = _var_size(children)
        for i in range(0, n, 2):
            other = _tuple_item(children, i)
            if _var_size(other) == size and memcmp(_bytes_data(other), data, <size_t>size) == 0:
                stored[0] = other
                return <_Node>_tuple_item(children, i + 1)
    return None


cdef tuple trie_children(_Node node):
    """The nodes one op below ``node``."""
    if node.index is not None:
        return tuple(node.index.values())
    return () if node.children is None else node.children[1::2]


cdef list trie_ids_below(_Node top, Py_ssize_t limit):
    """Ids below ``limit`` of the plans ending strictly below ``top`` (in no set order)."""
    cdef list ids = []
    cdef list pending = [top]
    cdef _Node node
    cdef Py_ssize_t plan_id
    while pending:
        for node in trie_children(<_Node>pending.pop()):
            for plan_id in node.ends or ():
                if plan_id < limit:
                    ids.append(plan_id)
            if node.min_below < limit:
                pending.append(node)
    return ids


cdef int _index_put(KeyTable index, bytes key, _Node child) except -1:
    cdef const char* data = PyBytes_AS_STRING(key)
    cdef Py_ssize_t size = PyBytes_GET_SIZE(key)
    return index.put(data, size, key_hash(data, size), key, child)


cdef int trie_add(_Node node, tuple keys, Py_ssize_t plan_id) except -1:
    """Record in the trie rooted at ``node`` that plan ``plan_id`` (the newest) has ``keys``."""
    cdef _Node child
    cdef Py_ssize_t i
    for key in keys:
        if node.min_below == PY_SSIZE_T_MAX:  # ids grow: the first plan below is the least
            node.min_below = plan_id
        child = trie_child(node, <bytes>key)
        if child is None:
            child = _Node(node.depth + 1)
            if node.index is not None:
                _index_put(node.index, <bytes>key, child)
            elif node.children is None:
                node.children = (key, child)
            elif len(node.children) < 2 * TRIE_SCAN:
                node.children = node.children + (key, child)
            else:  # one child too many to compare one by one
                node.index = KeyTable()
                for i in range(0, len(node.children), 2):
                    _index_put(node.index, <bytes>node.children[i], node.children[i + 1])
                _index_put(node.index, <bytes>key, child)
        node = child
    node.ends = (plan_id,) if node.ends is None else node.ends + (plan_id,)
    return 0
