"""A fuzz campaign: streams checked in chunks (in this process, in worker processes or on a Dask
cluster), findings merged by bucket, the first of each bucket shrunk and saved.

burn counterpart: none. ``fuzz(config)`` is the Python API under ``fuselab fuzz``.

Work is cut into chunks of stream indices; ``run_chunk`` checks one chunk and returns its
counts and, per bucket, the lowest-index failure. With ``--count`` the chunks are fixed, so a
run is reproducible from its seed whatever ``--jobs`` is; with ``--time`` chunks are handed
out until the time is up. A bucket's first failure (lowest index) is shrunk
(``fuselab.fuzz.shrink``) and written as a repro directory (``fuselab.fuzz.repro``) under
``--out``. With ``--planner-cmd`` the golden corpus is checked before the generated streams.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from fuselab.fuzz.checks import (
    DEFAULT_CHECKS,
    PLAN_SPACE_SAMPLE,
    Case,
    Failure,
    Harness,
    run_checks,
)
from fuselab.fuzz.plans import Planners, variants_for
from refimpl.stream import Stream, stream_from_json, stream_to_json

__all__ = ["Config", "Summary", "case_for", "check_case", "fuzz", "replay", "run_chunk"]

SHRUNK_FULLY = 8  # buckets shrunk with the whole --shrink-time each


@dataclass(frozen=True)
class Config:
    """One campaign's settings (the ``fuselab fuzz`` options)."""

    seed: int = 0
    count: int | None = 200
    seconds: float | None = None
    jobs: int = 1
    checks: tuple[str, ...] = DEFAULT_CHECKS
    devices: tuple[str, ...] = ("metal",)
    out: str | None = None
    planner: str = "fast"
    mutant: str | None = None
    planner_cmd: str | None = None
    cmd_timeout: float = 10.0
    shrink_seconds: float = 30.0
    max_ops: int = 12
    long_chains: int = 200
    cluster: str | None = None
    stop_on_first: bool = False
    chunk: int | None = None


@dataclass
class Summary:
    """What a campaign found and how fast it went (``--json`` prints ``to_json()``)."""

    config: Config
    streams: int = 0
    seconds: float = 0.0
    buckets: dict[str, dict] = field(default_factory=dict)
    coverage: dict[str, Counter] = field(default_factory=dict)
    notes: Counter = field(default_factory=Counter)
    check_seconds: Counter = field(default_factory=Counter)
    first_found_s: float | None = None

    @property
    def found(self) -> int:
        return sum(b["count"] for b in self.buckets.values())

    def to_json(self) -> dict:
        return {
            "config": {k: v for k, v in asdict(self.config).items()},
            "streams": self.streams, "seconds": round(self.seconds, 3),
            "streams_per_s": round(self.streams / self.seconds, 2) if self.seconds else None,
            "findings": self.found, "first_found_s": self.first_found_s,
            "buckets": self.buckets,
            "coverage": {k: dict(sorted(v.items())) for k, v in self.coverage.items()},
            "notes": dict(self.notes),
            "check_seconds": {k: round(v, 3) for k, v in self.check_seconds.items()},
        }


# --- one worker -------------------------------------------------------------------------------

_STATE: dict[str, Any] = {}


def _harness(config: Config) -> Harness:
    """This process's harness (the mutant applied once per process)."""
    key = (config.mutant, config.planner, config.planner_cmd, config.cmd_timeout)
    if _STATE.get("key") != key:
        if config.mutant:
            from fuselab.fuzz.mutants import apply

            apply(config.mutant)
        external = None
        if config.planner_cmd:
            from fuselab.fuzz.external import ExternalPlanner

            external = ExternalPlanner(config.planner_cmd, config.cmd_timeout)
        _STATE.update(key=key, harness=Harness(Planners(config.planner), external))
    return _STATE["harness"]


def case_for(config: Config, index: int) -> tuple[Case, str]:
    """Stream ``index`` of the campaign as a case, and what its input values are."""
    from fuselab.fuzz.generate import draw_stream  # hypothesis: imported when fuzzing only

    drawn = draw_stream(config.seed, index, config.max_ops, config.long_chains)
    device = config.devices[index % len(config.devices)]
    rng = np.random.default_rng([config.seed, index, 1])
    pool = variants_for(device)
    variants = tuple(str(v) for v in rng.choice(pool, min(PLAN_SPACE_SAMPLE, len(pool)),
                                                replace=False))
    return Case(drawn.stream, device, variants, drawn.values != "finite"), drawn.values


