"""A planner "port" for ``fuselab fuzz --planner-cmd``: fastplan behind the conformance
protocol (a stream JSON on stdin, the plan JSON on stdout, the device in ``FUSELAB_DEVICE``).

burn counterpart: none. A port in another language implements the same three lines of I/O
around its own planner. ``--bug skip-last`` drops the last step of every plan of more than one
step, to show what a non-conforming port's findings look like.

    fuselab fuzz --planner-cmd "python3 docs/examples/fastplan_port.py" --count 200
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import fastplan
from refimpl.planner.stream.plan import Plan, plan_to_json
from refimpl.stream import stream_from_json


def main() -> int:
    stream = stream_from_json(sys.stdin.read())
    plan = fastplan.plan(stream, os.environ.get("FUSELAB_DEVICE", "metal"))
    if "--bug" in sys.argv and sys.argv[sys.argv.index("--bug") + 1] == "skip-last" \
            and len(plan.steps) > 1:
        plan = Plan(plan.device, plan.steps[:-1])
    sys.stdout.write(plan_to_json(plan))
    return 0


if __name__ == "__main__":
    sys.exit(main())
