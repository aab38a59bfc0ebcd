"""``fuselab compare A.npz B.npz``: two ``run --out`` files, tensor by tensor, within a tolerance.

burn counterpart: none. The comparison itself is ``refimpl.compare`` (measurements, verdicts);
here are the ``run --out`` files it reads and the table ``compare`` and ``run --check`` print.
"""

from __future__ import annotations

import argparse
import json
import zipfile

import numpy as np

from refimpl.compare import Judge, TensorComparison, compare_results
from refimpl.errors import ResultsFileError
from refimpl.stream import load_stream

__all__ = ["comparison_table", "load_results", "compare_command"]


def comparison_table(rows: tuple[TensorComparison, ...], tolerance: str) -> str:
    """The text table: one line per tensor, then a count of those outside the tolerance."""
    header = ("tensor", "shape", "dtype", "max_abs_err", "max_ulp", "verdict")
    lines = [header] + [(
        f"t{r.tensor}", "-" if r.shape is None else str(list(r.shape)), r.dtype,
        "-" if r.max_abs is None else f"{r.max_abs:.3g}",
        "-" if r.max_ulp is None else str(r.max_ulp),
        ("ok" if r.ok else "MISMATCH") + (f": {r.detail}" if r.detail else ""))
        for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip()
            for line in lines]
    bad = sum(not r.ok for r in rows)
    text.append(f"{tolerance}: {len(rows) - bad} of {len(rows)} tensors within, {bad} not")
    return "\n".join(text) + "\n"


def load_results(path: str) -> dict[int, np.ndarray]:
    """The tensors of a ``run --out`` file by id (arrays named ``t<id>``)."""
    try:
        saved = np.load(path, allow_pickle=False)
    except (ValueError, EOFError, zipfile.BadZipFile):
        saved = None
    if not isinstance(saved, np.lib.npyio.NpzFile):
        raise ResultsFileError(f"{path}: not an .npz archive (fuselab run --out writes one)")
    with saved:
        results = {}
        for name in saved.files:
            if not (name.startswith("t") and name[1:].isdigit()):
                raise ResultsFileError(f"{path}: array {name!r} is not named t<id>")
            try:
                results[int(name[1:])] = saved[name]
            except ValueError as exc:  # an object array (pickled), or a damaged entry
                raise ResultsFileError(f"{path}: array {name!r} cannot be read ({exc})") \
                    from None
        return results


def compare_command(args: argparse.Namespace, judge: Judge) -> int:
    """Judge ``args.actual`` against ``args.expected`` by ``judge`` (the tolerance named
    ``args.tolerance``) and print the table or JSON; exit 0 when every tensor is within it,
    1 otherwise."""
    stream = load_stream(args.stream) if args.stream else None
    rows = compare_results(load_results(args.expected), load_results(args.actual), judge, stream)
    ok = all(r.ok for r in rows)
    if args.json:
        print(json.dumps({"tolerance": args.tolerance, "ok": ok,
                          "tensors": [r.row() for r in rows]}, sort_keys=True))
    else:
        print(comparison_table(rows, args.tolerance), end="")
    return 0 if ok else 1
