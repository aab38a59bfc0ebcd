"""Repro directories: a shrunk failing stream saved so that anyone can run it again, and
``fuselab fuzz --replay DIR``.

burn counterpart: none. A directory holds:

* ``stream.json`` — the stream (version-1 format: ``fuselab run stream.json`` runs it);
* ``inputs.npz`` — every input's logical values, as arrays ``t<id>``;
* ``plan.json`` — the plan the failing check ran (canonical plan JSON; for ``planner-cmd``
  the external planner's output as it came, when there was one);
* ``expected.npz`` — the eager oracle's synced tensors (``fuselab compare`` reads it);
* ``meta.json`` — check, bucket, failure detail, seed and stream index, device, plan variant,
  mutant, sizes before and after shrinking, versions, and the GPU adapter for ``gpu``.
"""

from __future__ import annotations

import json
import platform
import re
from pathlib import Path
from typing import Any

import numpy as np

from fuselab.fuzz.checks import Case, Failure
from fuselab.fuzz.plans import Planners
from refimpl.data import logical_values
from refimpl.eager import run_stream
from refimpl.errors import FuselabError
from refimpl.planner.stream.plan import Plan, plan_to_json
from refimpl.stream import Stream, load_stream, save_stream

__all__ = ["ReproError", "load_repro", "slug", "versions", "write_repro"]


class ReproError(FuselabError):
    """A repro directory is missing a file or holds a malformed one."""


def slug(bucket: str) -> str:
    """A directory name for a bucket."""
    return re.sub(r"[^A-Za-z0-9.]+", "-", bucket).strip("-").lower()[:100]


def versions() -> dict[str, str]:
    import hypothesis

    import fuselab

    found = {"python": platform.python_version(), "numpy": np.__version__,
             "hypothesis": hypothesis.__version__,
             "fuselab": getattr(fuselab, "__version__", "0.1.0")}
    try:
        import wgpu

        found["wgpu"] = wgpu.__version__
    except ImportError:
        pass
    return found


def _plan_json(stream: Stream, failure: Failure, device: str, planner: str) -> str:
    planners = Planners(planner)
    try:
        p, profile = planners.planner(failure.variant, device)
        p.run(stream)
        return plan_to_json(Plan(profile.name, p.launch_planned(stream, 0, profile)))
    except Exception as exc:  # noqa: BLE001 - a planner that fails is what the repro shows
        return json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n"


def write_repro(directory: Path, stream: Stream, failure: Failure, meta: dict[str, Any],
                adapter: dict | None = None, external_plan: str | None = None) -> Path:
    """Write the repro of ``failure`` on ``stream`` into ``directory`` (created)."""
    directory.mkdir(parents=True, exist_ok=True)
    save_stream(stream, directory / "stream.json")
    np.savez(directory / "inputs.npz", **{f"t{tid}": logical_values(spec, tid)
                                          for tid, spec in stream.inputs.items()})
    plan = external_plan if external_plan is not None else _plan_json(
        stream, failure, meta.get("device", "metal"), meta.get("planner", "fast"))
    (directory / "plan.json").write_text(plan)
    try:
        expected = run_stream(stream)
        np.savez(directory / "expected.npz", **{f"t{t}": v for t, v in expected.items()})
    except FuselabError:
        pass
    full = {**meta, **failure.to_json(), "versions": versions()}
    if adapter is not None:
        full["adapter"] = adapter
    (directory / "meta.json").write_text(json.dumps(full, indent=2, sort_keys=True,
                                                    default=str) + "\n")
    return directory


def load_repro(directory: str | Path) -> tuple[Stream, dict, Case]:
    """A repro's stream, meta and the case to check again."""
    directory = Path(directory)
    for name in ("stream.json", "meta.json"):
        if not (directory / name).is_file():
            raise ReproError(f"{directory}: no {name} (not a fuzz repro directory)")
    try:
        meta = json.loads((directory / "meta.json").read_text())
    except json.JSONDecodeError as exc:
        raise ReproError(f"{directory / 'meta.json'}: not JSON ({exc})") from None
    for key in ("check", "symptom", "variant"):
        if key not in meta:
            raise ReproError(f"{directory / 'meta.json'}: no {key!r}")
    stream = load_stream(directory / "stream.json")
    variant = meta["variant"]
    case = Case(stream, meta.get("device", "metal"),
                (variant,) if variant != "default" else (), bool(meta.get("nonfinite")))
    return stream, meta, case
