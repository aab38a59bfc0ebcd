# cython: language_level=3
"""The op table as typed C arrays, built at import from refimpl.ops.OPS.

Mirrors ``fastplan/_pure.py`` (same class, same columns, same encoding via ``encode_ops``), which in
turn reads refimpl/ops.py. fastplan never names an individual op: cores index these arrays with
``Op.code`` and test kinds through ``OpKindC``. The instance ``OP_TABLE`` is shared by passing
it, since a ``.pxd`` holds no data.
"""

from refimpl.ops import OPS, OpKind

from fastplan._pure import NO_FAMILY, encode_ops

__all__ = ["NO_FAMILY", "OpKindC", "OpTable", "OP_TABLE"]


cdef class OpTable:
    """The op table as columns indexed by ``Op.code``.

    Mirrors fastplan._pure.OpTable; here the columns are ``const uint8_t[::1]`` views.
    """

    def __init__(self, ops=OPS):
        # bytes are immutable: the const views below are the only way to the data
        self.kind, self.fuses, self.struct_code, self.family = encode_ops(ops)
        self.size = self.kind.shape[0]

    def __len__(self):
        return self.size

    def kind_of(self, Py_ssize_t code):
        """The ``OpKind`` of the op with this code; ``IndexError`` outside the table."""
        # explicit check: boundscheck is off outside debug builds
        if code < 0 or code >= self.size:
            raise IndexError(f"op code {code} out of range 0..{self.size - 1}")
        return OpKind(self.kind[code])


OP_TABLE = OpTable(OPS)
