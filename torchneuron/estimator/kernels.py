"""``estimate_kernel``: the estimate of an ``@nki.jit`` kernel, one launch priced by the NKI cost model
(``torchneuron.nki.cost``: the documented per-instruction costs scheduled over the engines and DMA queues),
shaped as an ``Estimate``.

Arguments may be NumPy arrays, torch tensors (any device, meta included) or ``nt.tensor[[shape], dtype]``
annotations: only shapes and dtypes matter, the kernel runs on zeros.
"""

from __future__ import annotations

from typing import Any

import torch

from ..nki import cost as nki_cost
from ..nki.hardware import current_target, target_named
from ..nki.kernel import Kernel
from ..nki.legacy import language as nl
from ..nki.legacy import typing as nt
from ..nki.runner import launch
from .cost import OpEstimate, Totals
from .op_work import TensorMeta
from .result import Estimate

_ENGINE = {"tensor": "Tensor", "vector": "Vector", "scalar": "Scalar", "gpsimd": "GpSimd", "dma": "DMA"}


def _placeholder(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        dtype = getattr(nl, str(value.dtype).removeprefix("torch."), None)
        if dtype is None:
            raise TypeError(f"torchneuron.estimate: an NKI kernel cannot take a {value.dtype} tensor")
        return nt.tensor[[int(s) for s in value.shape], dtype].placeholder()
    if isinstance(value, nt.TensorType):
        return value.placeholder()
    return value


def _meta(value: Any) -> list[TensorMeta]:
    if isinstance(value, torch.Tensor):
        return [TensorMeta.of(value)]
    return []


def estimate_kernel(kernel: Kernel, *inputs: Any, target: str | None = None, mode: str = "compiled",
                    **kwargs: Any) -> Estimate:
    """The estimate of one launch of ``kernel(*inputs, **kwargs)`` on ``target`` (default: the configured one)."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"estimate_kernel: expected an @nki.jit kernel, got {type(kernel).__name__}")
    t = target_named(target) if target else current_target()
    args = tuple(_placeholder(a) for a in inputs)
    kw = {k: _placeholder(v) for k, v in kwargs.items()}
    report = launch(kernel.func, args, kw, kernel.grid, kernel.api, t).report
    engines = {_ENGINE.get(k, k): v for k, v in report.engine_busy_ns.items() if v}
    name = f"nki::{kernel.func.__name__}"
    row = OpEstimate(name, int(report.flops), int(report.dma_bytes), report.latency_ns,
                     _ENGINE.get(report.bound, report.bound), nki_cost.roofline_ns(report.flops, report.dma_bytes, t),
                     engines, [m for a in inputs for m in _meta(a)], [])
    # one launch is one program: eager and compiled alike (the report's latency includes its DMA latencies)
    totals = Totals(report.latency_ns, row.bound, int(report.dma_bytes), engines)
    return Estimate(target=t.name, mode=mode, ops=[row], eager=totals, compiled=totals,
                    roofline_ns=row.roofline_ns, flops=int(report.flops),
                    peak_tensor_ns=report.flops / (t.tensor_bf16_tflops * 1e3), auto_cast="none (NKI kernel)",
                    weights="inputs")
