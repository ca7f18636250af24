"""The simulator's fast executors are checked against each lowered piece's StableHLO program (what a Trn host
compiles): a wrong lowering, injected here by rewriting the traced StableHLO, must fail with an error naming the
piece — at the next synchronising call, as the first call's check runs beside the program — and
``TORCHNEURON_COMPILE_CHECK`` decides how many calls are checked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from torchneuron.dynamo import cross_check, graph_cache, pieces

pytestmark = pytest.mark.sim_only


@pytest.fixture
def wrong_lowering(monkeypatch):
    """Every traced piece's StableHLO multiplies by adding: the lowering is wrong, the FX graph is right."""
    from torchneuron.lowering import trace as trace_mod

    real = trace_mod.trace

    def wrong(*args, **kwargs):
        tg = real(*args, **kwargs)
        assert "stablehlo.multiply" in tg.stablehlo
        tg.stablehlo = tg.stablehlo.replace("stablehlo.multiply", "stablehlo.add")
        return tg

    monkeypatch.setattr(trace_mod, "trace", wrong)
    # a record cached by an earlier run would skip the trace (and the injected error), a piece that passed its
    # check in an earlier run would not be checked again
    monkeypatch.setattr(graph_cache, "load", lambda k: None)
    monkeypatch.setattr(graph_cache, "store", lambda k, rec: None)
    monkeypatch.setattr(graph_cache, "has_marker", lambda k: False)


def _scale_shift(x, y):
    return x * y + 1


def _inputs(neuron):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(5, 7, generator=g), torch.randn(5, 7, generator=g)
    return x, y, x.to(neuron), y.to(neuron)


@pytest.mark.parametrize("executor", ["aten", "inductor"])
def test_wrong_lowering_is_caught_naming_the_piece(neuron, monkeypatch, wrong_lowering, executor):
    monkeypatch.setenv("TORCHNEURON_SIM_EXECUTOR", executor)
    monkeypatch.delenv("TORCHNEURON_COMPILE_CHECK", raising=False)
    _, _, xd, yd = _inputs(neuron)
    with pytest.raises(cross_check.CompiledProgramMismatch) as info:
        torch.compile(_scale_shift, backend="neuron")(xd, yd)
        torch.neuron.synchronize()
    msg = str(info.value)
    assert "neuron::graph" in msg and "mul" in msg and "output 0" in msg, msg
    assert "differs by up to" in msg and "TORCHNEURON_COMPILE_CHECK=off" in msg, msg
    assert ("inductor's CPU code" if executor == "inductor" else "PyTorch's CPU kernels") in msg, msg
    torch.neuron.synchronize()  # told once


def test_mismatch_surfaces_at_the_next_compiled_call(neuron, monkeypatch, wrong_lowering):
    monkeypatch.delenv("TORCHNEURON_SIM_EXECUTOR", raising=False)
    monkeypatch.delenv("TORCHNEURON_COMPILE_CHECK", raising=False)
    _, _, xd, yd = _inputs(neuron)
    f = torch.compile(_scale_shift, backend="neuron")
    f(xd, yd)
    for task in list(cross_check._running):  # let the background check finish, without raising
        task._done.wait(60)
    with pytest.raises(cross_check.CompiledProgramMismatch, match="neuron::graph"):
        f(xd, yd)


