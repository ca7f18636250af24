"""The check every ``test_decomp_*.py`` makes: an ATen op (alone, through the strict-eager path) or a function
(as one program) lowered through its decompositions to StableHLO and run on XLA:CPU gives what CPU eager gives.

One tolerance table for all of them, picked by the dtype of the inputs, so a family's tests cannot drift to
their own looser numbers.
"""

from __future__ import annotations

import torch
import torch.utils._pytree as pytree

import torchneuron
from torchneuron.programs.single_op import run_op

# The OpInfo sweep's tolerances (torchneuron/testing/opinfo_sweep.py), as (rtol, atol). Inputs of any other
# dtype (integer, complex, float64) are held to float32's: they compute in float32 or better.
TOL = {torch.float32: (1.3e-4, 1e-4), torch.bfloat16: (3.2e-2, 2e-2)}


def tolerance(inputs) -> tuple[float, float]:
    """(rtol, atol) for the first floating-point tensor among ``inputs`` (any pytree)."""
    dtype = next((t.dtype for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)
                  and t.is_floating_point()), torch.float32)
    return TOL.get(dtype, TOL[torch.float32])


def _on_cpu(tree):
    return pytree.tree_map(lambda v: v.cpu() if isinstance(v, torch.Tensor) else v, tree)


def lowered_op(op, *args, **kwargs):
    """``op(*args, **kwargs)`` run alone through single-op lowering → StableHLO → XLA:CPU, results on the CPU."""
    return _on_cpu(run_op(op, args, kwargs))


def lowered_fn(fn, *args):
    """``fn`` lowered as one program (``torchneuron.lower``), compiled and run on neuron copies of ``args``;
    results on the CPU."""
    return _on_cpu(torchneuron.lower(fn, *args).compile()(*(a.to("neuron") for a in args)))


def _pairs(actual, expected) -> list[tuple]:
    got, want = pytree.tree_leaves(actual), pytree.tree_leaves(expected)
    assert len(got) == len(want), f"{len(got)} results, expected {len(want)}"
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    return list(zip(got, want))


def assert_matches(actual, expected, tol: tuple[float, float] = TOL[torch.float32]) -> None:
    """Same number of results, each of eager's dtype and shape, close within ``tol`` (NaN where eager has NaN)."""
    for g, w in _pairs(actual, expected):
        torch.testing.assert_close(g, w, rtol=tol[0], atol=tol[1], equal_nan=True)


def assert_equal(actual, expected) -> None:
    """Same number of results, each of eager's dtype and shape and bit-for-bit equal (data movement, no math)."""
    for g, w in _pairs(actual, expected):
        assert torch.equal(g, w), (g, w)


def check_op(op, *args, **kwargs):
    """The op lowered alone matches CPU eager within the inputs' tolerance; returns the lowered results."""
    actual = lowered_op(op, *args, **kwargs)
    assert_matches(actual, op(*args, **kwargs), tolerance((args, kwargs)))
    return actual


def check_fn(fn, *args):
    """``fn`` lowered as one program matches CPU eager within the inputs' tolerance; returns the lowered results."""
    actual = lowered_fn(fn, *args)
    assert_matches(actual, fn(*args), tolerance(args))
    return actual
