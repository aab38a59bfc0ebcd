# cython: language_level=3
"""Inline helpers of fastplan.ingest.stream's scan: names matched by their bytes, and the
short decimals a stream's scalars mostly are, read without a call into CPython's dtoa."""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.stdint cimport int64_t
from libc.string cimport memcmp

cdef extern from *:
    """
    static const double fastplan_pow10[16] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
                                              1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
    """
    const double fastplan_pow10[16]  # every power of ten an exact double up to 1e15


cdef inline Py_ssize_t _position(const char* s, Py_ssize_t n, tuple names) noexcept:
    """The position in ``names`` (bytes) of the ``n`` bytes at ``s``; -1 if none."""
    cdef Py_ssize_t i
    cdef bytes name
    for i in range(len(names)):
        name = <bytes>names[i]
        if PyBytes_GET_SIZE(name) == n and memcmp(PyBytes_AS_STRING(name), s, n) == 0:
            return i
    return -1


cdef inline bint _short_decimal(const char* p, const char* end, double* out) noexcept:
    """A ``[-]digits.digits`` token (JSON's grammar, checked by the caller) of at most 15
    digits: its value, exactly as ``float(text)`` reads it (the digits and the power of ten are
    exact doubles, so one division rounds once, correctly); False for any other token."""
    cdef bint neg = p[0] == c'-'
    cdef int64_t m = 0
    cdef int digits = 0, frac = -1
    p += neg
    while p < end:
        if p[0] == c'.' and frac < 0:
            frac = 0
        elif c'0' <= p[0] <= c'9' and digits < 15:
            m = m * 10 + (p[0] - 48)
            digits += 1
            if frac >= 0:
                frac += 1
        else:
            return False
        p += 1
    if frac <= 0:
        return False
    out[0] = (-1.0 if neg else 1.0) * (<double>m / fastplan_pow10[frac])
    return True
