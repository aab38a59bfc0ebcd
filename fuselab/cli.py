"""The ``fuselab`` command line: its subcommands, and the tables they choose from.

burn counterpart: none (burn has no CLI); SPEC §7 defines the commands.

Everything the command can choose is a plain table here, each entry a small record pointing
at the function that does the work: ``COMMANDS`` (the subcommands, in ``--help`` order),
``BACKENDS`` (``run --backend``, each with the tolerance ``run --check`` judges it by),
``TOLERANCES`` (``compare --tolerance``), ``PLANNERS`` (``plan --planner``) and
``BENCHMARKS`` (``bench WHAT``). The work itself is in the other modules of ``fuselab`` and
in the libraries: ``refimpl``, ``fastplan`` (always importable: without its compiled modules
it is refimpl's planner) and ``gpu``.

Nothing heavy is imported with this module: each table entry imports the module doing its
work when it is called (``_lazy``), and ``build_parser(argv)`` adds the options of the one
command being run, so that ``fuselab plan --planner fast`` pays for fastplan's import and
nothing else. ``plan`` reads the stream with its planner's reader (``LOADERS``: fastplan's
compiled one for ``fast``); ``plan --batch`` plans many streams in one process
(``fuselab.plan_batch``, output format in ``docs/stream-format.md``).

Exit codes: 0 success, 1 a comparison found tensors outside the tolerance (``compare``,
``run --check``), 2 bad input (any ``FuselabError`` or an unreadable file, reported as one
line ``error: <message>`` on stderr; argparse's own usage errors also exit 2; under
``plan --batch`` a bad stream is a line of the output, not an exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from refimpl.devices import PRESETS
from refimpl.errors import FuselabError

if TYPE_CHECKING:
    from refimpl.compare import Judge
    from refimpl.devices import DeviceProfile
    from refimpl.planner.stream.plan import Plan
    from refimpl.stream import Stream

__all__ = ["Command", "Backend", "Tolerance", "Benchmark", "COMMANDS", "BACKENDS",
           "TOLERANCES", "PLANNERS", "LOADERS", "BENCHMARKS", "UsageError", "build_parser",
           "main"]

Handler = Callable[[argparse.Namespace], int]
Arguments = Callable[[argparse.ArgumentParser], None]


class UsageError(FuselabError):
    """A command-line choice names nothing (an unknown backend, ...)."""


def _lazy(module: str, name: str) -> Callable[..., Any]:
    """A function calling ``module.name``, imported at the first call."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}`` (imported when called)."
    return call


