"""nn.LSTM / nn.GRU on the simulator in one host call, as the CPU runs them (its fused mkldnn RNN).

On a PrivateUse1 device ATen's ``lstm`` / ``gru`` run cell by cell: a matmul and a fused-cell kernel per
time step and layer (``_thnn_fused_lstm_cell``), each a separate device op. On the simulator the device's
memory is host memory, so the whole ``aten::lstm.input`` / ``aten::gru.input`` can instead run as the CPU's
kernel on host views of the device buffers (``programs.host_bridge.call_on_host_views``), forward and
backward: one device op per call, the CPU's numbers exactly, results in device memory without copies.

Registered for neuron at the autograd layer (``AutogradPrivateUse1``, at the device's first initialisation,
sim runtime only); a call takes the per-cell path (ATen's composite kernel) whenever the fused one would
differ from it: while compiling or on fake tensors, with inter-layer dropout in training (the CPU kernel
would draw from the CPU's generator, not neuron's), or with inputs on different devices.
"""

from __future__ import annotations

from typing import Any

import torch

_library: torch.library.Library | None = None


def _real_neuron(tensors: list[torch.Tensor]) -> bool:
    from torch._subclasses.fake_tensor import is_fake

    return all(t.device.type == "neuron" and not is_fake(t) and not torch._is_functional_tensor(t)
               for t in tensors) and len({t.device for t in tensors}) == 1


class _HostRNN(torch.autograd.Function):
    """The CPU's ``torch.lstm`` / ``torch.gru`` on host views; its CPU autograd graph kept for backward."""

    @staticmethod
    def forward(ctx: Any, fn: Any, n_hx: int, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from torchneuron.programs import host_bridge

        needs = [t.requires_grad for t in tensors]
        graph: dict[str, Any] = {}

        def run(hosts: list[torch.Tensor]) -> list[torch.Tensor]:
            with torch.enable_grad():
                leaves = [h.detach().requires_grad_(n) for h, n in zip(hosts, needs)]
                outs = fn(leaves[0], leaves[1:1 + n_hx], leaves[1 + n_hx:])
            graph["leaves"], graph["outs"] = leaves, outs
            return [o.detach() for o in outs]

        device = tensors[0].device
        outs = host_bridge.call_on_host_views(run, list(tensors), device)
        # The CPU graph keeps host views of the inputs (h0, the layer input) for backward; a host view does not
        # own its memory, so the neuron tensors stay alive with the graph.
        graph["inputs"] = tensors
        ctx.graph, ctx.device, ctx.needs = graph, device, needs
        return tuple(outs)

    @staticmethod
    @torch.autograd.function.once_differentiable  # as the CPU's fused RNN: no double backward
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:
        from torchneuron.programs import host_bridge

        graph, needs = ctx.graph, ctx.needs
        pairs = [(o, g) for o, g in zip(graph["outs"], grads) if g is not None]
        wanted = [leaf for leaf, n in zip(graph["leaves"], needs) if n]

        def run(host_grads: list[torch.Tensor]) -> list[torch.Tensor]:
            got = torch.autograd.grad([o for o, _ in pairs], wanted, host_grads, allow_unused=True)
            return [torch.zeros_like(w) if g is None else g for w, g in zip(wanted, got)]

        results = iter(host_bridge.call_on_host_views(run, [g for _, g in pairs], ctx.device) if pairs else [])
        ctx.graph = None  # the CPU graph is freed with the first backward, as autograd frees its own
        return (None, None, *[next(results) if n else None for n in needs])


def _forward_only(fn: Any, n_hx: int, tensors: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """No gradient wanted: the CPU kernel on host views, no CPU graph."""
    from torchneuron.programs import host_bridge

    def run(hosts: list[torch.Tensor]) -> list[torch.Tensor]:
        with torch.no_grad():
            return list(fn(hosts[0], hosts[1:1 + n_hx], hosts[1 + n_hx:]))

    return tuple(host_bridge.call_on_host_views(run, tensors, tensors[0].device))


def _fused(op: Any, cpu_call: Any, hx: list[torch.Tensor], input: torch.Tensor, params: list[torch.Tensor],
           args: tuple[Any, ...], decompose_args: tuple[Any, ...], autograd: bool) -> Any:
    num_layers, dropout, train = args[1], args[2], args[3]
    tensors = [input, *hx, *params]
    if torch.compiler.is_compiling() or not _real_neuron(tensors):
        return op.decompose(*decompose_args)  # what tracing uses without this registration
    if dropout > 0 and train and num_layers > 1:
        # ATen's C++ composite kernel, the eager per-cell path (op.decompose would prefer the Python
        # decomposition torch._decomp registers for tracing, which draws no dropout masks in eager)
        return op._op_dk(torch._C.DispatchKey.CompositeImplicitAutograd, *decompose_args)
    if autograd and torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return _HostRNN.apply(cpu_call, len(hx), *tensors)
    return _forward_only(cpu_call, len(hx), tensors)


def _lstm_kernel(autograd: bool):
    def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        args = (has_biases, num_layers, dropout, train, bidirectional, batch_first)

        def cpu(x, h, p):
            return torch.ops.aten.lstm.input(x, h, p, *args)

        return _fused(torch.ops.aten.lstm.input, cpu, list(hx), input, list(params), args,
                      (input, hx, params, *args), autograd)

    return lstm


def _gru_kernel(autograd: bool):
    def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        args = (has_biases, num_layers, dropout, train, bidirectional, batch_first)

        def cpu(x, h, p):
            return torch.ops.aten.gru.input(x, h[0], p, *args)

        return _fused(torch.ops.aten.gru.input, cpu, [hx], input, list(params), args,
                      (input, hx, params, *args), autograd)

    return gru


def install() -> None:
    """Register the fused path (sim runtime; called at the device's first initialisation): at the autograd
    layer, and at the device layer for calls that arrive below it (torch.inference_mode)."""
    global _library
    if _library is not None:
        return
    lib = torch.library.Library("aten", "IMPL")
    for key, autograd in (("AutogradPrivateUse1", True), ("PrivateUse1", False)):
        lib.impl("lstm.input", _lstm_kernel(autograd), key)
        lib.impl("gru.input", _gru_kernel(autograd), key)
    _library = lib
