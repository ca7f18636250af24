"""The Neuron decomposition table: ATen ops rewritten into simpler ATen ops before lowering.

This module only assembles the table; every decomposition lives in its family package (``decomp_*``, plus
``attention`` and ``variance``), and helpers shared across families in ``decomp_common``. The table is:

1. torch-mlir's table for the FX importer (PyTorch's core-ATen decompositions plus the overloads torch-mlir
   needs), with the backward ops AOTAutograd emits added (``_added``);
2. every family's rewrites, in a fixed order (a later family wins where two name the same op);
3. ``prims`` mapped back to ATen where that does not loop, strides-agnostic ``view``, and 0-d reductions
   wrapped to run on 1-element views;
4. on demand, when torch-mlir reports an op it cannot legalize, PyTorch's decomposition of that op
   (``on_demand``, used by ``trace``), except for the ops torch-mlir lowers natively.

The table is built once (lazily: importing torch-mlir costs ~1 s) and shared by every lowering path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from . import (attention, decomp_bessel, decomp_fft, decomp_indexing, decomp_linalg, decomp_nn, decomp_pointwise,
               decomp_special, decomp_tensors, variance)

aten = torch.ops.aten

# Order matters only where two families name the same op: the later one wins.
FAMILIES = (decomp_pointwise, decomp_tensors, attention, variance, decomp_special, decomp_bessel, decomp_linalg,
            decomp_fft, decomp_indexing, decomp_nn)


def _added() -> list:
    # Backward ops AOTAutograd emits for training graphs; their decompositions are pointwise/reduction
    # chains that torch-mlir lowers. Anything else that fails to legalize is decomposed on demand (see
    # ``on_demand``), so this list stays short.
    names = [
        "tanh_backward", "sigmoid_backward", "threshold_backward", "gelu_backward", "silu_backward",
        "hardswish_backward", "hardsigmoid_backward", "elu_backward", "leaky_relu_backward",
        "softplus_backward", "native_layer_norm_backward", "native_group_norm_backward",
        "_softmax_backward_data", "_log_softmax_backward_data", "embedding_dense_backward",
        "mse_loss_backward", "nll_loss_backward", "slice_backward", "select_backward",
        "diagonal_backward", "unfold_backward", "native_batch_norm_backward",
        # eval-mode native_batch_norm lowers to 0-element saved statistics that torch-mlir mis-types;
        # the decomposition also makes training-mode running-stat updates visible to functionalization
        "native_batch_norm",
    ]
    return [p for p in (getattr(aten, n, None) for n in names) if p is not None]


def on_demand(mlir_op: str) -> dict[torch._ops.OperatorBase, Callable]:
    """PyTorch's decompositions for a torch-mlir op name that failed to legalize (``torch.aten.foo`` →
    every overload of ``aten.foo`` PyTorch can decompose), or {} if it has none."""
    from torch._decomp import decomposition_table

    name = mlir_op.removeprefix("torch.aten.").removesuffix("_")
    packet = getattr(aten, name, None)
    if packet is None:
        return {}
    keep = _lowered_natively()
    return {getattr(packet, ov): decomposition_table[getattr(packet, ov)]
            for ov in packet.overloads()
            if getattr(packet, ov) in decomposition_table and getattr(packet, ov) not in keep}


@functools.cache
def _lowered_natively() -> frozenset:
    """ATen ops torch-mlir lowers itself and that the ``prims`` mappings below produce: never decomposed on
    demand (their PyTorch decompositions bottom out in the very prims that map back to them)."""
    ops = {aten.clone.default, aten.expand.default, aten.reshape.default, aten.view.default, aten._to_copy.default,
           aten.where.self, aten.sqrt.default, aten.fmax.default, aten.fmin.default, aten.permute.default,
           aten.squeeze.dims, aten.unsqueeze.default, aten.slice.Tensor, aten.cat.default, aten.sum.dim_IntList}
    for name in decomp_tensors.BINARY + decomp_tensors.UNARY:
        packet = getattr(aten, name)
        ops.add(getattr(packet, "Tensor", None) or packet.default)
        if hasattr(packet, "default"):
            ops.add(packet.default)
    return frozenset(ops)


# Lowered directly by torch-mlir (one StableHLO op / a better pattern than the decomposition).
_KEEP: tuple[str, ...] = ()


@functools.cache
def neuron_decompositions() -> dict[torch._ops.OperatorBase, Callable]:
    from torch._decomp import get_decompositions
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = dict(get_decomposition_table())
    for op, fn in get_decompositions(_added()).items():
        table.setdefault(op, fn)
    for family in FAMILIES:
        table.update(family.table())
    for prim, target, fn in decomp_tensors.prims_rows():
        if target not in table and prim not in table:  # a target that decomposes into the prim would loop
            table[prim] = fn
    table.setdefault(aten.view.default, decomp_tensors.view_any_strides)
    decomp_tensors.wrap_zero_d(table)
    for name in _KEEP:
        packet = getattr(aten, name, None)
        if packet is None:
            continue
        for ov in packet.overloads():
            table.pop(getattr(packet, ov), None)
    return table
