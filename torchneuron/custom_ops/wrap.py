"""``wrap_nki(kernel)``: an ``@nki.jit`` kernel as a callable on torch tensors, with a launch grid."""

from __future__ import annotations

from typing import Any

from ..nki import torch_io
from ..nki.kernel import Kernel, as_kernel


class NkiKernel:
    """``wrap_nki(kernel)(*tensors)`` or ``wrap_nki(kernel)[grid](*tensors)``: the kernel runs on the tensors'
    neuron device (on the simulator: directly on the device buffers). Outputs the kernel allocates come back
    as neuron tensors; a kernel that writes an argument writes that tensor. Under ``torch.compile`` (and
    ``torch.export``) the launch is one node of the graph (``launch``: a ``torchneuron::nki_launch`` op)."""

    def __init__(self, kernel: Any, grid: Any = None, gridded: Kernel | None = None, api: str | None = None):
        # Dynamo traces this when `wrap_nki(k)[grid]` is written inside a compiled function: plain attributes
        # only (the gridded Kernel is made eagerly, or by launch.plan at trace time)
        self.base = kernel
        self.grid = grid
        self.api = api if api is not None else getattr(kernel, "api", "current")
        self._kernel = gridded

    @property
    def kernel(self) -> Kernel:
        if self._kernel is None:
            k = as_kernel(self.base, self.api)
            self._kernel = k if self.grid is None else k[self.grid]
        return self._kernel

    def __getitem__(self, grid: Any) -> NkiKernel:
        import torch

        if torch.compiler.is_compiling():
            if self.grid is None:
                return NkiKernel(self.base, grid, None, self.api)
            return NkiKernel(self.kernel[grid])  # raises: the kernel already has a grid
        return NkiKernel(self.base, grid, self.kernel[grid], self.api)  # the grid is checked here

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import torch

        if torch.compiler.is_compiling():
            return _in_graph(self, args, kwargs)
        return _launch(self.kernel, args, kwargs)

    def __repr__(self) -> str:
        return f"wrap_nki({self.kernel!r})"


def _launch(kernel: Kernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    with torch_io.device_only("torchneuron.wrap_nki"):
        return kernel(*args, **kwargs)


def _in_graph(k: NkiKernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The launch as one ``torchneuron::nki_launch`` node. Dynamo traces this function: the plan (which
    registers the launch) is made by ``launch.plan``, which Dynamo calls with constants instead of tracing."""
    import torch

    from . import launch

    names = sorted(kwargs)
    # as in eager, the kernel's outputs carry no autograd history (nor do its writes): tensors that require
    # grad go in detached (only those: a detach of a fresh torch.empty would hide from the compile check
    # that its values are undefined)
    tensors = [a.detach() if a.requires_grad else a for a in (*args, *(kwargs[n] for n in names))
               if isinstance(a, torch.Tensor)]
    index, returns, written = _plan(k.base, k.api, k.grid, tuple(launch.slot(a) for a in args),
                                    tuple((n, launch.slot(kwargs[n])) for n in names))
    if index == launch.UNPLANNED:  # first launch of this kernel with these slots: probe it on the traced shapes
        # (symbolic shapes are no constants: Dynamo then breaks the graph here, runs the probe on the real
        # shapes and resumes, the launch still a node of the graph that follows)
        index, returns, written = _plan(k.base, k.api, k.grid, tuple(launch.slot(a, True) for a in args),
                                        tuple((n, launch.slot(kwargs[n], True)) for n in names))
    if written:  # the kernel writes these arguments (and returns nothing): declared written
        torch.ops.torchneuron.nki_launch_.default(index, [t for i, t in enumerate(tensors) if i not in written],
                                          [t for i, t in enumerate(tensors) if i in written])
        return None
    return launch.results(torch.ops.torchneuron.nki_launch.default(index, tensors), returns)


def _plan(kernel: Any, api: str, grid: Any, args: tuple[Any, ...],
          kwargs: tuple[Any, ...]) -> tuple[int, str, tuple[int, ...]]:
    from . import launch

    return launch.plan(kernel, api, grid, args, kwargs)


# torch._dynamo.assume_constant_result, without importing Dynamo: Dynamo calls _plan with the constants it
# traced and puts its result in the graph as a constant, instead of tracing the registration and the probe
_plan._dynamo_marked_constant = True  # type: ignore[attr-defined]


def wrap_nki(kernel: Any) -> NkiKernel:
    """Wrap an ``@nki.jit`` kernel (current ``nki`` or legacy ``neuronxcc.nki``; a plain function is taken as a
    current-API kernel) so it takes torch tensors: ``wrap_nki(k)[grid](x, y)``."""
    if isinstance(kernel, NkiKernel):
        return kernel
    import torch

    if torch.compiler.is_compiling():
        return NkiKernel(kernel)
    return NkiKernel(kernel, None, as_kernel(kernel, getattr(kernel, "api", "current")))