def _text(help: str | Callable[[], str]) -> str:
    """A help text given as text or as a function making it."""
    return help() if callable(help) else help


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand: its help, its parser options and the function that runs it (its
    return value is the exit code)."""

    help: str
    add_arguments: Arguments
    handler: Handler


@dataclass(frozen=True, slots=True)
class Backend:
    """One executor of ``run``, and the tolerance ``run --check`` judges its results by."""

    runner: Callable[..., Any]  # fuselab.run.Runner
    tolerance: str


@dataclass(frozen=True, slots=True)
class Tolerance:
    """One judge of ``compare --tolerance`` and ``run --check``."""

    help: str | Callable[[], str]
    judge: Judge


@dataclass(frozen=True, slots=True)
class Benchmark:
    """One ``fuselab bench WHAT``: its options and the function that runs it."""

    help: str | Callable[[], str]
    add_arguments: Arguments
    main: Handler


# ``run --backend``: runner(stream, args) -> the synced tensors by id.
BACKENDS: dict[str, Backend] = {
    "eager": Backend(_lazy("fuselab.run", "eager_runner"), "exact"),
    "interp": Backend(_lazy("fuselab.run", "interp_runner"), "exact"),
    "gpu": Backend(_lazy("fuselab.gpu_commands", "run_on_gpu"), "gpu"),
}

# ``compare --tolerance``: judge(expected, actual, stream) -> verdict per tensor.
TOLERANCES: dict[str, Tolerance] = {
    "exact": Tolerance("bit-equal (any two NaNs equal; -0 and +0 differ)",
                       _lazy("refimpl.compare", "exact")),
    "gpu": Tolerance(_lazy("fuselab.gpu_commands", "tolerance_help"),
                     _lazy("gpu.check.agreement", "judge")),
}

# ``plan --planner``: plan(stream, profile) -> Plan; fastplan's is refimpl's when not compiled.
PLANNERS: dict[str, Callable[[Stream, DeviceProfile], Plan]] = {
    "ref": _lazy("refimpl.planner", "plan"),
    "fast": _lazy("fastplan", "plan"),
}
# ``plan --planner``: the stream reader of each planner (load_stream(path) -> Stream, validated)
# and the one taking a document (stream_from_json(text or bytes) -> Stream), for --batch.
LOADERS: dict[str, tuple[Callable[..., Stream], Callable[..., Stream]]] = {
    "ref": (_lazy("refimpl.stream", "load_stream"), _lazy("refimpl.stream", "stream_from_json")),
    "fast": (_lazy("fastplan", "load_stream"), _lazy("fastplan", "stream_from_json")),
}


def _bench_help() -> str:
    from fuselab import bench

    return (bench.__doc__ or "").splitlines()[0]


BENCHMARKS: dict[str, Benchmark] = {
    "planner": Benchmark(_bench_help, _lazy("fuselab.bench", "add_arguments"),
                         _lazy("fuselab.bench", "main")),
}


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser for every subcommand of ``COMMANDS`` (in its order). Given the
    command line, only the command it names gets its options (the others' would import what
    their help texts need)."""
    parser = argparse.ArgumentParser(
        prog="fuselab", description="burn-style kernel fusion: plan, run and check op streams.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    named = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    for name, command in COMMANDS.items():
        found = sub.add_parser(name, help=command.help, description=command.help)
        if named is None or named == name:
            command.add_arguments(found)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fuselab`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
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


def _choice(table: dict, kind: str, name: str):
    """``table[name]``, or a ``UsageError`` listing what there is."""
    if name not in table:
        raise UsageError(f"unknown {kind} {name!r} (available: {', '.join(table)})")
    return table[name]


# --- validate -------------------------------------------------------------------------------


def _validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stream", metavar="STREAM.json", help="a version-1 stream file")


def _validate(args: argparse.Namespace) -> int:
    from refimpl.stream import load_stream

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


def _run(args: argparse.Namespace) -> int:
    from fuselab import run

    backend = _choice(BACKENDS, "backend", args.backend)
    return run.run_command(args, backend.runner, backend.tolerance,
                           TOLERANCES[backend.tolerance].judge)


# --- compare --------------------------------------------------------------------------------


def _compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("expected", metavar="A.npz", help="the reference results (run --out)")
    parser.add_argument("actual", metavar="B.npz", help="the results judged against A")
    parser.add_argument("--tolerance", default="exact", choices=list(TOLERANCES),
                        help="; ".join(f"{name}: {_text(t.help)}"
                                       for name, t in TOLERANCES.items())
                        + " (default exact)")
    parser.add_argument("--stream", metavar="STREAM.json",
                        help="the stream both ran, for tolerances that follow each tensor's "
                             "ops (gpu)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object instead of the table")


def _compare(args: argparse.Namespace) -> int:
    from fuselab import compare

    return compare.compare_command(args, TOLERANCES[args.tolerance].judge)


# --- plan -----------------------------------------------------------------------------------


def _plan_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stream", metavar="STREAM.json", nargs="?",
                        help="a version-1 stream file")
    parser.add_argument("--batch", metavar="DIR|FILE.jsonl",
                        help="plan many streams in one process: every *.json file of DIR (by "
                             "name), or every line of a JSON Lines file; prints one JSON line "
                             "per stream, its plan or its error (docs/stream-format.md)")
    parser.add_argument("--device", default="metal", choices=list(PRESETS),
                        help="device profile (max_bindings, vector widths); default metal")
    parser.add_argument("--planner", default="ref",
                        help="planner implementation: ref (refimpl) or fast (fastplan, when "
                             "installed); default ref")


def _plan(args: argparse.Namespace) -> int:
    """The plan as ``plan_to_json`` (one header line, one line per step), so it can be diffed
    against the golden files directly; ``FUSELAB_LOG=basic|full`` shows the search's
    decisions on stderr."""
    from refimpl.devices import profile_named
    from refimpl.planner.stream.plan import plan_to_json

    planner = _choice(PLANNERS, "planner", args.planner)
    load, read = LOADERS[args.planner]
    if (args.stream is None) == (args.batch is None):
        raise UsageError("plan takes one STREAM.json or --batch DIR|FILE.jsonl")
    if args.batch is not None:
        from fuselab.plan_batch import plan_batch

        return plan_batch(args.batch, read, planner, profile_named(args.device), sys.stdout)
    stream = load(args.stream)
    sys.stdout.write(plan_to_json(planner(stream, profile_named(args.device))))
    return 0


# --- demo and bench -------------------------------------------------------------------------


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default="metal",
                        help="device profile to plan for (default metal, as on the seed page)")


def _demo(args: argparse.Namespace) -> int:
    from fuselab import demo

    return 1 if demo.run_demo(args.device).failures else 0


def _bench_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="benchmark", metavar="WHAT", required=True)
    for name, benchmark in BENCHMARKS.items():
        benchmark.add_arguments(sub.add_parser(name, help=_text(benchmark.help)))


def _bench(args: argparse.Namespace) -> int:
    return BENCHMARKS[args.benchmark].main(args)


COMMANDS: dict[str, Command] = {
    "validate": Command("check a stream file and report its size",
                        _validate_arguments, _validate),
    "run": Command("execute a stream and save the synced tensors", _run_arguments, _run),
    "compare": Command("compare two run --out files tensor by tensor within a tolerance",
                       _compare_arguments, _compare),
    "demo": Command("the seed page run live, checked against the oracle",
                    _demo_arguments, _demo),
    "plan": Command("print the fusion plan of a stream as JSON", _plan_arguments, _plan),
    "bench": Command("time a fuselab component (planner: refimpl vs fastplan)",
                     _bench_arguments, _bench),
    "wgsl": Command("print the WGSL of every fused kernel of a stream",
                    _lazy("fuselab.gpu_commands", "wgsl_arguments"),
                    _lazy("fuselab.gpu_commands", "wgsl_command")),
    "fuzz": Command("fuzz the planner and the kernels: find, shrink and file bugs",
                    _lazy("fuselab.fuzz.command", "add_arguments"),
                    _lazy("fuselab.fuzz.command", "fuzz_command")),
}
