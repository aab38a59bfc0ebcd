"""``fuselab run`` on big streams: a stream that cannot fit is refused before anything is
allocated (exit 2, one line naming the tensor and its size); a long run on a terminal shows a
progress bar on stderr, and nothing when stderr is not a terminal."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fuselab import cli, run
from refimpl.errors import MemoryLimitError
from refimpl.footprint import check_fits, live_bytes
from refimpl.stream import load_stream


def _tensor(tid: int, shape: list[int], status: str) -> dict:
    return {"id": tid, "shape": shape, "dtype": "f32", "status": status}


def add_chain(shape: list[int], adds: int = 1, last_use: bool = False) -> dict:
    """t0 + t1 -> t2, t2 + t1 -> t3, ...; with ``last_use`` each sum consumes its lhs."""
    ops, lhs = [], 0
    for k in range(adds):
        out = 2 + k
        lhs_status = "ReadWrite" if last_use and k else "ReadOnly"
        ops.append({"op": "NumericFloat.Add", "lhs": _tensor(lhs, shape, lhs_status),
                    "rhs": _tensor(1, shape, "ReadOnly"), "out": _tensor(out, shape, "NotInit")})
        lhs = out
    ops.append({"op": "Sync", "tensors": [lhs]})
    inputs = {str(i): {"shape": shape, "dtype": "f32", "random": i + 1} for i in (0, 1)}
    return {"version": 1, "inputs": inputs, "ops": ops}


def write(tmp_path: Path, doc: dict) -> str:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("backend", ["eager", "interp", "gpu"])
def test_run_refuses_what_cannot_fit_with_one_line(tmp_path, capsys, backend):
    path = write(tmp_path, add_chain([1_000_000, 1_000_000]))
    assert cli.main(["validate", path]) == 0
    capsys.readouterr()
    assert cli.main(["run", path, "--backend", backend]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: input 0: [1000000, 1000000] f32 "
                                                   "needs 4000000000000 bytes (3.6 TiB)")
    assert "of memory available" in lines[0]


def test_the_error_names_the_op_whose_output_crosses_the_limit(tmp_path):
    stream = load_stream(write(tmp_path, add_chain([4, 4], adds=2)))
    size = 4 * 4 * 4
    check_fits(stream, available=4 * size)
    with pytest.raises(MemoryLimitError) as info:
        check_fits(stream, available=3 * size)
    error = info.value
    assert (error.op_index, error.tensor, error.nbytes) == (1, 3, size)
    assert str(error).startswith("op 1 (NumericFloat.Add), tensor 3: [4, 4] f32 needs 64 "
                                 "bytes, 256 bytes with the tensors live beside it")


def test_consumed_tensors_free_their_bytes_unless_synced(tmp_path):
    size = 4 * 4 * 4
    kept = load_stream(write(tmp_path, add_chain([4, 4], adds=3)))
    consumed = load_stream(write(tmp_path, add_chain([4, 4], adds=3, last_use=True)))
    assert live_bytes(kept) == 5 * size
    assert live_bytes(consumed) == 4 * size


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    path = write(tmp_path, add_chain([4, 4], adds=3))
    monkeypatch.setattr(run, "PROGRESS_BYTES", 1)
    assert cli.main(["run", path]) == 0
    assert capsys.readouterr().err == ""
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert cli.main(["run", path]) == 0
    shown = terminal.getvalue()
    assert "eager: inputs" in shown and "eager: ops" in shown and "4/4" in shown


def test_no_progress_bar_for_a_short_run(tmp_path, monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert cli.main(["run", write(tmp_path, add_chain([4, 4]))]) == 0
    assert terminal.getvalue() == ""
