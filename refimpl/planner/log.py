"""Planning log: ``FUSELAB_LOG=basic|full`` prints the search's decisions to stderr.

burn counterpart: ``burn_std::config::fusion::{FusionLogLevel, log_fusion}`` driven by
``BURN_FUSION_LOG`` (notes §9.4), and the ``[block]`` lines of the seed page's experiments.

* ``basic`` — for every block the search optimizes: its ops, then one line per fuser that was
  tried: ready or not, score, open or closed and why it closed, ``len`` and, for trace fusers,
  ``est_bindings=k/max``; then the chosen fuser (or "unfused"). And one line per executed step.
* ``full`` — also the stream events: new block, op accepted, optimizer stopped (block cap),
  exploration started/completed, cache hits.

When the variable is unset the log is ``NO_LOG`` and every call site tests ``log.level``
before building any text, so logging costs nothing. The level is read once per planner
(``FusionLog.from_env``), never per op.
"""

from __future__ import annotations

import enum
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # block imports log; log only names Block in annotations
    from refimpl.planner.block import Block

__all__ = ["LogLevel", "FusionLog", "NO_LOG", "ENV_VAR", "log_block", "describe_fuser"]

ENV_VAR = "FUSELAB_LOG"


class LogLevel(enum.IntEnum):
    """How much to print; higher includes lower."""

    OFF = 0
    BASIC = 1
    FULL = 2


_LEVEL_NAMES = {"": LogLevel.OFF, "0": LogLevel.OFF, "off": LogLevel.OFF,
                "basic": LogLevel.BASIC, "medium": LogLevel.BASIC, "full": LogLevel.FULL}


@dataclass(frozen=True, slots=True)
class FusionLog:
    """Where and how much to log. ``out=None`` means ``sys.stderr`` at write time."""

    level: LogLevel = LogLevel.OFF
    out: TextIO | None = None

    @classmethod
    def from_env(cls, environ: Any = None) -> FusionLog:
        """The log ``FUSELAB_LOG`` asks for; unknown values mean ``basic``."""
        value = (environ if environ is not None else os.environ).get(ENV_VAR, "")
        return cls(_LEVEL_NAMES.get(value.strip().lower(), LogLevel.BASIC))

    def enabled(self, level: LogLevel) -> bool:
        return self.level >= level

    def write(self, line: str) -> None:
        """Print one line (callers check ``enabled`` first)."""
        stream = self.out if self.out is not None else sys.stderr
        stream.write(f"[fuselab] {line}\n")


NO_LOG = FusionLog()


def describe_fuser(fuser: Any) -> str:
    """One line about one fuser of a block: readiness, score, status, why it closed, length
    and binding estimate (the last two only when the fuser reports them)."""
    properties = fuser.properties()
    status = fuser.status()
    parts = [
        f"{fuser.name:<18}",
        "ready" if properties.ready else "not-ready",
        f"score={properties.score}",
        status.value.lower(),
    ]
    reason = getattr(fuser, "closed_reason", None)
    if status.value == "Closed" and reason:
        parts[-1] += f" ({reason})"
    parts.append(f"len={fuser.len()}")
    estimate = getattr(fuser, "estimate_bindings", None)
    limit = getattr(fuser, "max_bindings", None)
    if estimate is not None and limit is not None:
        parts.append(f"est_bindings={estimate()}/{limit}")
    return " ".join(parts)


def log_block(log: FusionLog, block: Block, best: tuple[int, int] | None) -> None:
    """The decision for one block (``basic``): its ops, every fuser, the choice."""
    if not log.enabled(LogLevel.BASIC):
        return
    names = ", ".join(op.name for op in block.operations)
    log.write(f"[block] {len(block.operations)} op(s) at {list(block.ordering)}: {names}")
    for fuser in block.fusers:
        log.write(f"  {describe_fuser(fuser)}")
    if best is None:
        log.write("  -> unfused (no ready fuser with score > 0)")
    else:
        index, score = best
        log.write(f"  -> {block.fusers[index].name} (score {score})")
