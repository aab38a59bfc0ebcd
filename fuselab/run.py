"""``fuselab run STREAM.json``: execute a stream on a backend, print or save its synced tensors.

burn counterpart: none; SPEC §7. A backend's runner takes the stream and the parsed arguments
and returns the synced tensors by id; ``eager`` and ``interp`` are here, ``gpu`` is
``fuselab.gpu_commands``'s (the table of backends is ``fuselab.cli.BACKENDS``).

``run`` refuses a stream whose tensors cannot fit the memory available before it allocates
anything (``refimpl.footprint``), and on a terminal shows a progress bar over the ops or
steps of a long run: runners pass what they iterate through ``tracked``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
from typing import Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import numpy as np
from rich import progress as bar
from rich.console import Console

from refimpl import eager
from refimpl.compare import Judge, compare_results, dtype_name
from refimpl.footprint import allocations, check_fits
from refimpl.interpreter import Interpreter
from refimpl.planner import executed_steps
from refimpl.stream import Stream, load_stream
from fuselab.compare import comparison_table

__all__ = ["Runner", "PROGRESS_BYTES", "run_command", "eager_runner", "interp_runner",
           "tracked"]

Runner = Callable[[Stream, argparse.Namespace], Mapping[int, np.ndarray]]
T = TypeVar("T")


def _summary_row(tensor_id: int, values: np.ndarray) -> dict:
    has_range = values.size > 0 and values.dtype.kind in "fiub"
    return {
        "id": tensor_id,
        "shape": list(values.shape),
        "dtype": dtype_name(values),
        "min": _plain(values.min()) if has_range else None,
        "max": _plain(values.max()) if has_range else None,
        "sha256": hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest(),
    }


def _plain(value: np.generic) -> float | int | bool | str:
    """A JSON-safe Python value; non-finite floats as the strings "nan", "inf", "-inf"."""
    item = value.item()
    return item if not isinstance(item, float) or np.isfinite(item) else str(item)


def _print_table(backend: str, ops: int, rows: list[dict]) -> None:
    print(f"{backend}: {ops} ops, {len(rows)} synced tensors")
    header = ("tensor", "shape", "dtype", "min", "max", "sha256")
    lines = [header] + [(f"t{r['id']}", str(r["shape"]), r["dtype"], _text(r["min"]),
                         _text(r["max"]), r["sha256"][:12]) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


def _text(value: float | int | bool | str | None) -> str:
    return "-" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)


def run_command(args: argparse.Namespace, runner: Runner, tolerance: str, judge: Judge) -> int:
    """Run ``args.stream`` with ``runner`` (the backend ``args.backend``); with ``--check``,
    judge its tensors against the eager oracle's by ``judge`` (the tolerance named
    ``tolerance``). Exit 0, or 1 when a checked tensor is outside the tolerance."""
    stream = load_stream(args.stream)
    check_fits(stream)
    with _progress(stream) as display:
        args.progress = display  # read by ``tracked``
        synced = runner(stream, args)
        expected = eager_runner(stream, args) if args.check else None
    ids = sorted(synced)
    if args.out:
        np.savez(args.out, **{f"t{i}": synced[i] for i in ids})
    rows = [_summary_row(i, synced[i]) for i in ids]
    checked = () if expected is None else compare_results(
        expected, synced, judge, stream, names=("eager", args.backend))
    if args.json:
        summary = {"backend": args.backend, "ops": len(stream.items), "out": args.out,
                   "synced": rows}
        if expected is not None:
            summary["check"] = {"tolerance": tolerance,
                                "ok": all(r.ok for r in checked),
                                "tensors": [r.row() for r in checked]}
        print(json.dumps(summary, sort_keys=True))
    else:
        _print_table(args.backend, len(stream.items), rows)
        if expected is not None:
            print(f"\ncheck: {args.backend} against the eager oracle, tolerance {tolerance}")
            print(comparison_table(checked, tolerance), end="")
    return 0 if all(r.ok for r in checked) else 1


# --- the backends of refimpl ----------------------------------------------------------------


def eager_runner(stream: Stream, args: argparse.Namespace) -> Mapping[int, np.ndarray]:
    """``--backend eager``: the oracle, op by op (``refimpl.eager``)."""
    executor = eager.EagerExecutor()
    deferred = eager.init_targets(stream)
    for tid in tracked(args, sorted(stream.inputs), "eager: inputs"):
        executor.load_inputs({tid: stream.inputs[tid]}, deferred)
    for item in tracked(args, stream.items, "eager: ops"):
        executor.execute(item)
    return executor.synced


def interp_runner(stream: Stream, args: argparse.Namespace) -> dict[int, np.ndarray]:
    """``--backend interp``: the plan's steps on numpy, kernel by kernel
    (``refimpl.interpreter``)."""
    profile, executed = executed_steps(stream, getattr(args, "device", None) or "metal")
    return Interpreter(stream, profile).run(tracked(args, executed, "interp: steps"))


# --- progress -------------------------------------------------------------------------------

# A run creating fewer bytes of tensors than this ends before a progress bar would help.
PROGRESS_BYTES = 1 << 28


@contextlib.contextmanager
def _progress(stream: Stream) -> Iterator[object | None]:
    """A ``rich`` progress display on stderr when stderr is a terminal and the stream creates
    at least ``PROGRESS_BYTES`` (removed when the run ends), else None."""
    if not sys.stderr.isatty() or sum(a.nbytes for a in allocations(stream)) < PROGRESS_BYTES:
        yield None
        return
    with bar.Progress(bar.SpinnerColumn(), bar.TextColumn("{task.description}"),
                      bar.BarColumn(), bar.MofNCompleteColumn(), bar.TimeElapsedColumn(),
                      console=Console(file=sys.stderr), transient=True) as display:
        yield display


def tracked(args: argparse.Namespace, items: Sequence[T], what: str) -> Iterable[T]:
    """What a runner iterates (ops, plan steps): ``items`` themselves, advancing ``run``'s
    progress bar under the label ``what`` when it shows one."""
    display = getattr(args, "progress", None)
    if display is None:
        return items
    return display.track(items, total=len(items), description=what)
