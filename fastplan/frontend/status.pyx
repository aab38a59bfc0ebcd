# cython: language_level=3
"""Status inference for the compiled recorder: whether a use of a tensor is its last.

burn counterpart: ``FusionTensor::status`` (``crates/burn-fusion/src/tensor.rs``), as for
``refimpl/frontend/status.py``.
Mirrors ``refimpl/frontend/status.py``: the same rule (``ReadWrite`` only when no more than a
temporary's count holds the operand, its tensor has one handle and the op uses it once) and
the same calibration, measured on the same call paths.

Differs from refimpl: the counts are read by ``fastplan.frontend.session``'s compiled
``Session._record``, whose frame holds other references than refimpl's, so this module keeps
its own table of temporaries' counts, measured when that module is imported (``calibrate``,
given fastplan's session). ``cat``'s own count (``CAT_LIST``) is read by refimpl's ``cat``
and judged by refimpl's ``list_is_held``.
"""

from refimpl.frontend import status as _ref
from refimpl.frontend.status import (BINARY, CAT, CAT_LIST, COMPARE, METHOD, REFLECTED, UNARY,
                                     Operand)
from refimpl.ir import TensorStatus

__all__ = ["METHOD", "BINARY", "REFLECTED", "UNARY", "COMPARE", "CAT", "CAT_LIST", "Operand",
           "calibrate", "refcount_calibration"]

cdef object RO = TensorStatus.ReadOnly
cdef object RW = TensorStatus.ReadWrite
cdef dict _TEMPORARY = {}  # path -> a temporary's count (None: can't tell)
cdef dict _MEASURED = {}  # path -> (temporary, named) as measured


def refcount_calibration():
    """The (temporary, named) reference counts measured at import, by call path."""
    return dict(_MEASURED)


cdef list statuses(str path, list counts, list tensors, bint held):
    """The status of each operand of one op reached through ``path`` (refimpl's
    ``statuses``, with this module's counts)."""
    limit = _TEMPORARY.get(path)
    cdef Py_ssize_t n = len(tensors)
    if held or limit is None:
        return [RO] * n
    if n == 1:  # the common case: one operand is used once
        return [RW if counts[0] <= limit and tensors[0].handles == 1 else RO]
    cdef dict uses = {}
    for tensor in tensors:
        uses[tensor.id] = uses.get(tensor.id, 0) + 1
    return [RW if count <= limit and tensor.handles == 1 and uses[tensor.id] == 1 else RO
            for count, tensor in zip(counts, tensors)]


def calibrate(probe_session, cat):
    """Measure the temporary's count of every call path into this module's tables, by
    refimpl's procedure (its uses are Python code, as a caller's are)."""
    _ref.calibrate(probe_session, cat, _TEMPORARY, _MEASURED)
