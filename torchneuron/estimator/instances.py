"""Trainium instances: what ``estimate_training`` scales over and what ``cost`` prices.

Sources (public): AWS Trn1/Trn1n architecture page (chips, EFA Gbps), Trainium2/Trainium3 architecture pages
(NeuronLink-v3 1.28 TB/s and NeuronLink-v4 2.56 TB/s per chip), AWS EC2 on-demand prices (us-east-1, Linux).
Values marked ``assumed`` are not in AWS's architecture pages; pass your own (``Instance(...)``, or
``hourly_usd=`` to the cost functions) when you know better. Prices change: the table is a default, dated.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

PRICES_AS_OF = "2026-12 (us-east-1 on-demand, Linux)"


@dataclass(frozen=True)
class Instance:
    name: str
    target: str                    # trn1 | trn2 | trn3
    chips: int
    neuronlink_gb_per_s: float     # per chip, chip-to-chip (0: a single chip)
    efa_gbit_per_s: float          # per instance, between instances (0: no EFA, one instance only)
    hourly_usd: float | None       # on-demand list price; None: not public, pass one
    notes: str = ""

    def with_rate(self, hourly_usd: float) -> Instance:
        return replace(self, hourly_usd=float(hourly_usd))


# NeuronLink-v2's per-chip bandwidth is not in AWS's architecture pages: 384 GB/s is assumed (half of the
# 768 GB/s aggregate quoted for Trn1 at launch), which keeps data-parallel estimates on the slow side.
INSTANCES: dict[str, Instance] = {i.name: i for i in (
    Instance("trn1.2xlarge", "trn1", 1, 0.0, 0.0, 1.34375, "one chip, 2 NeuronCores; no EFA"),
    Instance("trn1.32xlarge", "trn1", 16, 384.0, 800.0, 21.50, "NeuronLink-v2 bandwidth assumed"),
    Instance("trn1n.32xlarge", "trn1", 16, 384.0, 1600.0, 24.78, "NeuronLink-v2 bandwidth assumed"),
    Instance("trn2.48xlarge", "trn2", 16, 1280.0, 3200.0, 35.76,
             "price from a third-party report of the on-demand rate: check AWS's pricing page"),
    Instance("trn3", "trn3", 1, 2560.0, 0.0, None,
             "Trainium3: NeuronLink-v4 2.56 TB/s per chip; no public instance price yet (pass hourly_usd=)"),
)}

# Latency of one step of a ring collective: a DMA between chips (reference nki.md §3: ~1.3 us) over
# NeuronLink; an EFA message between instances (assumed 15 us, SRD's typical one-way latency).
NEURONLINK_STEP_NS = 1300.0
EFA_STEP_NS = 15000.0


def instance(name: str | Instance, hourly_usd: float | None = None) -> Instance:
    """An instance type by name (``trn1.32xlarge``, ...), optionally at your own hourly rate."""
    inst = name if isinstance(name, Instance) else INSTANCES.get(str(name).lower())
    if inst is None:
        raise ValueError(f"unknown instance type {name!r}; known: {', '.join(INSTANCES)} "
                         "(or pass an estimator.instances.Instance)")
    return inst.with_rate(hourly_usd) if hourly_usd is not None else inst


def default_for(target: str) -> Instance:
    """The smallest instance of a target's generation."""
    return {"trn1": INSTANCES["trn1.2xlarge"], "trn2": INSTANCES["trn2.48xlarge"],
            "trn3": INSTANCES["trn3"]}[target]
