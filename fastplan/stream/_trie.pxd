# cython: language_level=3
"""C-level declarations of fastplan.stream._trie (used by cache)."""

from cpython.ref cimport PyObject

from fastplan._keys cimport KeyTable

cdef enum:
    TRIE_SCAN = 8  # children a trie node compares one by one before it indexes them


cdef class _Node:
    cdef tuple children  # (op key, node one op further, ...) of the first TRIE_SCAN (None: leaf)
    cdef KeyTable index  # op key -> node one op further, all of them past TRIE_SCAN (else None)
    cdef tuple ends  # ids of the plans whose ops end here, ascending (None: none ends here)
    cdef Py_ssize_t min_below  # least id of the plans ending strictly below (PY_SSIZE_T_MAX: none)
    cdef Py_ssize_t depth  # ops from the root


cdef _Node trie_child(_Node node, bytes key)
cdef _Node trie_child_at(_Node node, const char* data, Py_ssize_t size, PyObject** stored)
cdef tuple trie_children(_Node node)
cdef list trie_ids_below(_Node top, Py_ssize_t limit)
cdef int trie_add(_Node node, tuple keys, Py_ssize_t plan_id) except -1
