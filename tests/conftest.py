"""Shared test configuration: hypothesis profiles, the report header, GPU gating.

Environment:

* ``HYPOTHESIS_PROFILE=dev|ci|thorough`` (default ``dev``).
* ``GPU_REQUIRED=1``: a missing WebGPU adapter fails the tests that need one instead of skipping.
* ``FASTPLAN_NO_EXTENSIONS=1``: fastplan uses its pure-Python fallback (see fastplan/__init__.py).
* ``FASTPLAN_REQUIRE_EXTENSIONS=1``: a fastplan that is not compiled fails ``planner_impl`` tests.

The autotune disk cache (``FUSELAB_CACHE_DIR``) is a per-session temporary directory.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os

import pytest
from hypothesis import settings

import fastplan
from tools.check_adapter import find_adapter

# --- hypothesis profiles ---------------------------------------------------------------------
# deadline=None everywhere: Cython builds and GPU dispatch make per-example timing noisy.
settings.register_profile("dev", max_examples=50, deadline=None)
# CI runs in a fresh clone: a fixed seed sequence and no example database, and a failing
# example prints the blob that reproduces it.
settings.register_profile(
    "ci", max_examples=200, deadline=None, derandomize=True, database=None, print_blob=True
)
settings.register_profile("thorough", max_examples=5000, deadline=None)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
settings.load_profile(HYPOTHESIS_PROFILE)

GPU_REQUIRED = os.environ.get("GPU_REQUIRED", "") not in ("", "0")


@pytest.fixture(scope="session", autouse=True)
def _autotune_cache_dir(tmp_path_factory):
    """The autotune disk cache of a test session lives in its temporary directory (a run
    never reads or writes the user's ``FUSELAB_CACHE_DIR``)."""
    old = os.environ.get("FUSELAB_CACHE_DIR")
    os.environ["FUSELAB_CACHE_DIR"] = str(tmp_path_factory.mktemp("fuselab-cache"))
    yield
    if old is None:
        os.environ.pop("FUSELAB_CACHE_DIR", None)
    else:
        os.environ["FUSELAB_CACHE_DIR"] = old


# --- GPU adapter -----------------------------------------------------------------------------
# One request per session, shared with ``make vulkan`` (tools/check_adapter.py).
_find_adapter = functools.cache(find_adapter)


@pytest.fixture(scope="session")
def gpu_adapter():
    """The session's WebGPU adapter; skips without one, fails instead when GPU_REQUIRED=1."""
    adapter, summary = _find_adapter()
    if adapter is None:
        message = f"WebGPU adapter needed: {summary}"
        if GPU_REQUIRED:
            pytest.fail(f"{message} (GPU_REQUIRED=1)")
        pytest.skip(message)
    return adapter


# --- planner twins ---------------------------------------------------------------------------
# Every test in tests/planner takes ``planner_impl`` and runs on both implementations (style
# §6.10): ``planner_impl.fusers.elemwise`` is ``refimpl.planner.fusers.elemwise`` or its
# compiled twin (``fastplan.planner_module("fusers.elemwise")``).
# The fastplan case is skipped only when fastplan is not compiled, and then fails instead under
# FASTPLAN_REQUIRE_EXTENSIONS=1 (a broken build must not pass as "skipped").
REQUIRE_EXTENSIONS = os.environ.get("FASTPLAN_REQUIRE_EXTENSIONS", "") not in ("", "0")


@dataclasses.dataclass(frozen=True)
class PlannerImpl:
    """One implementation of refimpl.planner's modules, reached as attributes by room and
    module (``impl.search.block``, or ``getattr(impl, "search.block")``); ``room`` is set on
    the object an ``impl.<room>`` gives."""

    name: str
    room: str = ""

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if "." in attr:  # "<room>.<module>", as PLANNER_TWINS names them
            room, _, module = attr.partition(".")
            return getattr(getattr(self, room), module)
        module = f"{self.room}.{attr}" if self.room else attr
        try:
            if not self.room:  # a room: its package under refimpl.planner must exist
                importlib.import_module(f"refimpl.planner.{module}")
                return PlannerImpl(self.name, attr)
            if self.name == "refimpl":
                return importlib.import_module(f"refimpl.planner.{module}")
            return fastplan.planner_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != f"refimpl.planner.{module}":
                raise  # a module that exists failed to import
            # no such module: an attribute error, as getattr and hypothesis's probes expect
            raise AttributeError(f"no planner module {module!r}") from exc

    def __str__(self) -> str:
        return self.name


REFIMPL = PlannerImpl("refimpl")
FASTPLAN = PlannerImpl("fastplan")


@pytest.fixture(scope="session", params=[
    pytest.param(REFIMPL, id="refimpl"),
    pytest.param(FASTPLAN, id="fastplan", marks=pytest.mark.compiled),
])
def planner_impl(request) -> PlannerImpl:
    """refimpl's planner modules, or fastplan's compiled twins."""
    impl = request.param
    if impl is FASTPLAN and not fastplan.COMPILED:
        message = "fastplan is not compiled (make build), or FASTPLAN_NO_EXTENSIONS is set"
        if REQUIRE_EXTENSIONS:
            pytest.fail(f"{message} (FASTPLAN_REQUIRE_EXTENSIONS=1)")
        pytest.skip(message)
    return impl


# --- report header ---------------------------------------------------------------------------
def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say which fastplan, which hypothesis profile and which GPU adapter this run uses."""
    build = "compiled" if fastplan.COMPILED else "pure Python"
    if fastplan.NO_EXTENSIONS:
        build += " (FASTPLAN_NO_EXTENSIONS)"
    _, adapter = _find_adapter()
    gpu = adapter + (" [GPU_REQUIRED]" if GPU_REQUIRED else "")
    return [
        f"fastplan: COMPILED={fastplan.COMPILED} ({build})",
        f"hypothesis profile: {HYPOTHESIS_PROFILE}",
        f"wgpu adapter: {gpu}",
    ]
