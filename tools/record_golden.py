"""Record the golden corpus ("process replay"): streams and the plans refimpl makes for them.

Usage::

    python3 tools/record_golden.py            # rewrite tests/golden/ (a deliberate change)
    python3 tools/record_golden.py --check    # exit 1 listing every file that would change

Streams come from three places, written to ``tests/golden/streams/<name>.json`` in canonical
form (``stream_to_json``):

* ``refimpl.seed.SEED_STREAMS`` — the seed page's experiments and burn's fusion tests;
* ``tests/streams/*.json`` — the hand-written example streams, as ``file_<stem>``;
* ``SEARCH_STREAMS`` below — cases aimed at the search (block cap, merging, interleaving).

For every stream and every device preset (``refimpl.devices.PRESETS``) the plan goes to
``tests/golden/plans/<device>/<name>.json`` (``plan_to_json``). ``tests/planner/test_golden.py``
checks that refimpl (and later fastplan) reproduce each file byte for byte. Regenerate only
when a planner change is intended, and say so in the commit (see ``tests/golden/README.md``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from refimpl.devices import PRESETS  # noqa: E402
from refimpl.frontend import Session  # noqa: E402
from refimpl.planner import plan, plan_to_json  # noqa: E402
from refimpl.seed import SEED_STREAMS  # noqa: E402
from refimpl.stream import Stream, load_stream, stream_to_json  # noqa: E402

GOLDEN = ROOT / "tests" / "golden"
STREAMS_DIR = GOLDEN / "streams"
PLANS_DIR = GOLDEN / "plans"
EXAMPLES_DIR = ROOT / "tests" / "streams"


def _record(body: Callable[[Session], None]) -> Callable[[], Stream]:
    def build() -> Stream:
        session = Session(executor=None)
        body(session)
        return session.close()

    return build


def _incompatible_shapes(s: Session) -> None:
    y1, y2 = s.random((4, 4), seed=0).exp(), s.random((8, 8), seed=1).log()
    s.sync(y1, y2)


def _broadcast_shapes(s: Session) -> None:
    y1, y2 = s.random((1, 8), seed=0).exp(), s.random((4, 8), seed=1).log()
    s.sync(y1, y2)


def _six_independent(s: Session) -> None:
    outs = []
    for k in range(6):
        a, b, c = (s.random((16, 16), seed=3 * k + j) for j in range(3))
        outs.append((a.move() * b.move() + c.move()).exp())
    s.sync(*outs)


def _interleaved(s: Session) -> None:
    a1, b1 = s.random((8, 8), seed=0).exp(), s.random((8, 8), seed=1).log()
    a2, b2 = a1.move().exp(), b1.move().log()
    s.sync(a2, b2)


def _softmax(s: Session) -> None:
    x = s.random((4, 32), seed=0)
    shifted = x - x.max_dim(1)
    e = shifted.move().exp()
    y = e / e.sum_dim(1)
    s.sync(y)


def _two_reduce_blocks_then_join(s: Session) -> None:
    a, b = s.random((8, 8), seed=0), s.random((8, 8), seed=1)
    ra = (a.move() * 2.0).sum_dim(1).exp()
    rb = (b.move() + 1.0).sum_dim(1).log()
    s.sync(ra.move() + rb.move())


def _repeated_iteration(s: Session) -> None:
    w = s.random((8, 8), seed=0)
    for _ in range(3):
        y = (w * 2.0 + 1.0).exp()
        s.sync(y)


SEARCH_STREAMS: dict[str, Callable[[], Stream]] = {
    "search_incompatible_shapes": _record(_incompatible_shapes),
    "search_broadcast_shapes": _record(_broadcast_shapes),
    "search_six_independent": _record(_six_independent),
    "search_interleaved": _record(_interleaved),
    "search_softmax": _record(_softmax),
    "search_two_reduce_blocks_then_join": _record(_two_reduce_blocks_then_join),
    "search_repeated_iteration": _record(_repeated_iteration),
}


def golden_streams() -> dict[str, Stream]:
    """Every golden stream by name, sorted by name."""
    streams: dict[str, Stream] = {}
    for name, build in SEED_STREAMS.items():
        streams[name] = build()
    for path in sorted(EXAMPLES_DIR.glob("*.json")):
        streams[f"file_{path.stem}"] = load_stream(path)
    for name, build in SEARCH_STREAMS.items():
        streams[name] = build()
    return dict(sorted(streams.items()))


def expected_files() -> dict[Path, str]:
    """Every corpus file and the text it must hold."""
    files: dict[Path, str] = {}
    for name, stream in golden_streams().items():
        files[STREAMS_DIR / f"{name}.json"] = stream_to_json(stream)
        for device in PRESETS:
            files[PLANS_DIR / device / f"{name}.json"] = plan_to_json(plan(stream, device))
    return files


def _stale(files: dict[Path, str]) -> list[Path]:
    """Files that differ from what they must hold, are missing, or are left over."""
    stale = [path for path, text in files.items()
             if not path.exists() or path.read_text() != text]
    present = sorted(GOLDEN.glob("streams/*.json")) + sorted(GOLDEN.glob("plans/*/*.json"))
    return stale + [path for path in present if path not in files]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    files = expected_files()
    stale = _stale(files)
    if args.check:
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)}")
        return 1 if stale else 0
    for path in stale:
        if path in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[path])
        else:
            path.unlink()
    print(f"{len(stale)} file(s) written or removed under {GOLDEN.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
