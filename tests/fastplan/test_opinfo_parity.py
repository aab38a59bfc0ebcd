"""fastplan's op table equals refimpl.ops.OPS element by element, compiled or not."""

from __future__ import annotations

import pytest

import fastplan
from fastplan import _pure
from refimpl.dtypes import DTypeClass
from refimpl.ir import OP_IR_STRUCTS
from refimpl.ops import OPS, OpKind


def _compiled_opinfo():
    """The compiled module, or a skip when it is not built or deliberately not used."""
    if fastplan.NO_EXTENSIONS or not fastplan.COMPILED:
        pytest.skip("fastplan.opinfo is not compiled (tests/fastplan/test_compiled_loaded.py)")
    from fastplan import opinfo

    return opinfo


def _tables():
    """Every op table to check: the pure one always, the compiled one when it is loaded."""
    tables = [pytest.param(lambda: _pure.OP_TABLE, id="pure")]
    tables.append(pytest.param(lambda: _compiled_opinfo().OP_TABLE, id="compiled"))
    tables.append(pytest.param(lambda: fastplan.OP_TABLE, id="facade"))
    return tables


@pytest.fixture(params=_tables())
def table(request):
    return request.param()


def test_op_table_size_matches_ops(table):
    assert table.size == len(table) == len(OPS)
    for column in (table.kind, table.fuses, table.struct_code, table.family):
        assert len(column) == len(OPS)


def test_op_table_columns_match_ops(table):
    for op in OPS:
        i = op.code
        assert OpKind(table.kind[i]) is op.kind, op.name
        assert table.fuses[i] == (0 if op.fuse is None else 1), op.name
        assert OP_IR_STRUCTS[table.struct_code[i]] is op.struct, op.name
        family = None if table.family[i] == _pure.NO_FAMILY else tuple(DTypeClass)[table.family[i]]
        assert family is op.family, op.name


def test_op_table_kind_of_matches_ops(table):
    for op in OPS:
        kind = table.kind_of(op.code)
        assert type(kind) is OpKind
        assert kind is op.kind, op.name


@pytest.mark.parametrize("code", [-1, len(OPS), 2**31])
def test_op_table_kind_of_rejects_unknown_codes(table, code):
    with pytest.raises(IndexError, match="out of range"):
        table.kind_of(code)


def test_op_table_columns_are_read_only(table):
    with pytest.raises((TypeError, ValueError)):
        table.kind[0] = 1
    with pytest.raises(AttributeError):
        table.kind = b""


def test_op_table_rejects_ops_out_of_code_order(table):
    with pytest.raises(ValueError, match="has code"):
        type(table)(OPS[1:])


def test_op_table_builds_from_a_prefix(table):
    prefix = type(table)(OPS[:5])
    assert len(prefix) == 5
    assert [prefix.kind_of(i) for i in range(5)] == [op.kind for op in OPS[:5]]


def test_op_kind_c_matches_op_kind():
    opinfo = _compiled_opinfo()
    assert [m.name for m in opinfo.OpKindC] == [m.name for m in OpKind]
    for member in OpKind:
        assert int(opinfo.OpKindC[member.name]) == int(member), member.name
