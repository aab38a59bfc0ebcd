"""Helpers shared by the differential tests: the pinned streams (``pinned/``)."""

from __future__ import annotations

from pathlib import Path

from refimpl.stream import Stream, load_stream

PINNED = Path(__file__).parent / "pinned"


def pinned(name: str) -> Stream:
    """A stream a property once found wrong, kept as an explicit example."""
    return load_stream(PINNED / f"{name}.json")
