# cython: language_level=3
"""Shape rules the compiled readers and the compiled frontend share (header only).

burn counterpart: none; the typed twin of ``refimpl.shapes.broadcast_shapes`` for
``fastplan.ingest.validate`` and ``fastplan.frontend.session``, which check shapes without a
Python call per op.
"""


cdef inline object broadcast_pair(tuple a, tuple b):
    """``broadcast_shapes(a, b)`` (``None``: they do not broadcast); ``a`` itself when the
    two are equal."""
    cdef Py_ssize_t i, n = len(a)
    if len(b) != n:
        return None
    if a is b or a == b:
        return a
    out = []
    for i in range(n):
        x = a[i]
        y = b[i]
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)
