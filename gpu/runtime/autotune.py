"""Autotune: named candidates timed on the device under a key, the winner cached in memory and
on disk.

burn counterpart: cubecl-runtime's ``tune/`` (``LocalTuner``, ``TunableSet``, ``Tunable``,
``AutotuneKey`` with ``#[autotune(anchor)]`` fields, the persistent cache
``tune_cache.rs``/``tuner.rs``) as burn-cubecl-fusion's ``tune.rs`` files use it.

The API, for any fuser:

* ``Candidate(name, prepare)``: ``prepare()`` returns the dispatches one run of the candidate
  submits (``gpu.runtime.server.Dispatched``: compiled and bound, not submitted), writing
  fresh buffers only, so timing never touches the stream's tensors; it may raise (a
  candidate that cannot run is skipped);
* ``TUNER.choose(device, fuser, key, candidates, default)`` returns the winner's name: burn's
  ``default`` when autotune is off (``FUSELAB_AUTOTUNE=off``), else the cached winner of
  ``(device, fuser, key)``, else every candidate timed now (median of ``REPS`` timed reps,
  each ``ITERATIONS`` runs in one compute pass, after one warm-up), the fastest cached;
* ``anchor(n)``: a size rounded up to a power of two (burn's anchored key fields).

``gpu.runtime.autotune_reduce`` builds such candidates for a ``GpuExecutor`` step, timed before
the walk commits it (``kernel_candidate``: one kernel reading the step's inputs, writing fresh
buffers; ``fallback_candidate``: the walk's fallback run once in a ``sandbox``, its dispatches
recorded); the fused reduce and the fused matmul (``gpu.runtime.autotune_matmul``) use them.

Timing reads timestamp queries around each rep's pass where the device has
``timestamp-query``, else a wall clock around its submission and a queue wait.

The disk cache is ``$FUSELAB_CACHE_DIR/autotune.json`` (default
``$XDG_CACHE_HOME/fuselab``, else ``~/.cache/fuselab``): one JSON object with a ``format``
and ``version``; a file that does not parse, has another format or version, or holds
entries of the wrong shape is ignored and rewritten, never trusted.
``FUSELAB_AUTOTUNE_LOG=stdout`` prints one JSON line per decision:
``{"fuser", "key", "candidates": {name: µs}, "winner"}`` (``candidates`` empty when the
winner came from a cache, with ``"cached": true``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

__all__ = ["AUTOTUNE_ENV", "AUTOTUNE_LOG_ENV", "CACHE_DIR_ENV", "Candidate", "Tuner", "TUNER",
           "anchor", "autotune_enabled", "cache_dir", "time_candidate"]

AUTOTUNE_ENV = "FUSELAB_AUTOTUNE"
AUTOTUNE_LOG_ENV = "FUSELAB_AUTOTUNE_LOG"
CACHE_DIR_ENV = "FUSELAB_CACHE_DIR"
CACHE_FORMAT, CACHE_VERSION = "fuselab-autotune", 1
REPS, ITERATIONS = 5, 3
_RESOLVE_ALIGN = 256


@dataclass(frozen=True, slots=True)
class Candidate:
    """One way to run a fused step: its name and what builds its dispatches."""

    name: str
    prepare: Callable[[], Sequence[Any]]


def anchor(n: int) -> int:
    """``n`` rounded up to a power of two (0 stays 0)."""
    return 0 if n <= 0 else 1 << (int(n) - 1).bit_length()


def autotune_enabled() -> bool:
    """``FUSELAB_AUTOTUNE`` is on unless set to ``off``/``0``/``false``."""
    value = os.environ.get(AUTOTUNE_ENV, "on").strip().lower()
    if value not in ("on", "1", "true", "off", "0", "false", ""):
        raise ValueError(f"{AUTOTUNE_ENV}={value!r}: expected on or off")
    return value not in ("off", "0", "false")


def cache_dir() -> Path:
    """``$FUSELAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/fuselab``, else ``~/.cache/fuselab``."""
    given = os.environ.get(CACHE_DIR_ENV)
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "fuselab"


# --- timing ------------------------------------------------------------------------------------


def _encode(encoder: Any, dispatches: Sequence[Any], iterations: int,
            writes: dict | None) -> None:
    compute = encoder.begin_compute_pass(timestamp_writes=writes)
    for _ in range(iterations):
        for d in dispatches:
            compute.set_pipeline(d.pipeline)
            compute.set_bind_group(0, d.bind_group)
            compute.dispatch_workgroups(*d.grid)
    compute.end()


def time_candidate(device: Any, dispatches: Sequence[Any], reps: int = REPS,
                   iterations: int = ITERATIONS) -> float:
    """Median seconds of one run of ``dispatches`` (after one untimed warm-up rep)."""
    wgpu_device, queue = device.wgpu_device, device.queue
    warm = wgpu_device.create_command_encoder()
    _encode(warm, dispatches, 1, None)
    queue.submit([warm.finish()])
    if "timestamp-query" in device.features:
        import numpy as np
        import wgpu

        query_set = wgpu_device.create_query_set(type="timestamp", count=2 * reps)
        encoder = wgpu_device.create_command_encoder()
        for rep in range(reps):
            _encode(encoder, dispatches, iterations,
                    {"query_set": query_set, "beginning_of_pass_write_index": 2 * rep,
                     "end_of_pass_write_index": 2 * rep + 1})
        size = -(-2 * reps * 8 // _RESOLVE_ALIGN) * _RESOLVE_ALIGN
        resolved = wgpu_device.create_buffer(
            size=size, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        encoder.resolve_query_set(query_set, 0, 2 * reps, resolved, 0)
        queue.submit([encoder.finish()])
        ticks = np.frombuffer(queue.read_buffer(resolved, 0, 2 * reps * 8), dtype=np.uint64)
        spans = (ticks[1::2].astype(np.int64) - ticks[0::2].astype(np.int64)) * 1e-9
        return float(statistics.median(spans)) / iterations
    device.runtime.finish()
    spans = []
    for _ in range(reps):
        started = time.perf_counter()
        encoder = wgpu_device.create_command_encoder()
        _encode(encoder, dispatches, iterations, None)
        queue.submit([encoder.finish()])
        device.runtime.finish()
        spans.append((time.perf_counter() - started) / iterations)
    return float(statistics.median(spans))


# --- the tuner ---------------------------------------------------------------------------------


class Tuner:
    """Winners by ``(device, fuser, key)`` in memory, backed by the disk cache."""

    def __init__(self) -> None:
        self.memory: dict[tuple[str, str, str], str] = {}
        self.tuning_runs = 0  # keys timed (not found in a cache) by this process
        self.tuning_seconds: dict[str, float] = {}  # per key string: time spent tuning it
        self._disk: dict | None = None
        self._disk_path: Path | None = None

    # --- disk cache ------------------------------------------------------------------------

    def _path(self) -> Path:
        return cache_dir() / "autotune.json"

    def _load(self) -> dict:
        path = self._path()
        if self._disk is not None and self._disk_path == path:
            return self._disk
        self._disk, self._disk_path = {}, path
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return self._disk
        if (isinstance(data, dict) and data.get("format") == CACHE_FORMAT
                and data.get("version") == CACHE_VERSION
                and isinstance(data.get("entries"), dict)):
            self._disk = {k: v for k, v in data["entries"].items()
                          if isinstance(k, str) and isinstance(v, dict)
                          and isinstance(v.get("winner"), str)}
        return self._disk

    def _store(self, entry: str, winner: str, timings: Mapping[str, float]) -> None:
        entries = self._load()
        entries[entry] = {"winner": winner, "candidates": dict(timings)}
        path = self._path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"format": CACHE_FORMAT, "version": CACHE_VERSION,
                               "entries": entries}, sort_keys=True, indent=1)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".autotune-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except OSError as error:  # a read-only cache dir: keep the winner in memory only
            print(f"[fuselab] autotune cache not written: {error}", file=sys.stderr)

    # --- decisions ---------------------------------------------------------------------------

    def choose(self, device: Any, fuser: str, key: Mapping[str, Any],
               candidates: Sequence[Candidate], default: str) -> str:
        """The winner's name among ``candidates`` (``default`` with autotune off)."""
        names = [c.name for c in candidates]
        if not autotune_enabled() or len(candidates) < 2:
            return default if default in names or not names else names[0]
        key_text = json.dumps(key, sort_keys=True)
        entry = json.dumps([device.name, fuser, key_text])
        found = self.memory.get((device.name, fuser, key_text))
        if found is None:
            cached = self._load().get(entry)
            found = cached["winner"] if cached is not None else None
        if found in names:
            self.memory[(device.name, fuser, key_text)] = found
            _log(fuser, key, {}, found, cached=True)
            return found
        started = time.perf_counter()
        timings: dict[str, float] = {}
        for candidate in candidates:
            try:
                dispatches = candidate.prepare()
                timings[candidate.name] = time_candidate(device, dispatches) * 1e6
            except Exception as error:  # noqa: BLE001 - a candidate that cannot run loses
                _debug(f"autotune {fuser}: candidate {candidate.name} skipped: {error}")
        if not timings:
            return default
        winner = min(timings, key=lambda name: (timings[name], names.index(name)))
        self.tuning_runs += 1
        self.tuning_seconds[key_text] = time.perf_counter() - started
        self.memory[(device.name, fuser, key_text)] = winner
        self._store(entry, winner, timings)
        _log(fuser, key, timings, winner)
        return winner


def _log(fuser: str, key: Mapping[str, Any], timings: Mapping[str, float], winner: str,
         cached: bool = False) -> None:
    if os.environ.get(AUTOTUNE_LOG_ENV) == "stdout":
        line = {"fuser": fuser, "key": key, "candidates": {k: round(v, 3)
                                                           for k, v in timings.items()},
                "winner": winner}
        if cached:
            line["cached"] = True
        print(json.dumps(line, sort_keys=True), file=sys.stdout)


def _debug(message: str) -> None:
    from gpu.runtime.server import DEBUG_LOG_ENV

    if os.environ.get(DEBUG_LOG_ENV) == "stdout":
        print(f"[fuselab] {message}", file=sys.stdout)


TUNER = Tuner()
