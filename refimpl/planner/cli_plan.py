"""``fuselab plan STREAM.json [--device PROFILE] [--planner ref]``: the plan as canonical JSON.

burn counterpart: none (burn has no CLI); SPEC §7. The output is ``plan_to_json`` of the plan
(one header line, one line per step), so it can be diffed against the golden files directly.
Set ``FUSELAB_LOG=basic|full`` to see the search's decisions on stderr.

Planners are looked up in ``PLANNERS``: ``ref`` is refimpl's ``plan``; fastplan adds ``fast``
through ``register_planner`` (from its ``fuselab.cli`` plugin), since refimpl never imports it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from refimpl.cli import UsageError, register_command
from refimpl.devices import PRESETS, DeviceProfile, profile_named
from refimpl.planner import plan
from refimpl.planner.plan import Plan, plan_to_json
from refimpl.stream import Stream, load_stream

__all__ = ["PLANNERS", "register_planner"]

PlannerFn = Callable[[Stream, DeviceProfile], Plan]

PLANNERS: dict[str, PlannerFn] = {"ref": plan}


def register_planner(name: str, planner: PlannerFn) -> None:
    """Make ``fuselab plan --planner NAME`` call ``planner(stream, profile)``."""
    if name in PLANNERS:
        raise UsageError(f"planner {name!r} is already registered")
    PLANNERS[name] = planner


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stream", metavar="STREAM.json", help="a version-1 stream file")
    parser.add_argument("--device", default="metal", choices=list(PRESETS),
                        help="device profile (max_bindings, vector widths); default metal")
    parser.add_argument("--planner", default="ref",
                        help="planner implementation: ref (refimpl) or fast (fastplan, when "
                             "installed); default ref")


def _plan(args: argparse.Namespace) -> int:
    planner = PLANNERS.get(args.planner)
    if planner is None:
        raise UsageError(f"unknown planner {args.planner!r} (available: "
                         f"{', '.join(PLANNERS)})")
    stream = load_stream(args.stream)
    sys.stdout.write(plan_to_json(planner(stream, profile_named(args.device))))
    return 0


register_command("plan", "print the fusion plan of a stream as JSON", _arguments, _plan)
