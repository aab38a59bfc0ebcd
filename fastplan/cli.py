"""fastplan's part of the ``fuselab`` command line, registered as a plugin.

burn counterpart: none (burn has no CLI); SPEC §7. ``register`` is published under the
entry-point group ``fuselab.cli`` (pyproject.toml), so refimpl never imports fastplan:

* ``fuselab plan STREAM.json --planner fast``: the plan from ``fastplan.plan`` (the compiled
  planner; refimpl's when fastplan is not compiled), byte-identical to ``--planner ref``;
* ``fuselab bench planner [--workload W] [--sizes 1000,10000,100000] [--repeats N]``:
  refimpl vs fastplan on streams of realistic shape (``fastplan.bench``), as a table;
* ``fuselab demo``: fastplan's section (``fastplan.demo``).
"""

from __future__ import annotations

import argparse

__all__ = ["BENCHMARKS", "register"]

# ``fuselab bench WHAT``: the benchmark each name runs (module with ``_arguments`` / ``main``).
BENCHMARKS = {"planner": "fuselab.bench"}


def _plan_fast(stream, profile):
    import fastplan

    return fastplan.plan(stream, profile)


def _bench_arguments(parser: argparse.ArgumentParser) -> None:
    import importlib

    sub = parser.add_subparsers(dest="benchmark", metavar="WHAT", required=True)
    for name, module in BENCHMARKS.items():
        target = importlib.import_module(module)
        target.add_arguments(sub.add_parser(name, help=(target.__doc__ or "").splitlines()[0]))


def _bench(args: argparse.Namespace) -> int:
    import importlib

    return importlib.import_module(BENCHMARKS[args.benchmark]).main(args)


def register() -> None:
    """Add ``--planner fast`` to ``fuselab plan``, the ``fuselab bench`` command and
    fastplan's section of ``fuselab demo``."""
    from fastplan.demo import fastplan_section
    from refimpl import demo
    from refimpl.cli import register_command
    from refimpl.planner.cli_plan import register_planner

    register_planner("fast", _plan_fast)
    register_command("bench", "time a fuselab component (planner: refimpl vs fastplan)",
                     _bench_arguments, _bench)
    if fastplan_section not in demo.SECTIONS:
        demo.register_section(fastplan_section)
