"""Fixtures of the planner tests: ``plan`` is refimpl's ``plan`` or fastplan's compiled one,
``run_both`` runs a scenario on refimpl's module and on the twin's.

``planner_impl`` (tests/conftest.py) gives the pass modules of either implementation;
``plan`` and ``run_both`` ride on it, so a test that takes them runs on both twins (ids
``refimpl`` and ``fastplan``) like every other test in tests/planner.
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


@pytest.fixture
def run_both(planner_impl):
    """``run_both(module, scenario)``: ``scenario(m)`` for refimpl's ``module`` and for
    ``planner_impl``'s; the results (or the classes of what they raised) must be equal.
    Returns refimpl's ``("ok", result)`` or ``("raised", class)``."""

    def run(module: str, scenario):
        results = []
        for m in (importlib.import_module(f"refimpl.planner.{module}"),
                  getattr(planner_impl, module)):
            try:
                results.append(("ok", scenario(m)))
            except Exception as exc:  # noqa: BLE001 - the class is compared
                results.append(("raised", type(exc)))
        assert results[1] == results[0]
        return results[0]

    return run
