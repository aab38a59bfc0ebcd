"""The torch rows of ``bench/elementwise.py``: eager, ``torch.compile`` (default mode) and a
copy, each timed two ways; first calls timed with a wall clock between two
``torch.cuda.synchronize()``.

* launched: a rep records an event, makes ``iterations`` calls from Python, records a second
  event and waits for it; the rep's time divided by ``iterations`` is one call. This is the
  GPU's time only while the host launches faster than the kernels run: torch.compile's
  per-call host cost (guards, launcher) can exceed a 64 µs kernel;
* CUDA graph: the ``iterations`` calls captured once in a CUDA graph and the graph replayed
  per rep: device time without launch overhead, the analogue of ``bench.gpu_timing``'s one-pass
  replay of recorded dispatches.

Median of ``reps``.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

__all__ = ["cuda_time", "max_errors", "torch_available", "torch_side", "torch_warmup"]


def max_errors(got: np.ndarray, want: np.ndarray) -> dict[str, float]:
    """Largest absolute and relative difference (float64)."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    diff = np.abs(got - want)
    return {"max_abs": float(diff.max()),
            "max_rel": float((diff / np.maximum(np.abs(want), 1e-30)).max())}



def torch_available() -> str | None:
    """None when torch with CUDA is usable, else why not."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch has no CUDA device"
    return None


def _cuda_time(fn: Callable, iterations: int, reps: int, warmup: int = 3) -> dict[str, Any]:
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    spans = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iterations):
            fn()
        end.record()
        end.synchronize()
        spans.append(start.elapsed_time(end) * 1e3 / iterations)
    return {"method": "cuda events", "iterations": iterations, "timed_reps": reps,
            "median_us": float(np.median(spans)), "min_us": float(min(spans)),
            "max_us": float(max(spans)), "reps_us": spans}


cuda_time = _cuda_time  # public: other benches time their own torch calls with it


def _graph_time(fn: Callable, iterations: int, reps: int) -> dict[str, Any]:
    """``iterations`` calls captured in one CUDA graph, the graph replayed ``reps`` times:
    the GPU's time with no launch overhead (the analogue of fuselab's one-pass replay)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(iterations):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    spans = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        spans.append(start.elapsed_time(end) * 1e3 / iterations)
    return {"method": "cuda graph of the calls, events around each replay",
            "iterations": iterations, "timed_reps": reps, "median_us": float(np.median(spans)),
            "min_us": float(min(spans)), "max_us": float(max(spans)), "reps_us": spans}


def _first_call(fn: Callable, *xs) -> tuple[float, Any]:
    import torch

    torch.cuda.synchronize()
    started = time.perf_counter()
    value = fn(*xs)
    torch.cuda.synchronize()
    return time.perf_counter() - started, value


def torch_warmup() -> dict[str, Any]:
    """One unrelated compile, so the per-expression first calls exclude one-time imports."""
    import torch

    x = torch.ones(1024, device="cuda")
    seconds, _ = _first_call(torch.compile(lambda t: (t * 3.0).sin()), x)
    return {"process_first_compile_s": seconds, "torch": torch.__version__,
            "cuda_device": torch.cuda.get_device_name()}


def torch_side(fn: Callable, inputs: list[np.ndarray], want: np.ndarray, iterations: int,
               reps: int) -> dict[str, Any]:
    """``fn`` on CUDA copies of ``inputs``: its compiled first call (checked against
    ``want``), eager first call, and the eager / compiled / copy rows."""
    import torch

    xs = [torch.from_numpy(v).cuda() for v in inputs]
    out: dict[str, Any] = {}
    compiled = torch.compile(fn)
    seconds, value = _first_call(compiled, *xs)
    out["compile_first_call_s"] = seconds
    out["compile_errors_vs_numpy"] = max_errors(value.cpu().numpy(), want)
    out["eager_first_call_s"] = _first_call(fn, *xs)[0]
    timing = dict(iterations=iterations, reps=reps)
    calls = {"torch eager": lambda: fn(*xs), "torch.compile": lambda: compiled(*xs),
             "torch copy": lambda: xs[0].clone()}
    out["rows"] = {name: _cuda_time(call, **timing) for name, call in calls.items()}
    for name, call in calls.items():
        try:
            out["rows"][f"{name}, CUDA graph"] = _graph_time(call, **timing)
        except Exception as exc:  # noqa: BLE001 - a capture failure is reported, not fatal
            out[f"{name}, CUDA graph error"] = f"{type(exc).__name__}: {exc}"
    return out
