"""Process replay: the planner reproduces every golden plan byte for byte.

``tests/golden/streams/<name>.json`` holds the streams and ``tests/golden/plans/<device>/
<name>.json`` the canonical plan JSON refimpl produced for each device preset
(``tools/record_golden.py``, see ``tests/golden/README.md``). A failure here means a planner
change altered some plan: either a bug, or a deliberate change that must be recorded again.
The replay runs on refimpl and on fastplan (the ``plan`` fixture of tests/planner/conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from refimpl.devices import PRESETS
from refimpl.planner import plan_to_json
from refimpl.stream import load_stream, stream_to_json

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
STREAMS = sorted((GOLDEN / "streams").glob("*.json"))
CASES = [(path, device) for path in STREAMS for device in PRESETS]


def test_golden_corpus_is_present_and_complete():
    assert len(STREAMS) >= 40
    for device in PRESETS:
        plans = sorted(p.name for p in (GOLDEN / "plans" / device).glob("*.json"))
        assert plans == [p.name for p in STREAMS]


@pytest.mark.parametrize("path", STREAMS, ids=[p.stem for p in STREAMS])
def test_golden_streams_are_canonical(path):
    text = path.read_text()
    assert stream_to_json(load_stream(path)) == text


@pytest.mark.parametrize("path, device", CASES, ids=[f"{d}-{p.stem}" for p, d in CASES])
def test_golden_plan_reproduced_byte_for_byte(path, device, plan):
    expected = (GOLDEN / "plans" / device / path.name).read_text()
    assert plan_to_json(plan(load_stream(path), device)) == expected
