"""Faithful by construction: a fast executor's results are checked against the piece's StableHLO program.

The simulator runs a lowered piece fast (PyTorch's CPU kernels, or inductor's code), but a Trn host runs the
piece's StableHLO, compiled by neuronx-cc. So the StableHLO also runs on the simulator (XLA:CPU) on the same
inputs, and the two results must agree within the dtype's tolerance; otherwise the lowering is wrong and the
call raises ``CompiledProgramMismatch`` naming the piece, the output and the difference.

``TORCHNEURON_COMPILE_CHECK``: ``first`` (default) checks the first call of every new piece (one that passed in an
earlier process is not new: the compile cache remembers it, keyed like the piece's program), ``every`` every
call (slow: each call also runs XLA:CPU), ``off`` none (the StableHLO is then lowered but never executed).

Under ``first`` the check runs beside the program, as a device's asynchronous work does: the first call copies
its inputs and results to host memory and returns; a worker thread compiles the StableHLO, runs it on the copies
and compares. A mismatch raises at the next call of a compiled program or at ``torch.neuron.synchronize()``
(or is printed at exit if neither comes), as a CUDA kernel's error surfaces at the next synchronising call.
``every`` checks in the call itself.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from .. import _env
from ..compiler import background
from ..programs import host_bridge as dev
from . import metrics

# relative to the output's largest magnitude (XLA:CPU and PyTorch sum in other orders), plus torch.testing's
# absolute float tolerance (a gradient that is zero up to rounding, e.g. a bias before BatchNorm, is all noise);
# a wrong lowering is off by far more
_RTOL = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-4, torch.float64: 1e-4,
         torch.complex64: 1e-4, torch.complex128: 1e-4}
_ATOL = 1e-5
_CHECKS = {"first": 1, "every": -1, "off": 0}


class CompiledProgramMismatch(RuntimeError):
    """A compiled piece's fast result differs from its StableHLO program's: the lowering is wrong."""


def checks_per_piece() -> int:
    """How many calls of each piece are checked (-1: all)."""
    mode = _env.get(_env.COMPILE_CHECK).strip().lower() or "first"
    if mode not in _CHECKS:
        raise ValueError(f"{_env.COMPILE_CHECK}={mode!r}: expected one of {', '.join(_CHECKS)}")
    return _CHECKS[mode]


class CheckedPiece:
    """``fast`` runs every call; on the checked calls the StableHLO program (built on first use by
    ``make_reference``) runs first, on copies of the inputs the piece updates in place."""

    kind = "lowered"

    def __init__(self, fast: Callable, make_reference: Callable[[], Callable], name: str, mutated: list[int],
                 checks: int, rtol: float, fast_name: str = "PyTorch's CPU kernels", undefined: list[int] = (),
                 on_passed: Callable[[], None] = lambda: None):
        self.fast = fast
        self._on_passed = on_passed
        self._undefined = set(undefined)
        self._fast_name = fast_name
        self._make_reference = make_reference
        self._reference: Callable | None = None
        self.name = name
        self._mutated = mutated
        self._checks_left = checks
        self._rtol = rtol

    def __call__(self, ins: list[torch.Tensor]) -> tuple:
        if self._checks_left == 0:
            return self.fast(ins)
        if self._checks_left > 0:
            self._checks_left -= 1
            if self._checks_left == 0:  # one check: beside the program
                return self._checked_later(ins)
        if self._reference is None:
            self._reference = self._make_reference()
        t0 = time.perf_counter()
        try:
            return self._checked(ins)
        finally:
            metrics.add_phase("cross_check", time.perf_counter() - t0)

    def _checked_later(self, ins: list[torch.Tensor]) -> tuple:
        t0 = time.perf_counter()
        before = _snapshot(ins)
        got = self.fast(ins)
        got_now = _snapshot(list(got))
        updated = _snapshot([ins[i] for i in self._mutated])
        metrics.add_phase("cross_check", time.perf_counter() - t0)
        _later(lambda: self._compare_later(before, got_now, updated))
        return got

    def _compare_later(self, ref_ins: list, got: list, updated: list) -> None:
        make, self._make_reference = self._make_reference, None  # the executable is not needed after this
        if make is None:  # two threads made the first call together: one check is enough
            return
        with metrics.timed_phase("check_background"):
            expected = make()(ref_ins)
            self._compare(got, expected, list(zip(updated, [ref_ins[i] for i in self._mutated])))
            self._on_passed()

    def _checked(self, ins: list[torch.Tensor]) -> tuple:
        ref_ins = list(ins)
        for i in self._mutated:
            ref_ins[i] = ins[i].clone()
        expected = self._reference(ref_ins)
        got = self.fast(ins)
        self._compare(got, expected, [(ins[i], ref_ins[i]) for i in self._mutated])
        if self._checks_left == 0:
            self._reference = None  # the XLA executable is not needed any more
            self._on_passed()
        return got

    def _compare(self, got, expected, updated: list[tuple]) -> None:
        pairs = [(f"output {k}", g, e) for k, (g, e) in enumerate(zip(got, expected))]
        pairs += [(f"input {i} (updated in place)", g, e) for i, (g, e) in zip(self._mutated, updated)]
        for k, (what, g, e) in enumerate(pairs):
            undefined = k < len(got) and k in self._undefined
            problem = shape_difference(g, e) if undefined else difference(g, e, self._rtol)
            if problem:
                raise CompiledProgramMismatch(
                    f"torch.compile(backend='neuron'): {self.name}: {what} {problem} between the simulator's "
                    f"fast executor ({self._fast_name}) and the piece's StableHLO program on XLA:CPU (what "
                    "a Trn host compiles). The piece's lowering is wrong: please report it with the files "
                    f"{_env.DEBUG_DIR}=dir writes. {_env.COMPILE_CHECK}=off skips this check; "
                    f"{_env.SIM_EXECUTOR}=xla runs the StableHLO program itself.")


def _snapshot(values: list) -> list:
    """Host copies of the tensors: the values of this moment, whatever later work does to the originals."""
    devices = {v.device for v in values if isinstance(v, torch.Tensor) and v.device.type == "neuron"}
    for d in devices:
        dev.drain(d)
    return [_host_copy(v) if isinstance(v, torch.Tensor) else v for v in values]


def _host_copy(t: torch.Tensor) -> torch.Tensor:
    if not t.numel():  # no values to keep (AOTAutograd passes some empty inputs as meta placeholders)
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype)
    return dev.host_view(t).clone()


# checks running beside the programs, and the errors they found that nobody has been told of yet
_lock = threading.Lock()
_running: list[background.Task] = []
_found: list[BaseException] = []
_hooked: list[bool] = []


def _forget_in_child() -> None:
    """A forked child (a DataLoader worker) leaves the parent's checks to the parent (one running there would
    never finish here), and a lock held at the fork stays held: it starts afresh."""
    global _lock
    _lock = threading.Lock()
    _running.clear()
    _found.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def _later(check: Callable[[], None]) -> None:
    def run() -> None:
        try:
            check()
        except BaseException as e:  # noqa: BLE001 - raised at the next synchronising call
            with _lock:
                _found.append(e)

    task = background.submit(run)
    with _lock:
        _running.append(task)
        if not _hooked:
            _hooked.append(True)
            # threading's exit hooks run last-registered first: this one, after background's, runs before it
            getattr(threading, "_register_atexit", lambda f: None)(_report_at_exit)
            from ..device import _device

            _device.add_synchronize_hook(wait_for_checks)


def raise_found() -> None:
    """Raise the first mismatch a background check found (called by every compiled program's call)."""
    if _found:
        with _lock:
            errors, _found[:] = list(_found), []
        raise errors[0]


def wait_for_checks() -> None:
    """Wait for the checks still running, then raise the first mismatch found (``torch.neuron.synchronize``)."""
    with _lock:
        tasks, _running[:] = list(_running), []
    for task in tasks:
        task.result()
    raise_found()


def _report_at_exit() -> None:
    try:
        wait_for_checks()
    except BaseException as e:  # noqa: BLE001 - nothing is left to raise to
        sys.stderr.write(f"torchneuron: found after the program's last synchronisation: {type(e).__name__}: {e}\n")


def tolerance(dtypes) -> float:
    """The relative tolerance of a piece: its least precise float dtype's (a float32 output computed from a
    bfloat16 matmul carries bfloat16's rounding, which XLA:CPU may skip)."""
    return max((_RTOL[d] for d in dtypes if d in _RTOL), default=_RTOL[torch.float32])


def shape_difference(got: Any, expected: Any) -> str | None:
    """Why ``got`` does not have ``expected``'s shape and dtype (values not compared), or None."""
    if isinstance(got, torch.Tensor) and isinstance(expected, torch.Tensor) and (
            got.shape != expected.shape or got.dtype != expected.dtype):
        return (f"is {got.dtype}{list(got.shape)} against {expected.dtype}{list(expected.shape)} "
                "(dtype or shape)")
    return None


def difference(got: Any, expected: Any, rtol: float) -> str | None:
    """Why ``got`` is not ``expected`` within ``rtol`` of its magnitude, or None."""
    if not isinstance(got, torch.Tensor) or not isinstance(expected, torch.Tensor):
        return None if got == expected else f"is {got!r} against {expected!r}"
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return (f"is {got.dtype}{list(got.shape)} against {expected.dtype}{list(expected.shape)} "
                "(dtype or shape)")
    if got.numel() == 0:
        return None
    if got.device.type == "neuron":
        dev.drain(got.device)
    a, b = dev.host_view(got), dev.host_view(expected)
    if a.is_complex():
        a, b = torch.view_as_real(a.resolve_conj()), torch.view_as_real(b.resolve_conj())
    if not a.is_floating_point():
        bad = a != b
        if not bad.any():
            return None
        k = int(bad.flatten().nonzero()[0])
        return f"differs at flat index {k}: {a.flatten()[k].item()} against {b.flatten()[k].item()} (exact dtype)"
    a, b = a.double(), b.double()
    same = (a == b) | (a.isnan() & b.isnan())
    finite = b[b.isfinite()]
    scale = float(finite.abs().max()) if finite.numel() else 0.0
    diff = torch.where(same, torch.zeros_like(a), (a - b).abs())
    diff = torch.where(diff.isnan(), torch.full_like(diff, float("inf")), diff)
    bad = diff > rtol * (b.abs().nan_to_num(posinf=0.0) + scale) + _ATOL
    if not bad.any():
        return None
    k = int(diff.flatten().argmax())
    return (f"differs by up to {float(diff.flatten()[k]):.3g} at flat index {k}: {a.flatten()[k].item():.6g} "
            f"against {b.flatten()[k].item():.6g} ({int(bad.sum())} of {a.numel()} elements beyond the tolerance "
            f"{rtol:g} of the output's magnitude {scale:.3g} + {_ATOL:g})")
