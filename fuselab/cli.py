"""The ``fuselab`` command line: a registry of subcommands and of execution backends.

burn counterpart: none (burn has no CLI); SPEC §7 defines the commands.

Subcommands live in ``COMMANDS`` (``register_command``); ``run``'s backends in ``BACKENDS``
(``register_backend``, each with the tolerance ``run --check`` judges it by). This module
registers ``validate``, ``run`` with the ``eager`` backend, and ``compare``
(``refimpl.compare``). Other packages add theirs (``plan``, ``demo``, ``wgsl``, ``bench``; the
``interp`` and ``gpu`` backends; the ``gpu`` tolerance) without refimpl importing them: a
callable published under the entry-point group ``fuselab.cli`` is called once before the
arguments are parsed, and registers what it brings. Modules inside refimpl may instead call
``register_*`` at import.

``run`` refuses a stream whose tensors cannot fit the memory available before it allocates
anything (``refimpl.footprint``), and on a terminal shows a progress bar over the ops or
steps of a long run: runners pass what they iterate through ``tracked``.

Exit codes: 0 success, 1 a comparison found tensors outside the tolerance (``compare``,
``run --check``), 2 bad input (any ``FuselabError`` or an unreadable file, reported as one
line ``error: <message>`` on stderr; argparse's own usage errors also exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

import numpy as np

from refimpl import compare, eager
from refimpl.errors import FuselabError
from refimpl.footprint import allocations, check_fits
from refimpl.stream import Stream, load_stream

__all__ = [
    "Command",
    "Backend",
    "COMMANDS",
    "BACKENDS",
    "PLUGIN_GROUP",
    "UsageError",
    "register_command",
    "register_backend",
    "tracked",
    "load_plugins",
    "build_parser",
    "main",
]

PLUGIN_GROUP = "fuselab.cli"

Handler = Callable[[argparse.Namespace], int]
Runner = Callable[[Stream, argparse.Namespace], Mapping[int, np.ndarray]]
T = TypeVar("T")


class UsageError(FuselabError):
    """A command-line choice names nothing (an unknown backend, ...)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand: its parser options and the function that runs it."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    handler: Handler


@dataclass(frozen=True, slots=True)
class Backend:
    """One executor of ``run``, and the tolerance ``run --check`` judges its results by."""

    runner: Runner
    tolerance: str


COMMANDS: dict[str, Command] = {}
BACKENDS: dict[str, Backend] = {}


def register_command(name: str, help: str, add_arguments: Callable[[argparse.ArgumentParser],
                     None], handler: Handler) -> None:
    """Add a subcommand; ``fuselab NAME`` then parses with ``add_arguments`` and calls
    ``handler(args)``, whose return value is the exit code."""
    if name in COMMANDS:
        raise UsageError(f"subcommand {name!r} is already registered")
    COMMANDS[name] = Command(name, help, add_arguments, handler)


def register_backend(name: str, runner: Runner, tolerance: str = "exact") -> None:
    """Add a backend for ``fuselab run --backend NAME``: ``runner(stream, args)`` returns
    the synced tensors by id; ``run --check`` judges them against the eager oracle by the
    registered ``tolerance`` (``refimpl.compare.TOLERANCES``)."""
    if name in BACKENDS:
        raise UsageError(f"backend {name!r} is already registered")
    BACKENDS[name] = Backend(runner, tolerance)


_plugins_loaded = False


