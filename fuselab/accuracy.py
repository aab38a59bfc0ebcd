"""``python -m fuselab.accuracy``: an adapter's float accuracy per op against the oracle.

burn counterpart: none. The measurement is ``gpu.check.accuracy.measure``; this prints one row per
op and dtype (or JSON) and exits 1 if any element falls outside its tolerance. It is the
measurement behind the "measured" column of ``docs/wgsl-semantics.md``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from refimpl.dtypes import DType
from gpu.check import accuracy
from gpu.check.accuracy import DOMAINS, measure
from gpu.runtime.device import default_device

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Print one row per (op, dtype); exit 1 if any element falls outside its tolerance."""
    parser = argparse.ArgumentParser(prog="python -m fuselab.accuracy",
                                     description=accuracy.__doc__)
    parser.add_argument("--samples", type=int, default=1 << 18)
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args(argv)
    device = default_device()
    dtypes = [DType.F32] + ([DType.F16] if device.has_f16 else [])
    print(f"# {device.summary()}")
    rows = [measure(device, name, dtype, args.samples) for name in DOMAINS for dtype in dtypes]
    for row in rows:
        print(json.dumps(asdict(row)) if args.json else
              f"{row.op:20s} {row.dtype:4s} max_ulp={row.max_ulp:<8d} "
              f"max_abs={row.max_abs:<10.3g} outside={row.outside_tolerance}")
    return 1 if any(row.outside_tolerance for row in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
