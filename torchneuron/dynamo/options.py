"""``torchneuron.compile_options(buckets=...)``: bound how many static programs ragged inputs compile.

Neuron programs are static-shape, so each distinct size of a dynamic dimension compiles a program. With
buckets, an inference graph whose dimension is dynamic (``torch._dynamo.mark_dynamic(x, 0)``, ``dynamic=True``
or Dynamo's automatic dynamic shapes) is compiled only for the bucket sizes: inputs are padded with zeros up to
the next bucket and every output dimension of that size is sliced back.

Padding is exact when rows along the bucketed dimension do not mix (per-example or per-position models:
MLPs, convolutions over a batch, causal attention over the sequence); a model that reduces over the padded
dimension (a mean over the batch, non-causal attention without a mask) sees the zeros. Buckets are applied to
inference graphs only: in training the padded rows would contribute to gradients.
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Iterator, Sequence

import torch

from ..lowering import auto_cast as _auto_cast

_buckets: dict[int | None, list[int]] = {}


@contextlib.contextmanager
def _restore(saved: dict, saved_cast: _auto_cast.AutoCast) -> Iterator[None]:
    try:
        yield
    finally:
        _buckets.clear()
        _buckets.update(saved)
        _auto_cast.set_current(saved_cast)


def compile_options(*, buckets: dict[int, Sequence[int]] | Sequence[int] | None = None,
                    auto_cast: str | tuple[str, str] | None = None):
    """Set compile options for ``torch.compile(backend="neuron")``; usable as a context manager too (the
    previous options come back on exit).

    ``buckets``: sizes to pad dynamic dimensions to, either a list (every dynamic dimension) or a dict from a
    tensor dimension index to its sizes (``{0: [8, 16, 32], 1: [128, 256]}``). ``None`` or ``{}`` turns
    bucketing off.

    ``auto_cast``: neuronx-cc's auto-cast, ``"none"`` (the default: compiled numerics equal eager ones),
    ``"matmult"`` or ``"all"``, optionally with the cast type (``"matmult-bf16"``, ``("matmult", "fp16")``;
    bf16, fp16, tf32, fp8_e4m3). Passed to neuronx-cc on a Trn host and emulated by the simulator (FP32
    matmul operands rounded to the type, FP32 accumulation); ``None`` keeps the current setting.
    """
    saved, saved_cast = dict(_buckets), _auto_cast.current()
    if auto_cast is not None:
        _auto_cast.set_current(auto_cast)  # parsed first: a bad value changes nothing
    _buckets.clear()
    if buckets:
        items = buckets.items() if isinstance(buckets, dict) else [(None, buckets)]
        for dim, sizes in items:
            sizes = sorted({int(s) for s in sizes})
            if not sizes or sizes[0] < 1 or (dim is not None and not isinstance(dim, int)):
                raise ValueError(f"compile_options(buckets=...): {dim!r}: {list(sizes)} must map a dimension "
                                 "index to positive sizes, e.g. buckets={0: [8, 16, 32]}")
            _buckets[dim] = sizes
    return _restore(saved, saved_cast)


def _bucket_for(dim: int, size: int) -> int:
    sizes = _buckets.get(dim) or _buckets.get(None)
    if not sizes:
        return size
    i = bisect.bisect_left(sizes, size)
    return sizes[i] if i < len(sizes) else size  # larger than every bucket: its own program


class Bucketer:
    """Pads one graph's dynamic dimensions to buckets and slices its outputs back."""

    def __init__(self, example_inputs: list, output_vals: list, enabled: bool):
        self._inputs: list[tuple[int, int, str]] = []   # (input index, dim, symbol)
        self._scalars: list[tuple[int, str]] = []      # (input index, symbol) for SymInt inputs
        self._outputs: list[tuple[int, int, str]] = []
        self.enabled = enabled and bool(_buckets)
        for i, v in enumerate(example_inputs):
            if isinstance(v, torch.SymInt):
                self._scalars.append((i, str(v.node.expr)))
            elif isinstance(v, torch.Tensor):
                for d, s in enumerate(v.shape):
                    if isinstance(s, torch.SymInt):
                        if not s.node.expr.is_Symbol:
                            self.enabled = False  # a size like 2*s0: padding s0 would not pad it consistently
                        self._inputs.append((i, d, str(s.node.expr)))
        for i, v in enumerate(output_vals):
            if isinstance(v, torch.Tensor):
                for d, s in enumerate(v.shape):
                    if isinstance(s, torch.SymInt) and s.node.expr.is_Symbol:
                        self._outputs.append((i, d, str(s.node.expr)))

    def pad(self, args: list):
        """(padded args, function slicing the outputs back)."""
        if not self.enabled:
            return args, lambda out: out
        actual: dict[str, int] = {}
        target: dict[str, int] = {}
        for i, d, sym in self._inputs:
            if sym not in actual:
                actual[sym] = int(args[i].shape[d])
                target[sym] = _bucket_for(d, actual[sym])
        if all(actual[s] == target[s] for s in actual):
            return args, lambda out: out
        padded = list(args)
        for i, d, sym in self._inputs:
            t = padded[i]
            if t.shape[d] < target[sym]:
                shape = list(t.shape)
                shape[d] = target[sym] - t.shape[d]
                padded[i] = torch.cat([t, t.new_zeros(shape)], dim=d)
        for i, sym in self._scalars:
            if sym in target:
                padded[i] = target[sym]

        def unpad(out: list) -> list:
            out = list(out)
            for i, d, sym in self._outputs:
                if sym in actual and isinstance(out[i], torch.Tensor) and out[i].shape[d] != actual[sym]:
                    out[i] = out[i].narrow(d, 0, actual[sym])
            return out

        return padded, unpad
