"""The published numbers ``torchneuron.estimate`` is checked against, and the band it holds.

These are calibration points, not fitted ones: nothing in the model knows about them. Every constant is an
engine rate, a bandwidth or an overhead from the reference notes (``machine.py``, ``op_work.py``,
``cost.py``); other published numbers are used to check it the same way.

* bert-base-uncased (Hugging Face ``BertConfig()`` defaults), FP32 model compiled by neuronx-cc with its
  default auto-cast (``matmult-bf16``), weights compiled into the program (``torch_neuronx.trace``), one
  NeuronCore of a trn1 chip, sequence length 128: P50 latency 0.94 ms at batch 1 and 9.35 ms at batch 16
  (aws-neuron-sdk docs, ``about-neuron/benchmarks/trn1/``, trn1 inference performance).
* AWS's NKI matrix-multiplication tutorial, ``lhsT [8192, 4096] x rhs [8192, 8192]`` in bf16 on one trn1
  NeuronCore: 51.80 / 42.96 / 22.07 / 6.97 ms for its four versions (``torchneuron.nki.calibration``), priced
  by ``kernels.estimate_kernel`` (the NKI cost model).

    python -m torchneuron.estimator.calibration          # the table in docs/estimate.md
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import torch

from .band import BAND  # every calibration point within 25 % of its published number

__all__ = ["BAND", "BERT_TRN1", "Point", "bert_points", "nki_matmul_points"]

# (batch, published P50 ms)
BERT_TRN1 = ((1, 0.94), (16, 9.35))
BERT_SEQUENCE = 128


@dataclass
class Point:
    name: str
    published_ms: float
    estimated_ms: float

    @property
    def ratio(self) -> float:
        return self.estimated_ms / self.published_ms


def bert_base(batch: int):
    """(model, input ids) of bert-base-uncased with its default config, on the meta device: nothing
    downloaded, nothing allocated."""
    from transformers import BertConfig, BertModel

    with torch.device("meta"):
        model = BertModel(BertConfig()).eval()
    return model, torch.zeros(batch, BERT_SEQUENCE, dtype=torch.long, device="meta")


def bert_points() -> list[Point]:
    from . import estimate

    points = []
    for batch, published in BERT_TRN1:
        model, ids = bert_base(batch)
        est = estimate(model, ids, target="trn1", mode="compiled", auto_cast="matmult-bf16", weights="constants")
        points.append(Point(f"bert-base-uncased trn1 batch {batch} seq {BERT_SEQUENCE}", published,
                            est.compiled_us / 1e3))
    return points


def nki_matmul_points(names: tuple[str, ...] | None = None) -> list[Point]:
    """The tutorial's versions through ``estimate`` (about a minute each at the published size)."""
    from ..nki import calibration as nki_calibration
    from ..nki.legacy import language as nl
    from ..nki.legacy import typing as nt
    from .kernels import estimate_kernel

    shape = nki_calibration.SHAPE
    lhsT = nt.tensor[[shape["K"], shape["M"]], nl.bfloat16].placeholder()
    rhs = nt.tensor[[shape["K"], shape["N"]], nl.bfloat16].placeholder()
    points = []
    for name in names or tuple(nki_calibration.KERNELS):
        est = estimate_kernel(nki_calibration.KERNELS[name], lhsT, rhs, target="trn1")
        points.append(Point(f"NKI matmul tutorial: {name}", nki_calibration.PUBLISHED_MS[name],
                            est.compiled_us / 1e3))
    return points


def main(argv: list[str]) -> None:
    points = bert_points() + ([] if "--no-nki" in argv else nki_matmul_points())
    print(json.dumps([{**p.__dict__, "ratio": round(p.ratio, 3)} for p in points], indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