def load_plugins() -> None:
    """Call every ``fuselab.cli`` entry point once (by name order), so it can register."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry in sorted(metadata.entry_points(group=PLUGIN_GROUP), key=lambda e: e.name):
        entry.load()()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every registered subcommand (in registration order)."""
    parser = argparse.ArgumentParser(
        prog="fuselab", description="burn-style kernel fusion: plan, run and check op streams.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS.values():
        command.add_arguments(sub.add_parser(command.name, help=command.help,
                                             description=command.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fuselab`` console script; returns the exit code."""
    load_plugins()
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command].handler(args)
    except FuselabError as exc:
        return _fail(str(exc))
    except OSError as exc:
        name = exc.filename if exc.filename is not None else ""
        return _fail(f"cannot access {name}: {exc.strerror or exc}")


def _fail(message: str) -> int:
    print(f"error: {message.splitlines()[0] if message else 'failed'}", file=sys.stderr)
    return 2


# --- validate -------------------------------------------------------------------------------


def _validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stream", metavar="STREAM.json", help="a version-1 stream file")


def _validate(args: argparse.Namespace) -> int:
    stream = load_stream(args.stream)  # validates
    print(f"ok: {len(stream.items)} ops, {len(stream.inputs)} inputs")
    return 0


# --- run ------------------------------------------------------------------------------------


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stream", metavar="STREAM.json", help="a version-1 stream file")
    parser.add_argument("--backend", default="eager",
                        help="executor (registered: %s; default eager)" % ", ".join(BACKENDS))
    parser.add_argument("--out", metavar="FILE.npz",
                        help="save every synced tensor as array t<id>")
    parser.add_argument("--json", action="store_true",
                        help="print a machine-readable summary instead of the table")
    parser.add_argument("--check", action="store_true",
                        help="also run the eager oracle and compare every synced tensor "
                             "within the backend's tolerance (gpu: the WGSL accuracy bounds "
                             "along each tensor's ops; others: exact); exit 1 on a mismatch")


def _summary_row(tensor_id: int, values: np.ndarray) -> dict:
    has_range = values.size > 0 and values.dtype.kind in "fiub"
    return {
        "id": tensor_id,
        "shape": list(values.shape),
        "dtype": compare.dtype_name(values),
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


def _run(args: argparse.Namespace) -> int:
    backend = BACKENDS.get(args.backend)
    if backend is None:
        raise UsageError(f"unknown backend {args.backend!r} (available: "
                         f"{', '.join(BACKENDS)})")
    stream = load_stream(args.stream)
    check_fits(stream)
    with _progress(stream) as display:
        args.progress = display  # read by ``tracked``
        synced = backend.runner(stream, args)
        expected = _eager_runner(stream, args) if args.check else None
    ids = sorted(synced)
    if args.out:
        np.savez(args.out, **{f"t{i}": synced[i] for i in ids})
    rows = [_summary_row(i, synced[i]) for i in ids]
    checked = () if expected is None else compare.compare_results(
        expected, synced, backend.tolerance, stream, names=("eager", args.backend))
    if args.json:
        summary = {"backend": args.backend, "ops": len(stream.items), "out": args.out,
                   "synced": rows}
        if expected is not None:
            summary["check"] = {"tolerance": backend.tolerance,
                                "ok": all(r.ok for r in checked),
                                "tensors": [r.row() for r in checked]}
        print(json.dumps(summary, sort_keys=True))
    else:
        _print_table(args.backend, len(stream.items), rows)
        if expected is not None:
            print(f"\ncheck: {args.backend} against the eager oracle, tolerance "
                  f"{backend.tolerance}")
            print(compare.comparison_table(checked, backend.tolerance), end="")
    return 0 if all(r.ok for r in checked) else 1


def _eager_runner(stream: Stream, args: argparse.Namespace) -> Mapping[int, np.ndarray]:
    executor = eager.EagerExecutor()
    deferred = eager.init_targets(stream)
    for tid in tracked(args, sorted(stream.inputs), "eager: inputs"):
        executor.load_inputs({tid: stream.inputs[tid]}, deferred)
    for item in tracked(args, stream.items, "eager: ops"):
        executor.execute(item)
    return executor.synced


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
    try:
        from rich.console import Console
        from rich import progress as bar
    except ImportError:  # rich is optional: no display then
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


register_command("validate", "check a stream file and report its size",
                 _validate_arguments, _validate)
register_command("run", "execute a stream and save the synced tensors",
                 _run_arguments, _run)
register_command("compare", "compare two run --out files tensor by tensor within a tolerance",
                 compare.compare_arguments, compare.compare_command)
register_backend("eager", _eager_runner)
# refimpl's own subcommands register themselves on import (after the registry exists).
import refimpl.demo  # noqa: E402,F401  (registers "demo")
import refimpl.planner.cli_plan  # noqa: E402,F401  (registers "plan")
import refimpl.interpreter  # noqa: E402,F401  (registers the "interp" backend)
