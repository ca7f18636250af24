"""Data-parallel gradient all-reduce time from the interconnect: ring collectives, hierarchical across
instances (reduce-scatter inside the instance, all-reduce of each shard over EFA, all-gather back).

A ring all-reduce of ``B`` bytes over ``n`` workers moves ``2 (n-1)/n * B`` through each worker's slowest
link in ``2 (n-1)`` steps. Inside one chip the devices exchange through the chip's memory (their DMA
streaming rate); between chips of an instance over NeuronLink, each chip's bandwidth shared by its devices;
between instances over EFA, the instance's bandwidth shared by its devices' shards.
"""

from __future__ import annotations

from dataclasses import dataclass

from .instances import EFA_STEP_NS, NEURONLINK_STEP_NS, Instance
from .machine import Machine


@dataclass
class AllReduce:
    nbytes: int
    workers: int
    intra_ns: float        # inside each instance (chip memory or NeuronLink)
    inter_ns: float        # between instances (EFA)
    link: str              # the links used, for the table

    @property
    def total_ns(self) -> float:
        return self.intra_ns + self.inter_ns


def all_reduce(nbytes: int, m: Machine, inst: Instance, devices: int, instances: int) -> AllReduce:
    """All-reduce of ``nbytes`` over ``devices`` neuron devices in each of ``instances`` instances."""
    workers = devices * instances
    if workers <= 1 or nbytes <= 0:
        return AllReduce(nbytes, workers, 0.0, 0.0, "none")
    intra = inter = 0.0
    links = []
    if devices > 1:
        if devices <= m.devices_per_chip:
            bw, step, links = m.stream_bytes_per_ns, 0.0, ["chip memory"]
        else:
            bw = inst.neuronlink_gb_per_s / m.devices_per_chip  # a chip's links, shared by its devices
            step, links = NEURONLINK_STEP_NS, ["NeuronLink"]
        intra = 2 * (devices - 1) / devices * nbytes / bw + 2 * (devices - 1) * step
    if instances > 1:
        if inst.efa_gbit_per_s <= 0:
            raise ValueError(f"{inst.name} has no EFA: it cannot train across {instances} instances")
        efa = inst.efa_gbit_per_s / 8  # GB/s == bytes per ns
        inter = 2 * (instances - 1) / instances * nbytes / efa + 2 * (instances - 1) * EFA_STEP_NS
        links.append("EFA")
    return AllReduce(nbytes, workers, intra, inter, " + ".join(links))
