"""Deterministic garbage for the planners: input ``i`` of a fuzz run is a function of the seed
and ``i`` only.

burn counterpart: none (the input generator of ``tools/fuzz_planners.py``).

``make_input(seed, index, pool)`` seeds a ``random.Random`` with both, picks a generator of
``GENERATORS`` (by weight) and a device preset, and lets the generator work on the run's
``Pool``: valid streams built once per run by ``build_pool`` (the golden corpus, test_boundary's
edge streams, ``Session`` recordings of ``RECIPES``, streams hypothesis draws from
``refimpl.strategies.streams`` under the run's seed), their JSON and the bad-input catalogue's
(``tests/refimpl/test_bad_input.py``) fuzz bases:

* ``json-garbage`` — a pool text, one to three entries anywhere replaced, deleted or added
  (test_bad_input's ``_mutate``, driven by ``random``): mostly refused by the loader;
* ``json-semantic`` — a pool text with one to four well-typed but wrong changes: ids, shapes
  (negative, zero, huge, another rank), dtypes, statuses, ints, scalars, op names, input shapes;
  ops deleted, duplicated, swapped, cut off, syncs and drops inserted (test_boundary's
  ``_semantic_mutation``, widened);
* ``py-typed`` — a pool stream whose objects get values of the right type but any value (another
  ``DType``, an id at the 64-bit edge, a rank-6 shape, an op of the same struct, ...);
* ``py-garbage`` — a pool stream with an item, an operand field, a tensor field or an input
  replaced by anything (None, str, float, huge int, nested tuple, a wrong dataclass;
  test_boundary's ``_replace_somewhere``), or a typed change;
* ``wide`` — ids and dimensions past CPython's small-int cache (the ints -5..256 are shared
  objects, so a reference count handled wrongly on one of them does no harm and shows nowhere):
  a pool stream with every tensor id moved past 256 (from one offset, or scattered), or one
  segment of ``WIDE_CHAINS`` independent chains on rank-4 tensors whose dimensions are distinct
  and past 256 (over 256 relative shape ids), with large ids too;
* ``catalogue`` / ``valid`` — a catalogue entry (JSON or Python form), a pool stream as it is.

The mutators mirror the hypothesis-driven ones of the tests (which draw from a hypothesis
``data`` object and cannot run on a plain ``random.Random``); the data they start from (fuzz
bases, catalogues, edge streams, ``_tensors_in``) is imported from those tests.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from refimpl.devices import PRESETS
from refimpl.dtypes import DType
from refimpl.frontend import Session
from refimpl.ir import FieldKind, OperationIr, Sync, TensorIr, TensorStatus, UnaryOpIr
from refimpl.ops import OPS, op_named
from refimpl.stream import InputSpec, Stream, load_stream, stream_to_json
from tests.fastplan.test_boundary import EDGE_STREAMS, _tensors_in
from tests.refimpl.helpers import BASES, CATALOGUE, PY_CATALOGUE, as_source

__all__ = ["DEVICES", "GENERATORS", "POOL_DRAWS", "POOL_MAX_ITEMS", "RECIPES", "SMALL_INTS", "WIDE_CHAINS",
           "FuzzInput", "Pool", "build_pool", "make_input"]

ROOT = Path(__file__).resolve().parent.parent
POOL_MAX_ITEMS = 16  # refimpl plans one of 16 items in about 10 ms, one of 100 in 100 ms
POOL_DRAWS = 200  # streams hypothesis draws for the pool
RECIPE_VARIANTS = 4  # recordings of each recipe (shapes differ)
SMALL_INTS = 256  # CPython's cached ints end here: past it every int is an object of its own
WIDE_CHAINS = 65  # rank-4 inputs of distinct dimensions: 260 > SMALL_INTS shape ids in one segment
DEVICES = tuple(PRESETS)

# --- the pool of valid streams -------------------------------------------------------------


@dataclass(frozen=True)
class Pool:
    """Valid streams to mutate, and JSON texts (theirs, then the catalogue's fuzz bases)."""

    streams: tuple[Stream, ...]
    texts: tuple[str, ...]


def _softmax(s: Session, rng: random.Random) -> None:
    x = s.random((rng.choice((1, 2, 4)), rng.choice((3, 8, 32))), seed=rng.randrange(99))
    e = (x - x.max_dim(1)).exp()
    s.sync(e / e.sum_dim(1))


def _layer_norm(s: Session, rng: random.Random) -> None:
    rows, cols = rng.choice((1, 4, 6)), rng.choice((4, 8, 16))
    x, gain = s.random((rows, cols), seed=1), s.random((1, cols), seed=2)
    centred = x - x.mean_dim(1)
    s.sync(centred / ((centred * centred).mean_dim(1) + 1e-5).sqrt() * gain)


def _mlp(s: Session, rng: random.Random) -> None:
    n, k, m = rng.choice((1, 4)), rng.choice((4, 8)), rng.choice((2, 6))
    x, w, b = s.random((n, k), seed=3), s.random((k, m), seed=4), s.random((1, m), seed=5)
    h = (x @ w + b).tanh()
    s.sync(h.clamp_min(0.0) * 0.5 + h.erf())


def _views(s: Session, rng: random.Random) -> None:
    a, b = rng.choice((2, 4)), rng.choice((3, 6))
    x = s.random((a, b), seed=6)
    y = x.transpose().reshape((b * a,)).reshape((b, a)).swap_dims(0, 1)
    z = s.cat([y.slice([(0, 1), (0, b)]), x.flip([1])], 0)
    s.sync(z.exp(), x.expand((2, a, b)).log())


def _indexing(s: Session, rng: random.Random) -> None:
    rows = rng.choice((2, 4))
    x = s.random((rows, 6), seed=7)
    picked = x.select(0, s.tensor([0, rows - 1], dtype="i32"))
    gathered = x.gather(1, s.tensor([[1, 0]] * rows, dtype="i64"))
    s.sync(picked.mask_fill(picked > 0.5, 0.0), gathered.mask_where(gathered < 0.0, gathered * 2))


def _pooling(s: Session, rng: random.Random) -> None:
    x = s.random((1, rng.choice((1, 2)), 4, rng.choice((4, 6))), seed=8)
    y = x.max_pool2d(2, 1).exp() + x.avg_pool2d(2, 1)
    s.sync(y.adaptive_avg_pool2d(1), x.interpolate((8, 8), rng.choice(("nearest", "bilinear"))))


def _ints(s: Session, rng: random.Random) -> None:
    x = s.random((rng.choice((2, 3)), 4), "i32", seed=9)
    y = ((x * 3 + 1) % 5) & 6
    s.sync(y.argmax(1), (y >= 2).int().float().sum(), x.cast("i64").max_dim(0))


def _inplace(s: Session, rng: random.Random) -> None:
    x = s.random((4, rng.choice((4, 8))), seed=10)
    for _ in range(rng.randrange(1, 4)):
        x = x.move() * 2.0 + 1.0
    s.sync(x.move().sum_dim(0).exp())


RECIPES = (_softmax, _layer_norm, _mlp, _views, _indexing, _pooling, _ints, _inplace)


def _recorded(recipe: Callable[[Session, random.Random], None], rng: random.Random) -> Stream:
    session = Session(executor=None)
    recipe(session, rng)
    return session.close()


def _drawn(seed: int, count: int) -> list[Stream]:
    """``count`` streams hypothesis draws from ``refimpl.strategies.streams`` with ``seed``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as fixed_seed

    from refimpl.strategies import streams

    drawn: list[Stream] = []

    @fixed_seed(seed)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(streams(max_ops=8))
    def collect(stream: Stream) -> None:
        drawn.append(stream)

    if count:
        collect()
    return drawn


def build_pool(seed: int, draws: int = POOL_DRAWS, max_items: int = POOL_MAX_ITEMS) -> Pool:
    """The run's pool: the same for the same arguments. Streams of more than ``max_items``
    items are left out (refimpl's planning time grows with them: they set the pace)."""
    rng = random.Random(seed)
    found = [load_stream(path) for path in sorted((ROOT / "tests/golden/streams").glob("*.json"))]
    found += [EDGE_STREAMS[name] for name in sorted(EDGE_STREAMS)]
    found += [_recorded(recipe, rng) for recipe in RECIPES for _ in range(RECIPE_VARIANTS)]
    found += _drawn(seed, draws)
    streams = tuple(s for s in found if len(s.items) <= max_items)
    return Pool(streams, tuple(stream_to_json(s) for s in streams)
                + tuple(json.dumps(base) for base in BASES))


# --- values ------------------------------------------------------------------------------------

_DIMS = (-2, -1, 0, 1, 1, 2, 3, 4, 6, 8, 2**31, 2**40, 2**62)
_RANKS = (0, 1, 2, 2, 3, 3, 4, 5, 6)
_IDS = tuple(range(14)) + (2**63 - 1, 2**64 - 1)
_INTS = (-3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 2**31, 2**62)
_SCALARS = (0, 1, -1, 2, 300, 0.5, -2.5, 1e-3, 1e300, 2**31, 2**63, True, False)
_TEXTS = ("nearest", "bilinear", "bicubic", "cubic", "")
_EDGE_INTS = (-1, -(2**63), 2**63 - 1, 2**63, 2**64 - 1, 2**64, True)  # python objects only
_JSON_LEAVES = (None, True, False, -3, -1, 0, 1, 2, 7, 2**31, 2**64, 2**65, 0.5, -0.0, 1e308,
                "", "a", "0", "f32", "i32", "bool", "ReadWrite", "NotInit", "Sync", "Drop",
                "NumericFloat.Add", "BaseFloat.Cat")
_JSON_KEYS = ("", "id", "shape", "dtype", "status", "op", "out", "tensors", "axis", "dim", "x")
_F32, _RO, _RW, _NEW = DType.F32, TensorStatus.ReadOnly, TensorStatus.ReadWrite, TensorStatus.NotInit
_GARBAGE = (None, True, False, 0, -1, 7, 2**63, 2**64, -(2**70), 2**70, 0.5, float("nan"),
            float("inf"), "", "a", "f32", "NotInit", "Float.Exp", (), (0,), (0, 1), ((0, 1),),
            ((1, 2), 3), [0, 1], [], {}, {"id": 0}, b"\x00", 1 + 2j, frozenset({1}),
            DType.F32, DType.BOOL, TensorStatus.ReadWrite, TensorStatus.NotInit,
            op_named("Float.Exp"), Sync((0,)), Sync(()), InputSpec((4, 6), _F32, random=0),
            TensorIr(0, (4, 6), _F32, _RO), TensorIr("0", [4, 6], "f32", "RO"),
            UnaryOpIr(TensorIr(0, (4, 6), _F32, _RO), TensorIr(9, (4, 6), _F32, _NEW)))
_OP_NAMES = tuple(op.name for op in OPS)
_SAME_STRUCT: dict[type, tuple] = {}
for _op in OPS:
    _SAME_STRUCT[_op.struct] = _SAME_STRUCT.get(_op.struct, ()) + (_op,)


def _shape(rng: random.Random, shape: list | tuple) -> list:
    """Near the old shape (one dim changed, dropped or added) or any shape at all."""
    new = list(shape) if isinstance(shape, tuple | list) else []
    roll = rng.randrange(4)
    if roll == 0 or not new:
        return [rng.choice(_DIMS) for _ in range(rng.choice(_RANKS))]
    at = rng.randrange(len(new))
    if roll == 1:
        del new[at]
    elif roll == 2:
        new.insert(at, rng.choice(_DIMS))
    else:
        new[at] = rng.choice(_DIMS)
    return new


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 2 and roll < 0.15:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 2 and roll < 0.25:
        return {rng.choice(_JSON_KEYS): _json_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return rng.choice(_JSON_LEAVES)


# --- JSON mutations ----------------------------------------------------------------------------


def _mutate_json(node: Any, rng: random.Random) -> None:
    """Replace, delete or add one entry somewhere in the JSON value (test_bad_input's
    ``_mutate``)."""
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return
        key = rng.choice(keys)
        if isinstance(node[key], dict | list) and node[key] and rng.randrange(5):
            node = node[key]
            continue
        action = rng.randrange(3)
        if action == 0:
            node[key] = _json_value(rng)
        elif action == 1:
            del node[key]
        elif isinstance(node, dict):
            node[rng.choice(_JSON_KEYS)] = _json_value(rng)
        else:
            node.append(_json_value(rng))
        return


def _entry_value(rng: random.Random, value: Any) -> Any:
    """A well-typed but likely wrong JSON value for an op's non-tensor field."""
    if isinstance(value, str):
        return rng.choice(_TEXTS)
    if isinstance(value, list):
        if value and isinstance(value[0], list):
            return [[rng.choice(_INTS), rng.choice(_INTS)] for _ in range(rng.randrange(4))]
        return [rng.choice(_INTS) for _ in range(rng.randrange(5))]
    if isinstance(value, int) and not isinstance(value, bool):
        return rng.choice(_INTS)
    return rng.choice(_SCALARS)


def _json_tensor_change(doc: dict, entry: dict, rng: random.Random) -> None:
    tensors = _tensors_in(entry)
    if tensors:
        tensor, field = rng.choice(tensors), rng.choice(("id", "id", "shape", "dtype", "status"))
        tensor[field] = {"id": lambda: rng.choice(_IDS),
                         "shape": lambda: _shape(rng, tensor["shape"]),
                         "dtype": lambda: rng.choice([d.value for d in DType]),
                         "status": lambda: rng.choice([s.value for s in TensorStatus])}[field]()


def _json_entry_change(doc: dict, entry: dict, rng: random.Random) -> None:
    if "op" not in entry or entry["op"] == "Sync":
        entry["tensors"] = [rng.choice(_IDS) for _ in range(rng.randrange(4))]
    elif rng.randrange(3) == 0:
        same = _SAME_STRUCT.get(op_named(entry["op"]).struct, ())
        entry["op"] = rng.choice(same).name if same and rng.randrange(5) else rng.choice(_OP_NAMES)
    else:
        keys = [k for k, v in entry.items() if k != "op" and not _tensors_in(v)]
        if keys:
            key = rng.choice(keys)
            entry[key] = _entry_value(rng, entry[key])


def _json_stream_change(doc: dict, entry: dict, rng: random.Random) -> None:
    ops, at = doc["ops"], doc["ops"].index(entry)
    action = rng.choice(("delete", "duplicate", "swap", "sync", "drop", "truncate", "input"))
    if action == "delete":
        del ops[at]
    elif action == "duplicate":
        ops.insert(at, json.loads(json.dumps(entry)))
    elif action == "swap":
        other = rng.randrange(len(ops))
        ops[at], ops[other] = ops[other], ops[at]
    elif action == "sync":
        ops.insert(at, {"op": "Sync", "tensors": sorted({rng.choice(_IDS[:14]) for _ in "ab"})})
    elif action == "drop" and _tensors_in(entry):
        tensor = dict(rng.choice(_tensors_in(entry)), status="ReadWrite")
        ops.insert(at + rng.randrange(2), {"op": "Drop", "tensor": tensor})
    elif action == "truncate":
        del ops[rng.randrange(len(ops) + 1):]
    elif doc.get("inputs"):
        spec = doc["inputs"][rng.choice(sorted(doc["inputs"]))]
        if rng.randrange(2):
            spec["shape"] = _shape(rng, spec["shape"])
        else:
            spec["strides"] = _strides(rng, spec["shape"])


_JSON_CHANGES = (_json_tensor_change,) * 5 + (_json_entry_change,) * 2 + (_json_stream_change,) * 3


def _semantic_json(doc: dict, rng: random.Random) -> None:
    """One well-typed but (likely) wrong change (test_boundary's ``_semantic_mutation``)."""
    if not doc.get("ops") or not isinstance(doc["ops"], list):
        doc["ops"] = [{"op": "Sync", "tensors": []}]
        return
    rng.choice(_JSON_CHANGES)(doc, rng.choice(doc["ops"]), rng)


# --- Python-object mutations -------------------------------------------------------------------


def _rebuilt(obj: Any, name: str, value: Any) -> Any:
    """``obj`` (a frozen dataclass) with field ``name`` set to ``value``, no checks run."""
    new = object.__new__(type(obj))
    for f in fields(obj):
        object.__setattr__(new, f.name, value if f.name == name else getattr(obj, f.name))
    return new


def _typed_tensor(rng: random.Random, tensor: Any) -> Any:
    if not isinstance(tensor, TensorIr):
        return tensor
    field = rng.choice(("id", "id", "shape", "dtype", "status"))
    value = {"id": lambda: rng.choice(_IDS + _EDGE_INTS),
             "shape": lambda: tuple(_shape(rng, tensor.shape) if rng.randrange(4)
                                    else (rng.choice(_EDGE_INTS),)),
             "dtype": lambda: rng.choice(tuple(DType)),
             "status": lambda: rng.choice(tuple(TensorStatus))}[field]()
    return _rebuilt(tensor, field, value)


def _typed_tensors(rng: random.Random, value: Any) -> Any:
    if not isinstance(value, tuple) or not value:
        return value
    at, parts, action = rng.randrange(len(value)), list(value), rng.randrange(4)
    if action == 0:
        del parts[at]
    elif action == 1:
        parts.insert(at, value[at])
    else:
        parts[at] = _typed_tensor(rng, value[at])
    return tuple(parts)


# FieldKind -> a value of the right Python type for such a field (the old value given)
_TYPED: dict[FieldKind, Callable[[random.Random, Any], Any]] = {
    FieldKind.TENSOR: _typed_tensor,
    FieldKind.TENSORS: _typed_tensors,
    FieldKind.INT: lambda rng, old: rng.choice(_INTS + _EDGE_INTS),
    FieldKind.INTS: lambda rng, old: tuple(rng.choice(_INTS) for _ in range(rng.randrange(6))),
    FieldKind.RANGES: lambda rng, old: tuple((rng.choice(_INTS), rng.choice(_INTS))
                                             for _ in range(rng.randrange(4))),
    FieldKind.SCALAR: lambda rng, old: rng.choice(_SCALARS + _EDGE_INTS + (float("nan"),)),
    FieldKind.BOOL: lambda rng, old: rng.choice((True, False, 0, 1)),
    FieldKind.TEXT: lambda rng, old: rng.choice(_TEXTS),
}


def _garbage_field(rng: random.Random, kind: FieldKind, value: Any) -> Any:
    if isinstance(value, TensorIr) and rng.randrange(2):
        return _rebuilt(value, rng.choice(("id", "shape", "dtype", "status")), rng.choice(_GARBAGE))
    return rng.choice(_GARBAGE)


def _change_input(rng: random.Random, inputs: dict, typed: bool) -> None:
    key = rng.choice(sorted(inputs)) if inputs and rng.randrange(3) else rng.choice(_IDS)
    spec = inputs.get(key)
    if not typed:
        inputs[key] = rng.choice(_GARBAGE)
        return
    spec = spec if isinstance(spec, InputSpec) else InputSpec((4, 6), _F32, random=0)
    field = rng.choice(("shape", "shape", "strides", "dtype"))
    inputs[key] = _rebuilt(spec, field, {
        "shape": lambda: tuple(_shape(rng, spec.shape)),
        "strides": lambda: _strides(rng, spec.shape),
        "dtype": lambda: rng.choice(tuple(DType))}[field]())


def _strides(rng: random.Random, shape: Any) -> tuple[int, ...] | None:
    """None, or strides for about ``shape``'s rank (one more, one less, or as many)."""
    rank = len(shape) if isinstance(shape, tuple | list) else 2
    if rng.randrange(5) == 0:
        return None
    return tuple(rng.choice(_INTS) for _ in range(max(rank + rng.choice((-1, 0, 0, 1)), 0)))


def _change_item(rng: random.Random, items: list, at: int, typed: bool) -> None:
    item = items[at]
    if not isinstance(item, OperationIr):
        items[at] = (Sync(tuple(rng.choice(_IDS + _EDGE_INTS) for _ in range(rng.randrange(3))))
                     if typed else rng.choice(_GARBAGE))
    elif rng.randrange(8) == 0:
        items[at] = (OperationIr(rng.choice(_SAME_STRUCT[item.op.struct]), item.desc) if typed
                     else rng.choice(_GARBAGE))
    else:
        name, kind = rng.choice(item.desc.SCHEMA)
        old = getattr(item.desc, name)
        value = _TYPED[kind](rng, old) if typed else _garbage_field(rng, kind, old)
        items[at] = OperationIr(item.op, _rebuilt(item.desc, name, value))


def _reorder_item(rng: random.Random, items: list, at: int, typed: bool) -> None:
    """Delete the item, repeat it, or put a sync before it."""
    items[at:at + 1] = rng.choice(([], [items[at]] * 2, [Sync((rng.choice(_IDS[:14]),)),
                                                         items[at]]))


def _cut_items(rng: random.Random, items: list, at: int, typed: bool) -> None:
    del items[at:]


_ITEM_CHANGES = (_reorder_item, _cut_items) + (_change_item,) * 8


def _object_change(rng: random.Random, stream: Stream, typed: bool) -> Stream:
    """``stream`` with one input, item, op, operand field or tensor field changed: to a value
    of the right type (``typed``) or to anything."""
    items, inputs = list(stream.items), dict(stream.inputs)
    if not items or rng.randrange(10) == 0:
        _change_input(rng, inputs, typed)
    else:
        rng.choice(_ITEM_CHANGES)(rng, items, rng.randrange(len(items)), typed)
    return Stream(inputs, tuple(items))


# --- generators --------------------------------------------------------------------------------


def _json_garbage(rng: random.Random, pool: Pool) -> str:
    doc = json.loads(rng.choice(pool.texts))
    for _ in range(rng.randint(1, 3)):
        _mutate_json(doc, rng)
    return json.dumps(doc)


def _json_semantic(rng: random.Random, pool: Pool) -> str:
    doc = json.loads(rng.choice(pool.texts))
    for _ in range(rng.randint(1, 4)):
        _semantic_json(doc, rng)
    return json.dumps(doc)


def _py_typed(rng: random.Random, pool: Pool) -> Stream:
    stream = rng.choice(pool.streams)
    for _ in range(rng.randint(1, 3)):
        stream = _object_change(rng, stream, typed=True)
    return stream


def _py_garbage(rng: random.Random, pool: Pool) -> Stream:
    stream = rng.choice(pool.streams)
    for _ in range(rng.randint(1, 2)):
        stream = _object_change(rng, stream, typed=rng.randrange(2) == 0)
    return stream


def _catalogue(rng: random.Random, pool: Pool) -> Any:
    if rng.randrange(4):
        return as_source(rng.choice(CATALOGUE)[1])
    return rng.choice(PY_CATALOGUE)[1]


def _valid(rng: random.Random, pool: Pool) -> Stream:
    return rng.choice(pool.streams)


def _wide_ids(rng: random.Random, count: int) -> list[int]:
    """``count`` distinct tensor ids past ``SMALL_INTS``: consecutive from an offset, or
    scattered up to the 63-bit edge, in no order."""
    if rng.randrange(2):
        start = rng.choice((SMALL_INTS + 1, 1000, 2**16, 2**31 - 1, 2**40, 2**63 - 1 - count))
        return list(range(start, start + count))
    ids: set[int] = set()
    while len(ids) < count:
        ids.add(rng.randrange(SMALL_INTS + 1, 2**rng.choice((12, 20, 32, 62))))
    return rng.sample(sorted(ids), count)


def _relabelled(rng: random.Random, pool: Pool) -> str:
    """A pool stream (JSON) whose tensor ids are all moved past ``SMALL_INTS``, one to one."""
    doc = json.loads(rng.choice(pool.texts[:len(pool.streams)]))
    tensors = _tensors_in(doc["ops"])
    syncs = [entry for entry in doc["ops"] if entry.get("op") == "Sync"]
    old = sorted({int(key) for key in doc["inputs"]} | {t["id"] for t in tensors}
                 | {i for entry in syncs for i in entry["tensors"]})
    new = dict(zip(old, _wide_ids(rng, len(old)), strict=True))
    doc["inputs"] = {str(new[int(key)]): spec for key, spec in doc["inputs"].items()}
    for tensor in tensors:
        tensor["id"] = new[tensor["id"]]
    for entry in syncs:
        entry["tensors"] = [new[i] for i in entry["tensors"]]
    return json.dumps(doc)


def _op(name: str, **values: Any) -> OperationIr:
    entry = op_named(name)
    return OperationIr(entry, entry.struct(**values))


def _many_dims(rng: random.Random) -> Stream:
    """``WIDE_CHAINS`` independent chains (``exp``, then ``mul`` by the input; one of them ends
    in a ``sum_dim``) on rank-4 inputs whose dimensions are distinct and past ``SMALL_INTS``: one
    segment of over 256 relative shape ids, with ids past the cache too (a valid stream:
    refimpl plans it in about 0.2 s)."""
    dims = rng.sample(range(SMALL_INTS + 1, SMALL_INTS + 1 + 6 * WIDE_CHAINS), 4 * WIDE_CHAINS)
    ids = iter(_wide_ids(rng, 4 * WIDE_CHAINS))
    inputs: dict[int, InputSpec] = {}
    items: list[OperationIr] = []
    summed_at = rng.randrange(WIDE_CHAINS)
    for k in range(WIDE_CHAINS):
        shape = tuple(dims[4 * k:4 * k + 4])
        x, y, z = next(ids), next(ids), next(ids)
        inputs[x] = InputSpec(shape, _F32, random=k)
        items.append(_op("Float.Exp", input=TensorIr(x, shape, _F32, _RO),
                         out=TensorIr(y, shape, _F32, _NEW)))
        items.append(_op("NumericFloat.Mul", lhs=TensorIr(y, shape, _F32, _RW),
                         rhs=TensorIr(x, shape, _F32, _RW), out=TensorIr(z, shape, _F32, _NEW)))
        if k == summed_at:
            axis = rng.randrange(4)
            summed = shape[:axis] + (1,) + shape[axis + 1:]
            items.append(_op("NumericFloat.SumDim", input=TensorIr(z, shape, _F32, _RW),
                             out=TensorIr(next(ids), summed, _F32, _NEW), axis=axis))
    return Stream(inputs, tuple(items))


def _wide(rng: random.Random, pool: Pool) -> Any:
    # one in eight: a segment of many dimensions takes refimpl about 0.3 s, a pool stream 10 ms
    return _many_dims(rng) if rng.randrange(8) == 0 else _relabelled(rng, pool)


# name -> (weight, generator(rng, pool) -> JSON text/bytes or a Stream)
GENERATORS: dict[str, tuple[int, Callable[[random.Random, Pool], Any]]] = {
    "json-semantic": (36, _json_semantic),
    "py-typed": (30, _py_typed),
    "json-garbage": (12, _json_garbage),
    "py-garbage": (12, _py_garbage),
    "valid": (6, _valid),
    "catalogue": (4, _catalogue),
    "wide": (2, _wide),
}


@dataclass(frozen=True)
class FuzzInput:
    index: int
    kind: str
    device: str
    source: Any  # JSON text or bytes, or a Stream


def make_input(seed: int, index: int, pool: Pool, kinds: tuple[str, ...] = tuple(GENERATORS)
               ) -> FuzzInput:
    """Input ``index`` of the run with ``seed`` (generators restricted to ``kinds``)."""
    rng = random.Random((seed << 48) ^ index)
    kind = rng.choices(kinds, weights=[GENERATORS[k][0] for k in kinds])[0]
    device = rng.choice(DEVICES)
    return FuzzInput(index, kind, device, GENERATORS[kind][1](rng, pool))
