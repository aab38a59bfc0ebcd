"""Fuzz refimpl's and fastplan's planners with generated garbage: both must agree on every input.

burn counterpart: none (a robustness tool for the fastplan twin, docs/fastplan.md "Boundary").
``tests/fastplan/test_boundary.py`` checks the same property at hypothesis CI depth; this runs
it for millions of inputs.

Usage::

    python3 tools/fuzz_planners.py --count 1000000 --jobs 16 --out OUT
    python3 tools/fuzz_planners.py --count 20000 --jobs 2 --out /tmp/fuzz
    python3 tools/fuzz_planners.py --seed 0 --reproduce 1234   # replay input 1234, tracebacks

Input ``i`` is a function of ``i`` and ``--seed`` (and ``--pool-draws``, ``--max-items``,
``--kinds``): ``tools/fuzz_inputs.py`` mutates valid streams and the bad-input catalogue, as JSON
or as Python objects, and picks a device preset. JSON goes
through ``stream_from_json(validate=False)``: a refusal is counted (``loader-refused``), not
planned. Every input also goes through fastplan's compiled reader and checker
(``fastplan.stream_from_json``, with and without validation, ``fastplan.validate_stream`` for
Python objects): any difference from refimpl's (the stream, or the error's class, op index,
field and message) is a ``difference`` finding with detail ``reader``. Every stream that loads is planned by both planners, valid or not (``validate_stream``
only classifies it: ``valid`` / ``invalid``). The outcome is ``equal-plan`` (``==`` and
``plan_to_json`` equal), ``same-error`` (the same exception class) or a finding:

* ``difference`` — one planned and the other raised, the plans differ, or the classes differ;
* ``timeout`` — the input took more than ``--timeout-s`` (SIGALRM in the worker; the detail
  says which stage: load, validate, refimpl, fastplan);
* ``crash`` — the worker died on the input (detail: the signal, e.g. SIGSEGV, or exit code);
* ``hang`` — the worker's index did not move for ``--hang-s``: it was killed;
* ``loader-unexpected`` — the stream loader raised something other than a ``StreamError``.

The reach says where fastplan planned: ``compiled`` (its own planner throughout), ``fallback``
(its boundary, ``fastplan._keys.BoundaryError``, handed the stream to refimpl, or its compiled
launch planning failed and handed the executed steps to refimpl's walk), ``loader`` (not
planned) or ``unknown`` (crash, hang, timeout). Workers (``tools/fuzz_workers.py``) are forked:
a dead or stuck one is replaced and its chunk goes on after the lost index; every index is
counted exactly once (``all_accounted``).

Writes ``OUT/summary.json`` (counts by outcome, reach, generator and validity; inputs per second
after the pool is built; command; git commit, dirty flag and a digest of fastplan's compiled
modules; versions) and, per finding (the first ``SAVED_FINDINGS``), ``OUT/findings/<index>.txt``
(both outcomes, the replay command) with the input as ``.json`` or ``.pkl``. Prints a table.
Exit status: 0 clean, 1 findings (or an index not accounted for), 2 usage.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import platform
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.pop("FUSELAB_LOG", None)  # the planners' decision log would flood the output

import fastplan
from refimpl import errors
from refimpl.planner import plan as reference_plan
from refimpl.planner import plan_to_json
from refimpl.stream import Stream, stream_from_json, stream_to_json
from refimpl.validate import validate_stream
from tools.fuzz_inputs import (GENERATORS, POOL_DRAWS, POOL_MAX_ITEMS, FuzzInput, Pool,
                               build_pool, make_input)
from tools.fuzz_workers import Config, run_checks

__all__ = ["FINDINGS", "Checker", "Result", "evaluate", "main", "summarize", "table"]

FINDINGS = ("difference", "timeout", "crash", "hang", "loader-unexpected")
REACHES = ("compiled", "fallback", "loader", "unknown")
SAVED_FINDINGS = 200  # findings written to disk and listed in the summary, at most

# --- evaluation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One input's outcome; the counts are kept by ``key``."""

    kind: str  # the generator
    outcome: str  # equal-plan, same-error, loader-refused, or one of FINDINGS
    detail: str  # the error class, timeout stage, signal, ...
    reach: str  # one of REACHES
    validity: str  # valid, invalid, refused (by the loader), validator:<class>, unknown
    note: str = ""  # a finding's: what each planner gave

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        return (self.kind, self.outcome, self.detail, self.reach, self.validity)

    @property
    def finding(self) -> bool:
        return self.outcome in FINDINGS


