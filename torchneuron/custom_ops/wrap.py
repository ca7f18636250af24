"""``wrap_nki(kernel)``: an ``@nki.jit`` kernel as a callable on torch tensors, with a launch grid."""

from __future__ import annotations

from typing import Any

from ..nki import torch_io
from ..nki.kernel import Kernel, as_kernel


class NkiKernel:
    """``wrap_nki(kernel)(*tensors)`` or ``wrap_nki(kernel)[grid](*tensors)``: the kernel runs on the tensors'
    neuron device (on the simulator: directly on the device buffers). Outputs the kernel allocates come back
    as neuron tensors; a kernel that writes an argument writes that tensor. Under ``torch.compile`` the call
    is a graph break: the kernel runs eagerly between compiled graphs (register it with ``nki_op`` to make it
    one node of the graph)."""

    def __init__(self, kernel: Kernel):
        import torch

        self.kernel = kernel
        # Dynamo must not trace into the simulator: while compiling, the launch is a graph break
        self._graph_break = torch.compiler.disable(_launch, recursive=True)

    def __getitem__(self, grid: Any) -> NkiKernel:
        return NkiKernel(self.kernel[grid])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        if torch.compiler.is_compiling():
            return self._graph_break(self.kernel, args, kwargs)
        return _launch(self.kernel, args, kwargs)

    def __repr__(self) -> str:
        return f"wrap_nki({self.kernel!r})"


def _launch(kernel: Kernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    with torch_io.device_only("torchneuron.wrap_nki"):
        return kernel(*args, **kwargs)


def wrap_nki(kernel: Any) -> NkiKernel:
    """Wrap an ``@nki.jit`` kernel (current ``nki`` or legacy ``neuronxcc.nki``; a plain function is taken as a
    current-API kernel) so it takes torch tensors: ``wrap_nki(k)[grid](x, y)``."""
    if isinstance(kernel, NkiKernel):
        return kernel
    return NkiKernel(as_kernel(kernel, getattr(kernel, "api", "current")))
