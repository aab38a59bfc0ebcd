"""``fuselab fuzz``: the command line of the fusion fuzzer (``fuselab.fuzz.campaign``).

burn counterpart: none. Exit status: 0 nothing found (or ``--replay``: the repro passes now),
1 something found (``--replay``: it still fails), 2 bad input (``fuselab.cli``).
On a terminal a progress bar shows live counts on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from rich import progress as bar
from rich.console import Console

from fuselab.fuzz.campaign import Config, Summary, fuzz, replay
from fuselab.fuzz.checks import CHECKS, DEFAULT_CHECKS
from refimpl.devices import PRESETS
from refimpl.errors import FuselabError

__all__ = ["FuzzUsageError", "add_arguments", "fuzz_command", "parse_duration"]

_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}


class FuzzUsageError(FuselabError):
    """A ``fuselab fuzz`` option has a value that means nothing."""


def parse_duration(text: str) -> float:
    """``60s``, ``10m``, ``1h`` or plain seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|)\s*", text)
    if match is None:
        raise FuzzUsageError(f"--time {text!r}: expected a duration such as 60s, 10m or 1h")
    return float(match.group(1)) * _UNITS[match.group(2)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--time", metavar="DURATION",
                        help="run for this long (60s, 10m, 1h)")
    budget.add_argument("--count", type=int, metavar="N",
                        help="check N streams (default 200 when --time is not given)")
    budget.add_argument("--replay", metavar="DIR",
                        help="check one repro directory again: exit 1 if it still fails")
    parser.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--checks", nargs="+", metavar="CHECK",
                        help=f"checks to run, of {', '.join(CHECKS)} "
                             f"(default {' '.join(DEFAULT_CHECKS)})")
    parser.add_argument("--device", nargs="+", metavar="PROFILE", default=["metal"],
                        help=f"device profiles streams are planned for, in turn "
                             f"(of {', '.join(PRESETS)}; default metal)")
    parser.add_argument("--out", metavar="DIR", help="write one repro directory per bucket")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--planner", choices=("fast", "ref"), default="fast",
                        help="planner modules of the plan-space and cache checks "
                             "(default fast: fastplan's, refimpl's when not compiled)")
    parser.add_argument("--planner-cmd", metavar="CMD",
                        help="check an external planner: CMD reads a stream JSON on stdin, "
                             "writes a plan JSON on stdout; FUSELAB_DEVICE names the device")
    parser.add_argument("--cmd-timeout", type=float, default=10.0, metavar="S",
                        help="time limit per --planner-cmd call (default 10 s)")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="run on a Dask distributed scheduler (tcp://host:8786)")
    parser.add_argument("--shrink-time", type=float, default=30.0, metavar="S",
                        help="time to shrink each bucket's first failure (default 30 s)")
    parser.add_argument("--max-ops", type=int, default=12, help="ops per stream (default 12)")
    parser.add_argument("--long-chains", type=int, default=200, metavar="N",
                        help="one stream in N is a long element-wise chain that reaches the "
                             "op limit of a block (default 200; 0: none)")
    parser.add_argument("--stop-on-first", action="store_true",
                        help="stop at the first finding")
    parser.add_argument("--mutant", metavar="NAME", help=argparse.SUPPRESS)


def _config(args: argparse.Namespace) -> Config:
    checks = tuple(args.checks) if args.checks else DEFAULT_CHECKS
    if args.planner_cmd:
        checks = ("planner-cmd",) if not args.checks else checks
    for name in checks:
        if name not in CHECKS and name != "planner-cmd":
            raise FuzzUsageError(f"unknown check {name!r} (available: "
                                 f"{', '.join([*CHECKS, 'planner-cmd'])})")
    for name in args.device:
        if name not in PRESETS:
            raise FuzzUsageError(f"unknown device profile {name!r} (known: "
                                 f"{', '.join(PRESETS)})")
    if "planner-cmd" in checks and not args.planner_cmd:
        raise FuzzUsageError("the planner-cmd check needs --planner-cmd CMD")
    if args.jobs < 1 or (args.count is not None and args.count < 0):
        raise FuzzUsageError("--jobs must be at least 1 and --count at least 0")
    seconds = parse_duration(args.time) if args.time else None
    count = args.count if args.count is not None else (None if seconds else 200)
    if args.planner_cmd:
        from fuselab.fuzz import external  # registers the planner-cmd check  # noqa: F401
    return Config(seed=args.seed, count=count, seconds=seconds, jobs=args.jobs, checks=checks,
                  devices=tuple(args.device), out=args.out, planner=args.planner,
                  mutant=args.mutant, planner_cmd=args.planner_cmd,
                  cmd_timeout=args.cmd_timeout, shrink_seconds=args.shrink_time,
                  max_ops=args.max_ops, long_chains=args.long_chains, cluster=args.cluster,
                  stop_on_first=args.stop_on_first)


def _table(summary: Summary) -> str:
    data = summary.to_json()
    lines = [f"fuzz: {data['streams']} streams in {data['seconds']:.1f} s "
             f"({data['streams_per_s'] or 0:.1f}/s), checks {' '.join(summary.config.checks)}, "
             f"seed {summary.config.seed}",
             f"findings: {summary.found} in {len(summary.buckets)} bucket(s)"]
    for key, bucket in sorted(summary.buckets.items(), key=lambda kv: -kv[1]["count"]):
        repro = bucket.get("repro", {})
        lines.append(f"  {bucket['count']:5d}  {key}")
        lines.append(f"         {repro.get('failure', bucket['failure'])['detail'][:150]}")
        lines.append(f"         shrunk {repro.get('ops_before')} -> {repro.get('ops_after')} "
                     f"ops" + (f": {bucket['repro_dir']}" if "repro_dir" in bucket else ""))
    for note, n in sorted(summary.notes.items()):
        lines.append(f"note: {note}: {n}")
    return "\n".join(lines) + "\n"


def _replay(args: argparse.Namespace) -> int:
    meta, failure = replay(args.replay, args.cmd_timeout)
    if args.json:
        print(json.dumps({"repro": str(Path(args.replay)), "fails": failure is not None,
                          "failure": None if failure is None else failure.to_json()},
                         sort_keys=True))
    elif failure is None:
        print(f"passes now: {meta['check']} ({meta.get('bucket', '')})")
    else:
        print(f"still fails: {failure.bucket}\n  {failure.detail}")
    return 0 if failure is None else 1


def fuzz_command(args: argparse.Namespace) -> int:
    """``fuselab fuzz``: a campaign (or ``--replay``); exit 1 when anything was found."""
    if args.replay:
        return _replay(args)
    config = _config(args)
    if sys.stderr.isatty() and not args.json:
        total = config.count if config.count is not None else config.seconds
        with bar.Progress(bar.SpinnerColumn(), bar.TextColumn("{task.description}"),
                          bar.BarColumn(), bar.TimeElapsedColumn(),
                          console=Console(file=sys.stderr), transient=True) as display:
            task = display.add_task("fuzz", total=total)

            def progress(summary: Summary) -> None:
                done = summary.streams if config.count is not None else summary.seconds
                display.update(task, completed=done, description=(
                    f"{summary.streams} streams, {summary.streams / max(summary.seconds, 1e-9):.0f}"
                    f"/s, {summary.found} findings in {len(summary.buckets)} buckets"))
            summary = fuzz(config, progress)
    else:
        summary = fuzz(config)
    if args.json:
        print(json.dumps(summary.to_json(), sort_keys=True, default=str))
    else:
        sys.stdout.write(_table(summary))
    return 1 if summary.buckets else 0