_STATE = {"kind": "?", "stage": "?", "fallbacks": 0}  # where this process's input is


def count_fallbacks() -> None:
    """Count fastplan's hand-overs to refimpl: wrap ``fastplan.planner._reference_plan``
    (the whole stream) and ``_reference_launch`` (launch planning only), module globals the
    compiled ``plan`` looks up at each call."""
    import fastplan.planner as compiled

    for name in ("_reference_plan", "_reference_launch"):
        current = getattr(compiled, name)
        original = getattr(current, "__wrapped__", current)
        setattr(compiled, name, _counted(original))


def _counted(original: Callable) -> Callable:
    def counted(*args: Any) -> Any:
        _STATE["fallbacks"] += 1
        return original(*args)

    counted.__wrapped__ = original
    return counted


def _planned(planner: Callable, stream: Stream, device: str) -> tuple:
    """``("ok", plan, canonical JSON)`` or ``("raised", class, message)``."""
    try:
        result = planner(stream, device)
        return ("ok", result, plan_to_json(result))
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("raised", type(exc), str(exc)[:300])


def _validity(stream: Stream) -> str:
    _STATE["stage"] = "validate"
    try:
        validate_stream(stream)
        return "valid"
    except errors.StreamError:
        return "invalid"
    except Exception as exc:  # noqa: BLE001 - counted: the validator should raise StreamError
        return f"validator:{type(exc).__name__}"


def _loaded(item: FuzzInput) -> Stream | Result:
    """The stream of ``item`` (JSON parsed without validation), or the loader's refusal."""
    if isinstance(item.source, Stream):
        return item.source
    try:
        return stream_from_json(item.source, validate=False)
    except errors.StreamError as exc:
        return Result(item.kind, "loader-refused", type(exc).__name__, "loader", "refused")
    except Exception as exc:  # noqa: BLE001 - a finding: the loader raises StreamError only
        return Result(item.kind, "loader-unexpected", type(exc).__name__, "loader", "refused",
                      repr(exc)[:300])


def _read(read: Any, source: Any, validate: bool) -> tuple:
    """What a stream reader gives: the stream's canonical text, or the error's particulars."""
    try:
        return ("ok", stream_to_json(read(source, validate=validate)))
    except errors.StreamError as exc:
        return ("raised", type(exc).__name__, exc.op_index, exc.field, str(exc))
    except Exception as exc:  # noqa: BLE001 - compared: both readers raise alike
        return ("raised", type(exc).__name__)


def _checked(check: Any, stream: Stream) -> tuple:
    try:
        check(stream)
        return ("valid",)
    except errors.StreamError as exc:
        return ("raised", type(exc).__name__, exc.op_index, exc.field, str(exc))
    except Exception as exc:  # noqa: BLE001 - compared: both checkers raise alike
        return ("raised", type(exc).__name__)


def _reader_difference(item: FuzzInput) -> str | None:
    """How fastplan's reader (or checker) differs from refimpl's on ``item``, if it does."""
    if isinstance(item.source, Stream):
        pairs = [(_checked(fastplan.validate_stream, item.source),
                  _checked(validate_stream, item.source))]
    else:
        pairs = [(_read(fastplan.stream_from_json, item.source, validate),
                  _read(stream_from_json, item.source, validate)) for validate in (False, True)]
    for fast, ref in pairs:
        if fast != ref:
            return f"refimpl: {ref}\nfastplan: {fast}"[:2000]
    return None


