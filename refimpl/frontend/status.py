"""Status inference: whether a use of a tensor is its last (``ReadWrite``) or not (``ReadOnly``).

burn counterpart: ``FusionTensor::status`` (``crates/burn-fusion/src/tensor.rs``): consuming a
handle whose shared count is 1 gives ``ReadWrite``, a higher count ``ReadOnly``. Python has no
moves, so a handle also counts as *held* while Python code can still reach it, which is read
from ``sys.getrefcount``.

The recording function (``Session._record``) reads the reference count of each operand first
thing. A count no higher than a temporary's (an operand only the expression being evaluated
refers to, such as ``a * b`` inside ``(a * b).exp()``) means nobody else holds it. The
temporary's count depends only on the call path (method call, binary/unary operator slot,
comparison, reflected operator, ``cat`` list), so ``calibrate`` measures it once at import by
running those paths on a known temporary and a known named tensor
(``refcount_calibration()``). A path where both counts coincide (an interpreter that borrows
references) records every use there as ``ReadOnly``, which is always safe.

Consequences: ``x = x + 1`` reads ``x`` ``ReadOnly`` and then drops it; write
``x = x.move() + 1`` for burn's moving ``x.add_scalar(1)``. A function parameter, a container
or an attribute holds its tensor too (a helper that should consume its argument moves it:
``def step(x): return x.move() * 2``). Inside an ``assert`` under pytest, subexpressions are
held by the assertion rewriter, so build streams outside ``assert`` statements.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from refimpl.ir import TensorStatus

__all__ = ["METHOD", "BINARY", "REFLECTED", "UNARY", "COMPARE", "CAT", "CAT_LIST", "statuses",
           "list_is_held", "calibrate", "refcount_calibration"]

RO, RW = TensorStatus.ReadOnly, TensorStatus.ReadWrite

# Call paths to the measuring point; each has its own temporary count (calibrated below).
METHOD, BINARY, REFLECTED, UNARY, COMPARE, CAT, CAT_LIST = (
    "method", "binary", "reflected", "unary", "compare", "cat", "cat_list")
_TEMPORARY: dict[str, int | None] = {}  # path -> a temporary's count (None: can't tell)
_MEASURED: dict[str, tuple[int, int]] = {}  # path -> (temporary, named) as measured


def refcount_calibration() -> dict[str, tuple[int, int]]:
    """The (temporary, named) reference counts measured at import, by call path."""
    return dict(_MEASURED)


class Operand(Protocol):
    """An operand's tensor as the status inference sees it (``TensorState``)."""

    id: int
    handles: int


def statuses(path: str, counts: Sequence[int], tensors: Sequence[Operand],
             held: bool) -> list[TensorStatus]:
    """The status of each operand of one op reached through ``path``.

    ``counts`` are the operands' reference counts as read by the recording function,
    ``tensors`` their tensors (``id``, and ``handles``: how many handles the tensor has,
    ``clone``). A use is ``ReadWrite`` only when nothing holds the operand (``held``: the
    caller keeps the operand list), its tensor has one handle and the op uses that tensor
    once.
    """
    limit = _TEMPORARY.get(path)
    if held or limit is None:
        return [RO] * len(tensors)
    if len(tensors) == 1:  # the common case: one operand is used once
        return [RW if counts[0] <= limit and tensors[0].handles == 1 else RO]
    uses: dict[int, int] = {}
    for tensor in tensors:
        uses[tensor.id] = uses.get(tensor.id, 0) + 1
    return [RW if count <= limit and tensor.handles == 1 and uses[tensor.id] == 1 else RO
            for count, tensor in zip(counts, tensors)]


def list_is_held(count: int) -> bool:
    """Whether the list or tuple given to ``cat`` (reference count ``count``) is held by the
    caller, which makes every use of its tensors ``ReadOnly``."""
    limit = _TEMPORARY.get(CAT_LIST)
    return limit is None or count > limit


# --- calibration ----------------------------------------------------------------------------


def _calibrate_once(probe_session: Callable[[], Any], cat: Callable[..., Any],
                    temporary: dict[str, int | None],
                    measured: dict[str, tuple[int, int]]) -> None:
    """Measure, per call path, the count of a temporary and of a named first operand."""
    probe = probe_session()
    log = probe._probe
    named, other = probe.zeros((1,)), probe.zeros((1,))
    held = [other]
    # (path, a use of a temporary, the same use of a named tensor / list)
    uses = (
        (METHOD, lambda: probe.zeros((1,)).exp(), lambda: named.exp()),
        (BINARY, lambda: probe.zeros((1,)) * other, lambda: named * other),
        (REFLECTED, lambda: 2.0 * probe.zeros((1,)), lambda: 2.0 * named),
        (UNARY, lambda: -probe.zeros((1,)), lambda: -named),
        (COMPARE, lambda: probe.zeros((1,)) < other, lambda: named < other),
        (CAT, lambda: cat([probe.zeros((1,))], 0), lambda: cat([named], 0)),
        (CAT_LIST, lambda: cat([named], 0), lambda: cat(held, 0)),
    )
    for path, temporary_use, named_use in uses:
        counts = []
        for use in (temporary_use, named_use):
            use()
            counts.append([c for p, c in log if p == path][-1][0])
        measured[path] = (counts[0], counts[1])
        temporary[path] = counts[0] if counts[1] > counts[0] else None
    probe.close()


def calibrate(probe_session: Callable[[], Any], cat: Callable[..., Any],
              temporary: dict[str, int | None] = _TEMPORARY,
              measured: dict[str, tuple[int, int]] = _MEASURED) -> None:
    """Measure the temporary's count of every call path.

    ``probe_session()`` gives a record-only session whose ``_probe`` list logs ``(path,
    counts)`` for every op it records; ``cat`` is the frontend's ``cat``. An interpreter event
    during import (a tracer, a collection) can blur one measurement, so a blind path is
    measured again before giving up on it. The counts go to ``temporary`` and ``measured``
    (this module's tables unless a recorder that reads its counts elsewhere keeps its own).
    """
    for _ in range(3):
        _calibrate_once(probe_session, cat, temporary, measured)
        if all(limit is not None for limit in temporary.values()):
            return
        gc.collect()
    blind = [path for path, limit in temporary.items() if limit is None]
    if blind:
        warnings.warn(f"refimpl.frontend: reference counts cannot tell temporaries on this "
                      f"interpreter (paths {blind}); those uses are recorded ReadOnly",
                      RuntimeWarning, stacklevel=2)
