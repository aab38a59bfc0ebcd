"""The profile-guided build's training run (tools/pgo_train.py, setup.py's ``FASTPLAN_PGO``)
works against the build in place: ``make build FASTPLAN_PGO=1`` trains with it, and a training
that fails there is fatal, but only at build time; this catches it rotting between builds."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import fastplan
from fuselab import workloads

ROOT = Path(__file__).resolve().parents[2]


def _training():
    spec = importlib.util.spec_from_file_location("pgo_train", ROOT / "tools" / "pgo_train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_training_runs_on_the_compiled_planner_or_refuses_without_it(capsys):
    status = _training().main()
    if fastplan.COMPILED:
        assert status == 0
        assert "golden plans" in capsys.readouterr().out
    else:  # nothing to train: setup.py then builds without a profile
        assert status == 2
        assert "not loaded" in capsys.readouterr().err


def test_training_streams_are_not_the_benchmarks():
    training = _training()
    assert training.SEED != 0  # fuselab.bench measures seed 0
    assert training.GOLDEN_STREAMS.is_dir()
    assert sorted(training.WORKLOADS) == sorted(workloads.WORKLOADS)