def _coverage(case: Case, values: str, coverage: dict[str, Counter]) -> None:
    coverage.setdefault("values", Counter())[values] += 1
    ops = coverage.setdefault("ops", Counter())
    for op in case.stream.ops:
        ops[op.op.kind.name.lower()] += 1
    reference = case.memo.get("reference")
    if reference is not None:
        fusers = coverage.setdefault("fusers", Counter())
        for step in reference[2].steps:
            fusers[step.fuser or "unfused"] += 1
    from refimpl.strategies.coverage import stream_classes

    classes = coverage.setdefault("classes", Counter())
    for name in stream_classes(case.stream, reference[1] if reference else ()):
        classes[name] += 1


def run_chunk(config: Config, indices: list, started: float,
              corpus: list | None = None) -> dict:
    """Check the streams ``indices`` (or the named ``corpus`` streams): counts, coverage,
    and per bucket the count and lowest-index failure (with its stream JSON)."""
    h = _harness(config)
    deadline = None if config.seconds is None else started + config.seconds
    result: dict[str, Any] = {"streams": 0, "buckets": {}, "coverage": {}}
    h.notes.clear()
    h.seconds.clear()
    items = corpus if corpus is not None else indices
    for item in items:
        if deadline is not None and time.time() >= deadline:
            break
        if corpus is not None:
            name, stream = item
            case, values = Case(stream, config.devices[0]), "golden"
        else:
            name = item
            case, values = case_for(config, item)
        failure = run_checks(case, h, config.checks)
        result["streams"] += 1
        _coverage(case, values, result["coverage"])
        if failure is None:
            continue
        bucket = result["buckets"].setdefault(failure.bucket, {"count": 0})
        bucket["count"] += 1
        if "index" not in bucket:
            bucket.update(index=name, failure=failure.to_json(), device=case.device,
                          nonfinite=case.nonfinite, stream=stream_to_json(case.stream),
                          found_s=round(time.time() - started, 3))
        if config.stop_on_first:
            break
    result["notes"], result["seconds"] = dict(h.notes), dict(h.seconds)
    return result


def check_case(case: Case, config: Config) -> Failure | None:
    """Run the campaign's checks on one case in this process."""
    return run_checks(case, _harness(config), config.checks)


def replay(directory: str | Path, cmd_timeout: float = 10.0) -> tuple[dict, Failure | None]:
    """A repro directory's meta and its check's failure now (``None``: it passes)."""
    from fuselab.fuzz.repro import load_repro

    _, meta, case = load_repro(directory)
    if meta.get("planner_cmd"):
        from fuselab.fuzz import external  # registers the planner-cmd check  # noqa: F401
    config = Config(checks=(meta["check"],), planner=meta.get("planner", "fast"),
                    mutant=meta.get("mutant"), planner_cmd=meta.get("planner_cmd"),
                    cmd_timeout=cmd_timeout)
    return meta, check_case(case, config)


def shrink_bucket(config: Config, bucket: dict) -> dict:
    """Shrink a bucket's first failure; the repro's stream JSON, failure and sizes."""
    from fuselab.fuzz.shrink import shrink, size

    h = _harness(config)
    stream = stream_from_json(bucket["stream"])
    failure = Failure(**{k: v for k, v in bucket["failure"].items() if k != "bucket"})
    variants = (failure.variant,) if failure.variant != "default" else ()
    checks = (failure.check,)

    def fails(candidate: Stream) -> Failure | None:
        return run_checks(Case(candidate, bucket["device"], variants, bucket["nonfinite"]), h,
                          checks)

    small, small_failure, tries = shrink(stream, failure, fails, config.shrink_seconds)
    external_plan = None
    if failure.check == "planner-cmd" and h.external is not None:
        fails(small)
        external_plan = h.external.last_output
    adapter = h.gpu().info() if failure.check == "gpu" else None
    return {"stream": stream_to_json(small), "failure": small_failure.to_json(),
            "ops_before": size(stream), "ops_after": size(small), "shrink_checks": tries,
            "adapter": adapter, "external_plan": external_plan}


# --- the campaign -----------------------------------------------------------------------------


