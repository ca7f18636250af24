"""Tensor parallelism with sequence parallelism (Megatron-style) for transformer blocks, idealised.

Each of ``k`` devices holds a ``1/k`` shard of every weight (attention heads and MLP columns/rows, the
vocabulary of the embedding and the head) and of the sequence outside them (layer norms, dropout,
residuals), so every op's work and HBM traffic divide by ``k`` — at the unsharded shapes' tile efficiency,
which is optimistic once a shard falls below 128 rows. Per block, the forward all-gathers the sequence before
attention and the MLP and reduce-scatters after each (2 + 2 collectives of the block's activations,
``tokens x hidden`` elements), and the backward does the same again; these sit on the critical path.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .cost import OpEstimate
from .instances import NEURONLINK_STEP_NS, Instance
from .machine import Machine


@dataclass
class TensorParallel:
    degree: int
    layers: int
    hidden: int
    collective_ns: float    # forward and backward all-gathers and reduce-scatters, one device
    link: str


def shard(ops: list[OpEstimate], op_bytes: list[int], k: int) -> tuple[list[OpEstimate], list[int]]:
    """One device's ``1/k`` of each op (engine time and HBM bytes) and of the program's traffic."""
    if k == 1:
        return ops, op_bytes
    scaled = [replace(op, flops=op.flops // k, bytes=op.bytes // k, time_ns=op.time_ns / k,
                      roofline_ns=op.roofline_ns / k, engines={e: v / k for e, v in op.engines.items()})
              for op in ops]
    return scaled, [b // k for b in op_bytes]


def collectives(k: int, layers: int, tokens: int, hidden: int, itemsize: int, m: Machine,
                inst: Instance) -> TensorParallel:
    """Time of a step's sequence-parallel collectives on one device of a ``k``-way group."""
    if k == 1:
        return TensorParallel(1, layers, hidden, 0.0, "none")
    if k <= m.devices_per_chip:
        bw, step, link = m.stream_bytes_per_ns, 0.0, "chip memory"
    else:
        if inst.neuronlink_gb_per_s <= 0:
            raise ValueError(f"{inst.name} has one chip: tensor parallel over {k} devices needs NeuronLink")
        bw, step, link = inst.neuronlink_gb_per_s / m.devices_per_chip, NEURONLINK_STEP_NS, "NeuronLink"
    nbytes = tokens * hidden * itemsize
    one = (k - 1) / k * nbytes / bw + (k - 1) * step  # a ring all-gather or reduce-scatter
    return TensorParallel(k, layers, hidden, 8 * layers * one, link)


def transformer_shape(model) -> tuple[int, int] | None:
    """(layers, hidden size) of a Hugging Face transformer, from its config."""
    config = getattr(model, "config", None)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
    return (int(layers), int(hidden)) if layers and hidden else None