def evaluate(item: FuzzInput) -> Result:
    """Load, classify and plan ``item`` with both planners; compare the outcomes."""
    from fastplan.planner import plan as fast_plan

    _STATE.update(kind=item.kind, stage="reader")
    differs = _reader_difference(item)
    if differs is not None:
        return Result(item.kind, "difference", "reader", "loader", "unknown", differs)
    _STATE.update(stage="load")
    stream = _loaded(item)
    if isinstance(stream, Result):
        return stream
    validity = _validity(stream)
    _STATE["stage"] = "refimpl"
    ref = _planned(reference_plan, stream, item.device)
    _STATE["stage"], before = "fastplan", _STATE["fallbacks"]
    fast = _planned(fast_plan, stream, item.device)
    reach = "fallback" if _STATE["fallbacks"] != before else "compiled"
    if ref[0] == fast[0] == "ok" and ref[1] == fast[1] and ref[2] == fast[2]:
        return Result(item.kind, "equal-plan", "", reach, validity)
    if ref[0] == fast[0] == "raised" and ref[1] is fast[1]:
        return Result(item.kind, "same-error", ref[1].__name__, reach, validity)
    return Result(item.kind, "difference", "", reach, validity,
                  f"refimpl: {_shown(ref)}\nfastplan: {_shown(fast)}")


def _shown(outcome: tuple) -> str:
    return "plan\n" + outcome[2] if outcome[0] == "ok" else f"{outcome[1].__name__}: {outcome[2]}"


class Checker:
    """Per index, what a worker runs (``tools.fuzz_workers.Checks``): make the input and
    evaluate it."""

    def __init__(self, seed: int, pool: Pool, kinds: tuple[str, ...] = tuple(GENERATORS)):
        self.seed, self.pool, self.kinds = seed, pool, kinds

    def __call__(self, index: int) -> Result:
        _STATE.update(kind="?", stage="generate")
        return evaluate(make_input(self.seed, index, self.pool, self.kinds))

    def lost(self, index: int, outcome: str, detail: str) -> Result:
        """A timeout (in the worker: the stage it was at) or a crash or hang (in the parent:
        the input is made again for its kind)."""
        if outcome == "timeout":
            return Result(_STATE["kind"], outcome, _STATE["stage"], "unknown", "unknown")
        kind = make_input(self.seed, index, self.pool, self.kinds).kind
        return Result(kind, outcome, detail, "unknown", "unknown")


# --- reporting ---------------------------------------------------------------------------------


def _tally(counts: Counter, *at: int) -> dict:
    """The counts summed by the key fields at ``at`` (nested dicts, sorted keys)."""
    tree: dict = {}
    for key, n in sorted(counts.items()):
        node = tree
        for i in at[:-1]:
            node = node.setdefault(key[i] or "-", {})
        node[key[at[-1]] or "-"] = node.get(key[at[-1]] or "-", 0) + n
    return tree


def summarize(counts: Counter, accounted: bytearray) -> dict:
    """The figures of a run, from its counts per ``Result.key`` and its accounting."""
    total = sum(counts.values())
    reach = _tally(counts, 3)
    return {
        "count": len(accounted),
        "accounted": total,
        "all_accounted": total == len(accounted) and accounted.count(0) == 0,
        "findings": sum(n for key, n in counts.items() if key[1] in FINDINGS),
        "outcomes": _tally(counts, 1, 2),
        "reach": reach,
        "reach_share": {r: round(n / total, 4) for r, n in reach.items()} if total else {},
        "outcome_by_reach": _tally(counts, 1, 3),
        "by_generator": _tally(counts, 0, 3),
        "validity": _tally(counts, 4),
    }


def table(counts: Counter) -> str:
    """Outcome (with its detail) x reach, then each generator's reach."""
    rows: dict[str, Counter] = {}
    kinds: dict[str, Counter] = {}
    for (kind, outcome, detail, reach, _), n in counts.items():
        rows.setdefault(f"{outcome} {detail}".strip(), Counter())[reach] += n
        kinds.setdefault(kind, Counter())[reach] += n
    lines = [f"{'outcome':<40}" + "".join(f"{r:>10}" for r in REACHES) + f"{'total':>10}"]
    for label in sorted(rows):
        row = rows[label]
        lines.append(f"{label[:39]:<40}" + "".join(f"{row[r]:>10}" for r in REACHES)
                     + f"{row.total():>10}")
    every = sum(rows.values(), Counter())
    lines.append(f"{'all':<40}" + "".join(f"{every[r]:>10}" for r in REACHES)
                 + f"{every.total():>10}")
    lines.append("")
    for kind in sorted(kinds):
        row = kinds[kind]
        shares = ", ".join(f"{r} {row[r] / row.total():.1%}" for r in REACHES if row[r])
        lines.append(f"{kind:<14}{row.total():>9} inputs: {shares}")
    return "\n".join(lines)


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _environment() -> dict:
    """Versions, and what identifies the code: the commit, whether the tree differs from it,
    and a digest of fastplan's compiled modules (a dirty tree is rebuilt at will)."""
    build = hashlib.sha256()
    for path in sorted(Path(fastplan.__file__).parent.glob("*.so")):
        build.update(path.name.encode() + path.read_bytes())
    status = _git("status", "--porcelain", "--untracked-files=no")
    versions = {}
    for module in ("Cython", "numpy", "hypothesis"):
        try:
            versions[module.lower()] = __import__(module).__version__
        except ImportError:
            versions[module.lower()] = None
    return {"git_commit": _git("rev-parse", "HEAD") or None,
            "git_dirty": bool(status) if status is not None else None,
            "fastplan_build": build.hexdigest()[:16], "python": platform.python_version(),
            "implementation": platform.python_implementation(), **versions,
            "fastplan_compiled": fastplan.COMPILED, "cpu_count": os.cpu_count()}