def _merge(summary: Summary, result: dict) -> list[str]:
    """Fold a chunk result into ``summary``; the buckets seen for the first time."""
    summary.streams += result["streams"]
    summary.notes.update(result["notes"])
    summary.check_seconds.update(result["seconds"])
    for name, counts in result["coverage"].items():
        summary.coverage.setdefault(name, Counter()).update(counts)
    new = []
    for key, bucket in result["buckets"].items():
        mine = summary.buckets.get(key)
        if mine is None:
            summary.buckets[key] = dict(bucket)
            new.append(key)
        else:
            mine["count"] += bucket["count"]
            if _order(bucket["index"]) < _order(mine["index"]):
                mine.update({k: v for k, v in bucket.items() if k != "count"})
        found = bucket.get("found_s")
        if found is not None and (summary.first_found_s is None or
                                  found < summary.first_found_s):
            summary.first_found_s = found
    return new


def _order(index: Any) -> tuple:
    return (0, str(index)) if isinstance(index, str) else (1, index)


def _chunks(config: Config) -> list[list[int]]:
    if config.count is None:
        return []
    size = config.chunk or max(1, min(25, config.count // (4 * max(config.jobs, 1)) or 1))
    return [list(range(k, min(k + size, config.count))) for k in range(0, config.count, size)]


def fuzz(config: Config, progress: Callable[[Summary], None] | None = None) -> Summary:
    """Run a campaign; findings shrunk and, with ``config.out``, written as repros."""
    from fuselab.fuzz.pool import executor_for

    summary = Summary(config)
    started = time.time()
    with executor_for(config) as pool:
        if config.planner_cmd:
            from fuselab.fuzz.external import golden_corpus

            corpus = golden_corpus()
            _merge(summary, pool.call(run_chunk, config, [], started, corpus))
        if not (config.stop_on_first and summary.buckets):
            _campaign(config, summary, pool, started, progress)
        summary.seconds = time.time() - started
        # many buckets share the shrinking time of SHRUNK_FULLY ones (5 s each at least)
        budget = max(5.0, config.shrink_seconds * min(1.0, SHRUNK_FULLY /
                                                      max(len(summary.buckets), 1)))
        shrinking = replace(config, shrink_seconds=budget)
        finished = [(key, pool.submit(shrink_bucket, shrinking, bucket))
                    for key, bucket in sorted(summary.buckets.items())]
        for key, future in finished:
            summary.buckets[key]["repro"] = pool.result(future)
    if config.out:
        _write(summary)
    for bucket in summary.buckets.values():
        bucket.pop("stream", None)
    return summary


def _campaign(config: Config, summary: Summary, pool: Any, started: float,
              progress: Callable[[Summary], None] | None) -> None:
    chunks = _chunks(config)
    size = config.chunk or (2 if config.stop_on_first else 10)
    next_index = 0
    pending = []
    while True:
        while len(pending) < (1 if config.stop_on_first else 2) * pool.workers:
            if config.count is not None:
                if not chunks:
                    break
                indices = chunks.pop(0)
            else:
                if time.time() >= started + config.seconds:
                    break
                indices = list(range(next_index, next_index + size))
                next_index += size
            pending.append(pool.submit(run_chunk, config, indices, started))
        if not pending:
            return
        done, pending = pool.wait(pending, 0.25)
        for future in done:
            _merge(summary, pool.result(future))
        summary.seconds = time.time() - started
        if progress is not None:
            progress(summary)
        if config.stop_on_first and summary.buckets:
            pool.cancel(pending)
            return


def _write(summary: Summary) -> None:
    from fuselab.fuzz.repro import slug, write_repro

    out = Path(summary.config.out)
    for key, bucket in summary.buckets.items():
        repro = bucket["repro"]
        failure = Failure(**{k: v for k, v in repro["failure"].items() if k != "bucket"})
        meta = {"bucket": key, "count": bucket["count"], "seed": summary.config.seed,
                "index": bucket["index"], "device": bucket["device"],
                "nonfinite": bucket["nonfinite"], "planner": summary.config.planner,
                "mutant": summary.config.mutant, "planner_cmd": summary.config.planner_cmd,
                "ops_before": repro["ops_before"], "ops_after": repro["ops_after"],
                "first_failure": bucket["failure"]}
        directory = write_repro(out / slug(key), stream_from_json(repro["stream"]), failure,
                                meta, repro["adapter"], repro["external_plan"])
        bucket["repro_dir"] = str(directory)


def replace_config(config: Config, **changes: Any) -> Config:
    return replace(config, **changes)
