"""Planning log: ``FUSELAB_LOG=basic|full`` prints the search's decisions to stderr.

burn counterpart: ``burn_std::config::fusion::{FusionLogLevel, log_fusion}`` driven by
``BURN_FUSION_LOG`` (notes §9.4), and the ``[block]`` lines of the seed page's experiments.

* ``basic`` — for every block the search optimizes: its ops, then one line per fuser that was
  tried: ready or not, score, open or closed and why it closed, ``len`` and, for trace fusers,
  ``est_bindings=k/max``; then the chosen fuser (or "unfused"). One ``[unfused]`` line per op
  that runs unfused, with the reason (``log_block``, ``log_left_at_sync``, ``log_capped``,
  ``remember_plan``, ``log_cached_plan``). And one line per executed step.
* ``full`` — also the stream events: new block, op accepted, optimizer stopped (block cap),
  exploration started/completed, cache hits.

Every op a line names is named by its index in the stream (``Stream.items``), as in the plan's
``ops``. The search numbers ops by their position in its segment (a hole search: in its
holes); ``FusionLog.at`` gives the log that prints a position as the stream index it stands
for (the queue's ``indices`` for the top-level search, ``mapped`` for a hole search).

When the variable is unset the log is ``NO_LOG`` and every call site tests ``log.level``
before building any text, so logging costs nothing. The level is read once per planner
(``FusionLog.from_env``), never per op.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from refimpl.planner.search.strategy import Operations, leaves

if TYPE_CHECKING:  # block imports log; log only names Block in annotations
    from refimpl.planner.search.block import Block
    from refimpl.planner.search.strategy import BlockOptimization

__all__ = ["LogLevel", "FusionLog", "NO_LOG", "ENV_VAR", "log_block", "describe_fuser",
           "unfused_reason", "log_left_at_sync", "log_capped", "remember_plan",
           "log_cached_plan"]

ENV_VAR = "FUSELAB_LOG"


class LogLevel(enum.IntEnum):
    """How much to print; higher includes lower."""

    OFF = 0
    BASIC = 1
    FULL = 2


_LEVEL_NAMES = {"": LogLevel.OFF, "0": LogLevel.OFF, "off": LogLevel.OFF,
                "basic": LogLevel.BASIC, "medium": LogLevel.BASIC, "full": LogLevel.FULL}


class _Notes:
    """What a log keeps to explain later lines (shared by every view ``at`` makes):

    * ``unfused`` — stream index -> ``(op name, reason)`` of each op the current exploration
      left unfused or uncovered (emptied by ``remember_plan``);
    * ``plans`` — plan id -> ``(position, op name, reason)`` of each position its strategy
      runs unfused, for the cache hits that run it again."""

    __slots__ = ("unfused", "plans")

    def __init__(self) -> None:
        self.unfused: dict[int, tuple[str, str]] = {}
        self.plans: dict[int, tuple[tuple[int, str, str], ...]] = {}


@dataclass(frozen=True, slots=True)
class FusionLog:
    """Where and how much to log. ``out=None`` means ``sys.stderr`` at write time.

    ``positions`` is the stream index of each position of the search that holds this log
    (``None``: positions are stream indices); a live list, as the queue's ``indices`` is.
    ``notes`` is what the log remembers to explain later lines (``_Notes``)."""

    level: LogLevel = LogLevel.OFF
    out: TextIO | None = None
    positions: Sequence[int] | None = field(default=None, compare=False, repr=False)
    notes: _Notes = field(default_factory=_Notes, compare=False, repr=False)

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

    def at(self, positions: Sequence[int]) -> FusionLog:
        """This log for a search whose position ``p`` is stream index ``positions[p]`` (the
        same notes); itself when it prints nothing."""
        if not self.level:
            return self
        return FusionLog(self.level, self.out, positions, self.notes)

    def mapped(self, positions: Sequence[int]) -> FusionLog:
        """This log for a search over some of this one's positions (a hole search: its
        position ``p`` is this search's ``positions[p]``)."""
        if not self.level:
            return self
        return self.at([self.index(pos) for pos in positions])

    def index(self, pos: int) -> int:
        """The stream index of a position of this log's search."""
        return pos if self.positions is None else self.positions[pos]

    def indices(self, positions: Sequence[int]) -> list[int]:
        """The stream indices of positions of this log's search."""
        return [self.index(pos) for pos in positions]


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


def _closed_reason(fuser: Any) -> str | None:
    """Why the fuser closed (``"closed"`` when it gives no reason), or ``None`` while open."""
    if fuser.status().value != "Closed":
        return None
    return getattr(fuser, "closed_reason", None) or "closed"


def _grouped(verdicts: list[tuple[str, str]], separator: str) -> str:
    """``(fuser, verdict)`` pairs as ``"A, B<separator>verdict; C<separator>other"``: the
    fusers of one verdict together, verdicts in the order their first fuser comes."""
    groups: dict[str, list[str]] = {}
    for name, verdict in verdicts:
        groups.setdefault(verdict, []).append(name)
    return "; ".join(f"{', '.join(names)}{separator}{verdict}"
                     for verdict, names in groups.items())


