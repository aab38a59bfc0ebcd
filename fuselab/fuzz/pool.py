"""Where a campaign's chunks run: this process (``--jobs 1``), worker processes (``--jobs N``)
or a Dask distributed cluster (``--cluster ADDRESS``).

burn counterpart: none. The three share one small interface (``submit``, ``wait``,
``result``, ``cancel``, ``call``, ``workers``), so ``fuselab.fuzz.campaign`` is written once.
Worker processes are spawned, not forked: a worker opens its own GPU device when the ``gpu``
check runs. Dask (``pip install fuselab[fuzz]``) is imported only for ``--cluster``.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
from collections.abc import Callable, Iterator
from typing import Any

from refimpl.errors import FuselabError

__all__ = ["ClusterError", "executor_for"]


class ClusterError(FuselabError):
    """``--cluster`` names no reachable Dask scheduler, or Dask is not installed."""


class _Done:
    """A finished call (this process runs it at once)."""

    def __init__(self, fn: Callable, args: tuple) -> None:
        self.value = fn(*args)


class _Inline:
    workers = 1

    def submit(self, fn: Callable, *args: Any) -> _Done:
        return _Done(fn, args)

    def call(self, fn: Callable, *args: Any) -> Any:
        return fn(*args)

    def wait(self, pending: list, timeout: float) -> tuple[list, list]:
        return pending, []

    def result(self, future: _Done) -> Any:
        return future.value

    def cancel(self, pending: list) -> None:
        pass


class _Processes:
    def __init__(self, jobs: int) -> None:
        self.workers = jobs
        self.pool = cf.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, fn: Callable, *args: Any) -> cf.Future:
        return self.pool.submit(fn, *args)

    def call(self, fn: Callable, *args: Any) -> Any:
        return self.submit(fn, *args).result()

    def wait(self, pending: list, timeout: float) -> tuple[list, list]:
        done, rest = cf.wait(pending, timeout, return_when=cf.FIRST_COMPLETED)
        return list(done), [f for f in pending if f in rest]

    def result(self, future: cf.Future) -> Any:
        return future.result()

    def cancel(self, pending: list) -> None:
        for future in pending:
            future.cancel()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class _Dask:
    def __init__(self, address: str) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise ClusterError("--cluster needs Dask distributed (pip install "
                               "'fuselab[fuzz]')") from None
        try:
            self.client = Client(address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {address}: {exc}") \
                from None
        self.workers = max(1, sum(self.client.nthreads().values()))

    def submit(self, fn: Callable, *args: Any) -> Any:
        return self.client.submit(fn, *args, pure=False)

    def call(self, fn: Callable, *args: Any) -> Any:
        return self.submit(fn, *args).result()

    def wait(self, pending: list, timeout: float) -> tuple[list, list]:
        from distributed import wait

        try:
            done, _ = wait(pending, timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return [], pending
        return list(done), [f for f in pending if f not in done]

    def result(self, future: Any) -> Any:
        return future.result()

    def cancel(self, pending: list) -> None:
        if pending:
            self.client.cancel(pending)

    def close(self) -> None:
        self.client.close()


@contextlib.contextmanager
def executor_for(config: Any) -> Iterator[Any]:
    """The executor ``config`` asks for (``cluster``, else ``jobs``)."""
    if config.cluster:
        pool = _Dask(config.cluster)
    elif config.jobs > 1:
        pool = _Processes(config.jobs)
    else:
        yield _Inline()
        return
    try:
        yield pool
    finally:
        pool.close()