def test_mismatch_found_after_the_last_synchronisation_is_printed_at_exit(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(
        "import torch, torchneuron\n"
        "from torchneuron.lowering import trace as t\n"
        "from torchneuron.dynamo import graph_cache\n"
        "real = t.trace\n"
        "def wrong(*a, **k):\n"
        "    tg = real(*a, **k)\n"
        "    tg.stablehlo = tg.stablehlo.replace('stablehlo.multiply', 'stablehlo.add')\n"
        "    return tg\n"
        "t.trace = wrong\n"
        "graph_cache.load = lambda k: None\n"
        "graph_cache.has_marker = lambda k: False\n"
        "x = torch.randn(5, 7, device='neuron')\n"
        "torch.compile(lambda a: a * a + 1, backend='neuron')(x)\n")
    env = {**os.environ, "TORCHNEURON_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("TORCHNEURON_COMPILE_CHECK", None)
    env.pop("TORCHNEURON_SIM_EXECUTOR", None)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert "found after the program's last synchronisation: CompiledProgramMismatch" in res.stderr, res.stderr


def test_wrong_in_place_update_is_caught(neuron, monkeypatch, wrong_lowering):
    monkeypatch.delenv("TORCHNEURON_SIM_EXECUTOR", raising=False)
    monkeypatch.delenv("TORCHNEURON_COMPILE_CHECK", raising=False)

    def scale_(x, y):
        x.mul_(y)

    _, _, xd, yd = _inputs(neuron)
    with pytest.raises(cross_check.CompiledProgramMismatch, match="neuron::graph"):
        torch.compile(scale_, backend="neuron")(xd, yd)
        torch.neuron.synchronize()


def test_check_off_runs_only_the_fast_path(neuron, monkeypatch, wrong_lowering):
    """With the check off the wrong StableHLO never runs: the fast path's (right) answer comes back."""
    monkeypatch.delenv("TORCHNEURON_SIM_EXECUTOR", raising=False)
    monkeypatch.setenv("TORCHNEURON_COMPILE_CHECK", "off")
    x, y, xd, yd = _inputs(neuron)
    torch.testing.assert_close(torch.compile(_scale_shift, backend="neuron")(xd, yd).cpu(), x * y + 1)


def test_xla_executor_runs_the_stablehlo_itself(neuron, monkeypatch, wrong_lowering):
    """The xla executor has nothing to check against: it runs the (here wrong) program a Trn host would."""
    monkeypatch.setenv("TORCHNEURON_SIM_EXECUTOR", "xla")
    x, y, xd, yd = _inputs(neuron)
    torch.testing.assert_close(torch.compile(_scale_shift, backend="neuron")(xd, yd).cpu(), x + y + 1)


@pytest.mark.parametrize(("mode", "expected"), [("first", 1), ("every", 3), ("off", 0)])
def test_check_mode_sets_how_many_calls_run_the_stablehlo(neuron, monkeypatch, mode, expected):
    monkeypatch.delenv("TORCHNEURON_SIM_EXECUTOR", raising=False)
    monkeypatch.setenv("TORCHNEURON_COMPILE_CHECK", mode)
    runs = []
    real = pieces.LoweredPiece.__call__

    def counted(self, ins):
        runs.append(1)
        return real(self, ins)

    monkeypatch.setattr(pieces.LoweredPiece, "__call__", counted)
    monkeypatch.setattr(graph_cache, "has_marker", lambda k: False)  # as if no earlier run had checked it
    x, y, xd, yd = _inputs(neuron)
    f = torch.compile(_scale_shift, backend="neuron")
    for _ in range(3):
        torch.testing.assert_close(f(xd, yd).cpu(), x * y + 1)
    torch.neuron.synchronize()
    assert len(runs) == expected


def test_a_piece_that_passed_is_not_checked_again_by_a_later_compile(neuron, monkeypatch):
    monkeypatch.delenv("TORCHNEURON_SIM_EXECUTOR", raising=False)
    monkeypatch.delenv("TORCHNEURON_COMPILE_CHECK", raising=False)
    marks: dict[str, bool] = {}
    monkeypatch.setattr(graph_cache, "has_marker", lambda k: k in marks)
    monkeypatch.setattr(graph_cache, "put_marker", lambda k: marks.setdefault(k, True))
    runs = []
    real = pieces.LoweredPiece.__call__
    monkeypatch.setattr(pieces.LoweredPiece, "__call__", lambda self, ins: runs.append(1) or real(self, ins))
    x, y, xd, yd = _inputs(neuron)
    torch.compile(_scale_shift, backend="neuron")(xd, yd)
    torch.neuron.synchronize()
    assert len(runs) == 1 and len(marks) == 1
    torch._dynamo.reset()  # a new compile of the same program, as a later process makes it
    torch.testing.assert_close(torch.compile(_scale_shift, backend="neuron")(xd, yd).cpu(), x * y + 1)
    assert len(runs) == 1


def test_unknown_check_mode_is_refused(neuron, monkeypatch):
    monkeypatch.setenv("TORCHNEURON_COMPILE_CHECK", "sometimes")
    _, _, xd, yd = _inputs(neuron)
    with pytest.raises(Exception, match="TORCHNEURON_COMPILE_CHECK='sometimes'.*first, every, off"):
        torch.compile(_scale_shift, backend="neuron")(xd, yd)


def test_tolerance_follows_the_least_precise_dtype():
    assert cross_check.tolerance({torch.float32}) == 1e-4
    assert cross_check.tolerance({torch.float32, torch.bfloat16, torch.int64}) == 1.6e-2
    assert cross_check.tolerance({torch.int64}) == 1e-4


def test_difference_reports_first_bad_element_and_passes_rounding():
    expected = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert cross_check.difference(expected * (1 + 1e-6), expected, 1e-4) is None
    bad = expected.clone()
    bad[2] = 3.5
    why = cross_check.difference(bad, expected, 1e-4)
    assert why and "flat index 2" in why and "0.5" in why
    assert "dtype or shape" in cross_check.difference(expected[:3], expected, 1e-4)
    assert "exact dtype" in cross_check.difference(torch.tensor([1, 2]), torch.tensor([1, 3]), 1e-4)
