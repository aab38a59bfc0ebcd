"""Run ``checks(index)`` for every index of a range in forked workers that may crash or hang.

burn counterpart: none (the process harness of ``tools/fuzz_planners.py``).

``run_checks(config, checks)`` hands chunks of ``config.chunk`` indices to ``config.jobs``
workers forked from this process (they share what it built: imports, input pools). A worker
calls ``checks(index)`` under a SIGALRM limit of ``config.timeout_s`` (past it, the record is
``checks.lost(index, "timeout", "")``) and reports how many records it made per ``key`` in
batches, with the records that are a ``finding``. The parent watches every worker: one that died
(a segfault is a negative exit code) or whose index did not move for ``config.hang_s`` (killed)
costs the index it was on, recorded as ``checks.lost(index, "crash" | "hang", detail)``; a new
worker takes the rest of the chunk from the next index on, and the indices the dead one checked
but had not reported yet are checked again. Each index is counted exactly once.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import signal
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any, Protocol

__all__ = ["Checks", "Config", "Record", "run_checks"]

FLUSH_S = 0.5  # a worker reports at least this often
POLL_S = 0.5  # the parent looks at its workers at least this often


class Record(Protocol):
    key: Hashable  # what the counts are kept by
    finding: bool  # reported to the parent one by one


class Checks(Protocol):
    def __call__(self, index: int) -> Record: ...

    def lost(self, index: int, outcome: str, detail: str) -> Record: ...


@dataclass(frozen=True)
class Config:
    count: int
    jobs: int
    timeout_s: float = 10.0
    hang_s: float = 30.0
    chunk: int = 250


class Expired(BaseException):
    """SIGALRM: a BaseException, so that no ``except Exception`` in the checked code eats it."""


def _expire(signum: int, frame: Any) -> None:
    raise Expired()


def _checked(checks: Checks, index: int, timeout_s: float) -> Record:
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            return checks(index)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except Expired:
        return checks.lost(index, "timeout", "")


def _work(conn: Any, current: Any, checks: Checks, timeout_s: float) -> None:
    """A worker: check each chunk ``(lo, hi)`` the parent sends, until ``None``; report
    ``(start, end, counts, findings)`` for the indices ``start..end-1``."""
    faulthandler.disable()  # a crash is reported by the parent, without a dump per worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _expire)
    while (task := conn.recv()) is not None:
        lo, hi = task
        counts, found, start, flushed = Counter(), [], lo, time.monotonic()
        for index in range(lo, hi):
            current.value = index
            record = _checked(checks, index, timeout_s)
            counts[record.key] += 1
            if record.finding:
                found.append((index, record))
            if index + 1 == hi or time.monotonic() - flushed > FLUSH_S:
                conn.send((start, index + 1, counts, found))
                counts, found, start, flushed = Counter(), [], index + 1, time.monotonic()
        current.value = -1


@dataclass
class _Worker:
    process: Any
    conn: Any
    current: Any  # shared with the worker: the index it is checking, -1 between chunks
    task: tuple[int, int] | None = None
    done_to: int = 0  # the task's indices below this are accounted
    seen: int = -1
    seen_at: float = 0.0


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class _Run:
    """The parent: hands out chunks, collects counts, replaces dead or stuck workers."""

    def __init__(self, config: Config, checks: Checks,
                 on_finding: Callable[[int, Record], None], progress: Callable[[int], None]):
        self.config, self.checks = config, checks
        self.on_finding, self.progress = on_finding, progress
        self.context = multiprocessing.get_context("fork")
        self.queue = deque((lo, min(lo + config.chunk, config.count))
                           for lo in range(0, config.count, config.chunk))
        self.accounted = bytearray(config.count)
        self.counts: Counter = Counter()
        self.done = 0
        self.deaths_between_inputs = 0

    def _spawn(self) -> _Worker:
        mine, theirs = self.context.Pipe()
        current = self.context.RawValue("q", -1)
        process = self.context.Process(target=_work, daemon=True, args=(
            theirs, current, self.checks, self.config.timeout_s))
        process.start()
        theirs.close()
        return _Worker(process, mine, current)

    def _account(self, lo: int, hi: int, counts: Counter) -> None:
        if self.accounted[lo:hi].count(0) != hi - lo:
            raise RuntimeError(f"indices {lo}..{hi - 1} counted twice")
        self.accounted[lo:hi] = b"\x01" * (hi - lo)
        self.counts.update(counts)
        self.done += hi - lo

    def _receive(self, worker: _Worker) -> None:
        try:
            while worker.conn.poll():
                start, end, counts, found = worker.conn.recv()
                self._account(start, end, counts)
                worker.done_to = end
                for index, record in found:
                    self.on_finding(index, record)
                if worker.task and end == worker.task[1]:
                    worker.task = None
        except (EOFError, OSError):
            pass

    def _lost(self, worker: _Worker, outcome: str, detail: str) -> None:
        """``worker`` died or was killed: the index it was on is recorded as ``outcome``, the
        rest of its chunk goes back to the front of the queue."""
        self._receive(worker)
        if worker.task is None:
            return
        hi = worker.task[1]
        at = worker.current.value
        if worker.done_to <= at < hi:
            record = self.checks.lost(at, outcome, detail)
            self._account(at, at + 1, Counter({record.key: 1}))
            self.on_finding(at, record)
            pieces = [(worker.done_to, at), (at + 1, hi)]
        else:
            self.deaths_between_inputs += 1
            if self.deaths_between_inputs > 10 * self.config.jobs:
                raise RuntimeError(f"workers keep dying between inputs ({outcome}: {detail})")
            pieces = [(worker.done_to, hi)]
        self.queue.extendleft(piece for piece in reversed(pieces) if piece[0] < piece[1])
        worker.task = None

    def _watched(self, worker: _Worker, now: float) -> _Worker:
        """``worker``, or a new one when it died or stopped moving."""
        code = worker.process.exitcode
        if code is not None:
            self._lost(worker, "crash", _signal_name(code) if code < 0 else f"exit {code}")
            return self._spawn()
        at = worker.current.value
        if at != worker.seen:
            worker.seen, worker.seen_at = at, now
        elif worker.task and at >= 0 and now - worker.seen_at > self.config.hang_s:
            worker.process.kill()
            worker.process.join()
            self._lost(worker, "hang", f"no progress for {self.config.hang_s:g} s")
            return self._spawn()
        return worker

    def run(self) -> Counter:
        workers = [self._spawn() for _ in range(self.config.jobs)]
        try:
            while self.queue or any(w.task for w in workers):
                for worker in workers:
                    if worker.task is None and self.queue:
                        worker.task = self.queue.popleft()
                        worker.done_to = worker.task[0]
                        worker.conn.send(worker.task)
                wait([w.conn for w in workers] + [w.process.sentinel for w in workers], POLL_S)
                for worker in workers:
                    self._receive(worker)
                now = time.monotonic()
                workers = [self._watched(w, now) for w in workers]
                self.progress(self.done)
        finally:
            self._stop(workers)
        return self.counts

    @staticmethod
    def _stop(workers: list[_Worker]) -> None:
        for worker in workers:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in workers:
            worker.process.join(1)
            if worker.process.exitcode is None:
                worker.process.kill()
                worker.process.join()


def run_checks(config: Config, checks: Checks,
               on_finding: Callable[[int, Record], None] = lambda index, record: None,
               progress: Callable[[int], None] = lambda done: None) -> tuple[Counter, bytearray]:
    """Check indices ``0..config.count-1``: the number of records per ``key``, and one byte per
    index (1: counted)."""
    state = _Run(config, checks, on_finding, progress)
    return state.run(), state.accounted
