"""What recording an op costs in Python at the least: the frontend against a bare recorder.

burn counterpart: none (burn records in Rust; this bounds a Python recorder of fuselab's IR).

    .venv/bin/python bench/record_floor.py [--ops 20000] [--repeats 5]

The frontend is timed twice, refimpl's ``Session`` and fastplan's (``fastplan.frontend``:
refimpl's with its recording path compiled; refimpl's own when fastplan is not compiled).
Both frontends and the bare recorder record the ``chains`` loop of ``fuselab.front_door`` (eight chains of ``x + 1.0`` on
[64, 64]; no syncs here) and make the same objects per op: the op (an ``OperationIr`` over a
``ScalarOpIr`` with its two ``TensorIr`` snapshots), the result's handle (``Tensor`` and its
state) and, when the previous handle dies, its ``Drop`` (``OperationIr``, ``DropOpIr``,
``TensorIr``). The bare recorder does nothing else: no op lookup, no operand, dtype or shape
check, a status from one reference count against a constant, and it appends without a
session's bookkeeping. Its time is what any pure-Python recorder of these objects pays; the
frontend's minus it is what its checks and its status inference cost. The three take turns;
thread CPU µs per op, median of the repeats, and each frontend's ratio to the bare recorder
(what was recorded is freed outside the timing).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fastplan.frontend  # noqa: E402
from fuselab.front_door import chains  # noqa: E402
from refimpl.dtypes import DType  # noqa: E402
from refimpl.frontend import Session  # noqa: E402
from refimpl.frontend.operands import drop_desc, operation, scalar_desc, snapshot  # noqa: E402
from refimpl.ir import TensorStatus  # noqa: E402
from refimpl.ops import op_named  # noqa: E402

RO, RW, NOT_INIT = TensorStatus.ReadOnly, TensorStatus.ReadWrite, TensorStatus.NotInit
ADD_SCALAR, DROP = op_named("NumericFloat.AddScalar"), op_named("Drop")


class _State:
    __slots__ = ("consumed_at", "dtype", "handles", "id", "recorder", "shape")

    def __init__(self, recorder: _Bare, tid: int, shape: tuple[int, ...], dtype: DType):
        self.recorder, self.id, self.shape, self.dtype = recorder, tid, shape, dtype
        self.handles, self.consumed_at = 1, None


class _Handle:
    __slots__ = ("_state",)

    def __init__(self, state: _State) -> None:
        self._state = state

    def __del__(self) -> None:
        st = self._state
        st.handles -= 1
        if st.handles == 0 and st.consumed_at is None:
            st.recorder.items.append(operation(DROP, drop_desc(
                snapshot(st.id, st.shape, st.dtype, RW))))

    def __add__(self, value: float) -> _Handle:
        return self._state.recorder.add_scalar(self, value)


class _Bare:
    """Records ``x + scalar`` only, with the objects the frontend makes and nothing else."""

    def __init__(self) -> None:
        self.items: list = []
        self.next_id = 0

    def input(self, shape: tuple[int, ...]) -> _Handle:
        self.next_id += 1
        return _Handle(_State(self, self.next_id - 1, shape, DType.F32))

    def add_scalar(self, x: _Handle, value: float) -> _Handle:
        count = sys.getrefcount(x)
        st = x._state
        lhs = snapshot(st.id, st.shape, st.dtype, RO if count > 3 else RW)
        out = snapshot(self.next_id, st.shape, st.dtype, NOT_INIT)
        self.items.append(operation(ADD_SCALAR, scalar_desc(lhs, value, out)))
        self.next_id += 1
        return _Handle(_State(self, out.id, out.shape, out.dtype))


def _bare(ops: int) -> _Bare:
    recorder = _Bare()
    xs = [recorder.input((64, 64)) for _ in range(8)]
    done = 0
    while done < ops:
        for i in range(8):
            xs[i] = xs[i] + 1.0
            done += 1
    return recorder


def _frontend(ops: int, session_cls: type = Session) -> Session:
    session = session_cls(executor=None)
    chains(session, ops, random.Random(0), sync_every=ops + 1)
    return session


def _fast_frontend(ops: int) -> Session:
    return _frontend(ops, fastplan.frontend.Session)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    recorders = (("frontend (refimpl)", _frontend), ("frontend (fastplan)", _fast_frontend),
                 ("bare recorder", _bare))
    runs: dict[str, list[float]] = {name: [] for name, _ in recorders}
    for _ in range(args.repeats):
        for name, record in recorders:
            start = time.thread_time()
            recorded = record(args.ops)
            runs[name].append(time.thread_time() - start)
            del recorded  # freed outside the timing
    print(f"chains loop, {args.ops} ops, thread CPU µs per op, median of {args.repeats}; "
          f"load {os.getloadavg()[0]:.2f}")
    floor = statistics.median(runs["bare recorder"])
    for name, times in runs.items():
        print(f"{name}: {statistics.median(times) / args.ops * 1e6:.2f} "
              f"({statistics.median(times) / floor:.2f}× the bare recorder)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