class _Findings:
    """Writes each finding (the first ``SAVED_FINDINGS``) under ``out/findings``."""

    def __init__(self, out: Path, replay: str, checker: Checker) -> None:
        self.folder, self.replay, self.checker = out / "findings", replay, checker
        self.listed: list[dict] = []

    def __call__(self, index: int, result: Result) -> None:
        if len(self.listed) >= SAVED_FINDINGS:
            return
        item = make_input(self.checker.seed, index, self.checker.pool, self.checker.kinds)
        self.folder.mkdir(parents=True, exist_ok=True)
        stem = self.folder / f"{index:09d}"
        saved, replay = _save_input(item.source, stem), f"{self.replay} --reproduce {index}"
        stem.with_suffix(".txt").write_text(
            f"index {index}, generator {item.kind}, device {item.device}\n"
            f"outcome: {result.outcome} {result.detail} (reach {result.reach}, "
            f"{result.validity})\ninput: {saved}\nreplay: {replay}\n\n{result.note}\n\n"
            f"input repr:\n{item.source!r}\n")
        self.listed.append({"index": index, "generator": item.kind, "device": item.device,
                            "outcome": result.outcome, "detail": result.detail,
                            "input": saved, "replay": replay})


def _save_input(source: Any, stem: Path) -> str:
    if isinstance(source, str | bytes):
        stem.with_suffix(".json").write_bytes(source.encode() if isinstance(source, str)
                                              else source)
        return stem.with_suffix(".json").name
    try:
        stem.with_suffix(".pkl").write_bytes(pickle.dumps(source))
        return stem.with_suffix(".pkl").name
    except Exception as exc:  # noqa: BLE001 - some garbage does not pickle: the repr stays
        return f"not picklable ({type(exc).__name__}): see the repr below"


class _Progress:
    """rich's bar on a terminal, a plain line every 10 s otherwise."""

    def __init__(self, count: int, mode: str) -> None:
        self.count, self.started, self.last, self.bar = count, time.monotonic(), 0.0, None
        if mode == "rich" or (mode == "auto" and sys.stderr.isatty()):
            try:
                from rich.progress import Progress
            except ImportError:
                Progress = None
            if Progress is not None:  # refreshed by hand: no thread in a forking process
                self.bar = Progress(auto_refresh=False)
                self.task = self.bar.add_task("fuzzing", total=count)
                self.bar.start()
        self.plain = mode != "none" and self.bar is None

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if self.bar is not None:
            self.bar.update(self.task, completed=done)
            self.bar.refresh()
        elif self.plain and (now - self.last >= 10 or done == self.count):
            rate = done / max(now - self.started, 1e-9)
            eta = f"{(self.count - done) / rate:.0f} s" if rate else "?"
            print(f"[{done / max(self.count, 1):6.1%}] {done}/{self.count}  {rate:.0f}/s  "
                  f"eta {eta}", file=sys.stderr, flush=True)
            self.last = now

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


# --- command line ------------------------------------------------------------------------------


