"""The planner benchmark: refimpl vs fastplan on streams of 1k, 10k and 100k ops.

    .venv/bin/python bench/planner.py [--workload W] [--sizes 1000,10000,100000] [--repeats N]

is ``fuselab bench planner`` (the code is ``fuselab.bench``); see docs/benchmarks.md.
OpenBLAS threads are kept to one (they would spin beside the planner and skew timings).
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fuselab import bench  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench/planner.py", description=__doc__.splitlines()[0])
    bench.add_arguments(parser)
    return bench.main(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
