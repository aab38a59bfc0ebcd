"""Fixtures of the planner tests: ``plan`` is refimpl's ``plan`` or fastplan's compiled one.

``planner_impl`` (tests/conftest.py) gives the pass modules of either implementation;
``plan`` rides on it, so a test that takes ``plan`` runs on both twins (ids ``refimpl`` and
``fastplan``) like every other test in tests/planner.
"""

from __future__ import annotations

import importlib

import pytest


def plan_function(impl):
    """The ``plan(stream, device, registry=None, log=None)`` of an implementation."""
    if impl.name == "refimpl":
        return importlib.import_module("refimpl.planner").plan
    return importlib.import_module("fastplan.planner").plan


@pytest.fixture
def plan(planner_impl):
    """``refimpl.planner.plan`` or ``fastplan.planner.plan`` (follows ``planner_impl``)."""
    return plan_function(planner_impl)