def _arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[7:12]))
    add = parser.add_argument
    add("--count", type=int, default=10_000, help="inputs: indices 0..COUNT-1 (default 10000)")
    add("--seed", type=int, default=0, help="the run's seed (default 0)")
    add("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPUs)")
    add("--timeout-s", type=float, default=10.0, help="time limit per input (default 10)")
    add("--hang-s", type=float, help="a worker whose index does not move this long is killed "
                                     "and the input counted as a hang (default 2 x timeout + 10)")
    add("--chunk", type=int, default=250, help="indices a worker is given at once (default 250)")
    add("--pool-draws", type=int, default=POOL_DRAWS,
        help=f"streams hypothesis draws for the pool (default {POOL_DRAWS})")
    add("--max-items", type=int, default=POOL_MAX_ITEMS,
        help=f"longest pool stream, in items (default {POOL_MAX_ITEMS}; fewer: faster inputs)")
    add("--kinds", default=",".join(GENERATORS),
        help=f"generators, comma-separated (default all: {','.join(GENERATORS)})")
    add("--out", type=Path, default=Path("fuzz-out"),
        help="where summary.json and findings/ go (default ./fuzz-out)")
    add("--progress", choices=("auto", "rich", "plain", "none"), default="auto",
        help="auto: a rich bar on a terminal, plain lines otherwise")
    add("--reproduce", type=int, metavar="INDEX",
        help="replay one input here (same --seed, --pool-draws, --max-items, --kinds), "
             "with tracebacks")
    return parser


def reproduce(checker: Checker, index: int) -> int:
    """Print input ``index`` and what each planner makes of it, tracebacks included."""
    from fastplan.planner import plan as fast_plan

    item = make_input(checker.seed, index, checker.pool, checker.kinds)
    print(f"index {index}, generator {item.kind}, device {item.device}\n{item.source!r}\n")
    stream = _loaded(item)
    if isinstance(stream, Result):
        print(f"refused by the loader: {stream.detail} {stream.note}")
        return int(stream.finding)
    print(f"validity: {_validity(stream)}")
    for name, planner in (("refimpl", reference_plan), ("fastplan", fast_plan)):
        print(f"--- {name}", flush=True)
        try:
            print(plan_to_json(planner(stream, item.device)))
        except Exception:  # noqa: BLE001 - shown
            traceback.print_exc(file=sys.stdout)
    result = evaluate(item)
    print(f"--- outcome: {result.outcome} {result.detail} (reach {result.reach})")
    return int(result.finding)


def main(argv: list[str] | None = None) -> int:
    args = _arguments().parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    if not kinds or any(k not in GENERATORS for k in kinds):
        print(f"--kinds: choose among {', '.join(GENERATORS)}", file=sys.stderr)
        return 2
    if not fastplan.COMPILED:
        print("fastplan is not compiled (make build): there is nothing to compare",
              file=sys.stderr)
        return 2
    checker = Checker(args.seed, build_pool(args.seed, args.pool_draws, args.max_items), kinds)
    count_fallbacks()
    if args.reproduce is not None:
        return reproduce(checker, args.reproduce)
    config = Config(args.count, max(args.jobs, 1), args.timeout_s,
                    args.hang_s if args.hang_s is not None else 2 * args.timeout_s + 10,
                    max(args.chunk, 1))
    replay = (f"python3 tools/fuzz_planners.py --seed {args.seed} --pool-draws "
              f"{args.pool_draws} --max-items {args.max_items} --kinds {','.join(kinds)}")
    findings, progress = _Findings(args.out, replay, checker), _Progress(args.count, args.progress)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        counts, accounted = run_checks(config, checker, findings, progress)
    finally:
        progress.close()
    seconds = time.monotonic() - started
    summary = {"command": [Path(sys.executable).name, *sys.argv], "seed": args.seed,
               "jobs": config.jobs, "generators": list(kinds), "timeout_s": config.timeout_s,
               "hang_s": config.hang_s, "pool_streams": len(checker.pool.streams),
               "seconds": round(seconds, 2), "inputs_per_s": round(args.count / seconds, 1),
               **summarize(counts, accounted), **_environment(),
               "listed_findings": findings.listed}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(table(counts))
    print(f"\n{args.count} inputs in {seconds:.1f} s ({summary['inputs_per_s']}/s, "
          f"{config.jobs} jobs); findings: {summary['findings']}; all accounted: "
          f"{summary['all_accounted']}; {args.out / 'summary.json'}")
    return 0 if summary["findings"] == 0 and summary["all_accounted"] else 1


if __name__ == "__main__":
    sys.exit(main())
