"""``fuselab plan --batch``: plan many streams in one process, one JSON line per stream.

burn counterpart: none (a command-line convenience for fuzz and conformance runs, which would
otherwise pay the interpreter's start-up and the imports once per stream).

The streams are every ``*.json`` file of a directory, in name order, or every non-blank line
of a JSON Lines file (one stream document per line). Each gives one line on the output, in
order, as compact JSON:

* ``{"stream": NAME, "plan": PLAN}`` — ``PLAN`` is the plan's canonical JSON
  (``plan_to_json``), its line breaks removed;
* ``{"stream": NAME, "error": {"class": C, "op_index": I, "field": F, "message": M}}`` — the
  stream was refused: ``C`` the ``FuselabError`` class (``ShapeError``, ...), ``I`` and ``F``
  its op index and field (``null`` where the error names none), ``M`` its message; an
  unreadable file gives class ``OSError``.

``NAME`` is the file's name, or ``FILE.jsonl:LINE`` (lines counted from 1). Errors of a stream
are output, not failures: the exit code is 0 once every stream has its line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from refimpl.errors import FuselabError

__all__ = ["plan_batch", "batch_sources"]


def batch_sources(where: str | Path) -> Iterator[tuple[str, bytes | OSError]]:
    """``(name, document bytes)`` of every stream of a directory or a JSON Lines file (an
    ``OSError`` in place of the bytes of a file that cannot be read)."""
    path = Path(where)
    if path.is_dir():
        for file in sorted(path.glob("*.json")):
            try:
                yield file.name, file.read_bytes()
            except OSError as exc:
                yield file.name, exc
        return
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                yield f"{path.name}:{number}", line


def plan_batch(where: str | Path, read: Callable[[bytes], Any],
               planner: Callable[[Any, Any], Any], profile: Any, out: TextIO) -> int:
    """Plan every stream of ``where`` (``read``: document bytes → validated stream); write one
    line per stream to ``out``. Returns the exit code (0)."""
    from refimpl.planner.stream.plan import plan_to_json

    for name, source in batch_sources(where):
        if isinstance(source, OSError):
            line = {"stream": name, "error": _error(source)}
        else:
            try:
                text = plan_to_json(planner(read(source), profile))
            except FuselabError as exc:
                line = {"stream": name, "error": _error(exc)}
            else:
                out.write(f'{{"stream": {json.dumps(name)}, "plan": {text.replace(chr(10), "")}}}\n')
                continue
        out.write(json.dumps(line) + "\n")
    return 0


def _error(exc: BaseException) -> dict[str, Any]:
    return {"class": "OSError" if isinstance(exc, OSError) else type(exc).__name__,
            "op_index": getattr(exc, "op_index", None), "field": getattr(exc, "field", None),
            "message": str(exc)}