def unfused_reason(block: Block, index: int, indices: Sequence[int]) -> str:
    """Why the op at ``block.operations[index]`` (stream index ``indices[index]``) runs
    unfused, its block having no ready fuser that scores above 0, from what each fuser of the
    block reports.

    A lone op that every fuser closed on without becoming ready: no fuser accepts it.
    Otherwise each fuser's verdict: not ready (open, or closed and why), or, for a ready
    fuser (its ``len`` counts the ops it took), its score when it took the op, else the op
    it closed at and why."""
    fusers = block.fusers
    if len(block.operations) == 1 and all(
            not f.properties().ready and _closed_reason(f) is not None for f in fusers):
        refusals = [(fuser.name, _closed_reason(fuser)) for fuser in fusers]
        return f"no fuser accepts it ({_grouped(refusals, ': ')})"
    verdicts = []
    for fuser in fusers:
        properties = fuser.properties()
        closed = _closed_reason(fuser)
        taken = fuser.len()
        if not properties.ready:
            verdict = f"not ready (closed: {closed})" if closed else "not ready (open)"
        elif index < taken:
            verdict = f"scores {properties.score}"
        elif index == taken:
            verdict = f"refused it ({closed})"
        else:
            verdict = f"closed at op {indices[taken]} ({closed})"
        verdicts.append((fuser.name, verdict))
    return _grouped(verdicts, " ")


def _unfused(log: FusionLog, index: int, name: str, reason: str) -> None:
    log.write(f"[unfused] {index} {name}: {reason}")


def log_block(log: FusionLog, block: Block, best: tuple[int, int] | None) -> None:
    """The decision for one block (``basic``): its ops, every fuser, the choice; an
    ``[unfused]`` line per op when no fuser is chosen, and the ops a chosen fuser left."""
    if not log.enabled(LogLevel.BASIC):
        return
    operations, indices = block.operations, log.indices(block.ordering)
    names = ", ".join(op.name for op in operations)
    log.write(f"[block] {len(operations)} op(s) at {indices}: {names}")
    for fuser in block.fusers:
        log.write(f"  {describe_fuser(fuser)}")
    notes = log.notes.unfused
    if best is None:
        log.write("  -> unfused (no ready fuser with score > 0)")
        for i, operation in enumerate(operations):
            reason = unfused_reason(block, i, indices)
            notes[indices[i]] = (operation.name, reason)
            _unfused(log, indices[i], operation.name, reason)
        return
    chosen, score = block.fusers[best[0]], best[1]
    log.write(f"  -> {chosen.name} (score {score})")
    covered = chosen.len()
    for s in indices[:covered]:
        notes.pop(s, None)
    if covered < len(indices):
        # left for a hole search or the next round (or run unfused at a sync)
        stop = f"{chosen.name} stopped at op {indices[covered]} " \
               f"({_closed_reason(chosen) or 'open'})"
        log.write(f"  left over: {indices[covered:]}, {stop}")
        reason = f"its block's {stop}"
        for i in range(covered, len(indices)):
            notes[indices[i]] = (operations[i].name, reason)


def log_left_at_sync(log: FusionLog, operations: Sequence[Any], covered: int,
                     registered: int, stopped: bool) -> None:
    """The ``[unfused]`` line of each op a sync runs unfused after the search's result (its
    positions ``covered`` on): an op the search registered (before ``registered``) was left
    over by its block's fuser; a later one was never searched."""
    if not log.enabled(LogLevel.BASIC):
        return
    notes = log.notes.unfused
    for pos in range(covered, len(operations)):
        s = log.index(pos)
        if pos < registered:
            name, why = notes.get(s) or (operations[pos].name, None)
            reason = f"at the sync, not covered: {why}" if why else \
                "at the sync, not covered by the search's result"
        else:
            name = operations[pos].name
            if stopped:
                reason = (f"at the sync, not searched: the search stopped at op "
                          f"{log.index(registered)} (block cap or dependency cycle)")
            else:
                reason = (f"at the sync, not searched: every fuser had closed after op "
                          f"{log.index(registered - 1)}")
        notes[s] = (name, reason)
        _unfused(log, s, name, reason)


def log_capped(log: FusionLog, operations: Sequence[Any], max_explorations: int) -> None:
    """The ``[unfused]`` line of each op run unfused because the exploration cap is reached."""
    if not log.enabled(LogLevel.BASIC):
        return
    for pos, operation in enumerate(operations):
        _unfused(log, log.index(pos), operation.name,
                 f"exploration cap reached (max_explorations={max_explorations})")


# A stored strategy runs unfused a position no block decision left unfused when the repair
# found no order of the search's chunks that keeps every tensor alive (``repair_order``).
_REPAIRED = "no order of the fused chunks keeps every tensor alive: the search's result runs " \
            "unfused in stream order"


def remember_plan(log: FusionLog, plan_id: int, optimization: BlockOptimization,
                  operations: Sequence[Any]) -> None:
    """After a completed exploration is stored as plan ``plan_id``: keep the reason of each
    position its strategy runs unfused (for the cache hits that run it again), printing the
    positions the repair made unfused; the exploration's notes are then dropped."""
    if not log.enabled(LogLevel.BASIC):
        return
    notes = log.notes.unfused
    kept = []
    for leaf in leaves(optimization.strategy):
        if not isinstance(leaf, Operations):
            continue
        for pos in leaf.ordering:
            s = log.index(pos)
            note = notes.get(s)
            if note is None:
                note = (operations[pos].name, _REPAIRED)
                _unfused(log, s, *note)
            kept.append((pos, *note))
    log.notes.plans[plan_id] = tuple(kept)
    notes.clear()


def log_cached_plan(log: FusionLog, plan_id: int) -> None:
    """The ``[unfused]`` line of each op that cached plan ``plan_id`` runs unfused (the
    reason found when the plan was explored)."""
    if not log.enabled(LogLevel.BASIC):
        return
    for pos, name, reason in log.notes.plans.get(plan_id, ()):
        _unfused(log, log.index(pos), name, f"{reason} (cached plan #{plan_id})")
