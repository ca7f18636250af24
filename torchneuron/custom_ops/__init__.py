"""NKI kernels as PyTorch custom operators (AWS TorchNeuron's surface).

    import torch
    from torchneuron import nki, nki_op
    import torchneuron.nki.language as nl
    import torchneuron.nki.isa as nisa

    @nki.jit
    def scale_kernel(x, out):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out, src=t)

    @nki_op("mylib::scale", mutates_args=())
    def scale(x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        scale_kernel(x, out)
        return out

    torch.ops.mylib.scale(torch.randn(128, 64, device="neuron"))

``nki_op`` is ``torch.library.custom_op`` for a function that launches NKI kernels: its fake implementation is
the function itself run on fake tensors (kernels launch shape-only), ``register_autograd`` /
``register_fake`` work as on any custom op, and under ``torch.compile(backend="neuron")`` the op is one node.
``wrap_nki(kernel)`` gives a callable taking torch tensors and a grid (``k[grid](...)``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["nki_op", "wrap_nki"]


def __getattr__(name: str) -> Any:
    # lazily: torch.compile asks the registry about every graph and must not load the simulator to do so
    if name == "nki_op":
        from .op import nki_op

        return nki_op
    if name == "wrap_nki":
        from .wrap import wrap_nki

        return wrap_nki
    raise AttributeError(f"module 'torchneuron.custom_ops' has no attribute {name!r}")
