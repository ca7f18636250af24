"""``python -m torchneuron estimate``: the planning table for a script or a Hugging Face ``config.json``.

    python -m torchneuron estimate config.json --batch 16 --seq 128 --target trn1 --auto-cast matmult
    python -m torchneuron estimate my_model.py --train --instance trn1.32xlarge --instances 4

A script defines ``model`` (an ``nn.Module`` or a function) and ``inputs`` (a tensor or a tuple of them), and
may define ``loss_fn`` for ``--train``; build them on the meta device (``with torch.device("meta"):``) and
nothing is allocated. A ``config.json`` (or a folder holding one) is read locally — nothing is downloaded —
and its model is built on the meta device with ``batch x seq`` token ids as input.

``plan(source, ...)`` returns the numbers the command prints, for use from Python.
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
from pathlib import Path
from typing import Any

import torch

from .band import BAND
from .result import usd


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", help="a Python script defining `model` and `inputs`, or a Hugging Face config.json "
                                  "(or the folder holding it)")
    p.add_argument("--target", default=None, help="trn1 | trn2 | trn3 (default: TORCHNEURON_TARGET)")
    p.add_argument("--mode", default="compiled", choices=("compiled", "eager"))
    p.add_argument("--auto-cast", default=None, help="none | matmult | all, optionally -bf16/-fp16/-tf32/-fp8_e4m3 "
                                                     "(default: the compile setting, none)")
    p.add_argument("--weights", default="inputs", choices=("inputs", "constants"),
                   help="inference: weights read by every call (torch.compile) or compiled in (trace)")
    p.add_argument("--batch", type=int, default=1, help="config.json: samples per device")
    p.add_argument("--seq", type=int, default=128, help="config.json: tokens per sample")
    p.add_argument("--train", action="store_true", help="a training step instead of one inference call")
    p.add_argument("--optimizer", default="adamw", choices=("adamw", "sgd"))
    p.add_argument("--instance", default=None, help="trn1.2xlarge | trn1.32xlarge | trn1n.32xlarge | "
                                                    "trn2.48xlarge | trn3")
    p.add_argument("--instances", type=int, default=1)
    p.add_argument("--devices", type=int, default=None, help="data-parallel devices per instance (default: all)")
    p.add_argument("--overlap", default="backward", choices=("backward", "none"))
    p.add_argument("--tensor-parallel", type=int, default=1, help="--train: devices per model replica (Megatron "
                                                                   "tensor + sequence parallel, idealised)")
    p.add_argument("--rate", type=float, default=None, help="hourly rate in USD (default: the documented table)")
    p.add_argument("--rows", type=int, default=15, help="op rows in the inference table")
    p.add_argument("--json", action="store_true", help="print the numbers as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def load(source: str | os.PathLike, batch: int = 1, seq: int = 128, train: bool = False) -> tuple[Any, tuple, Any]:
    """(model, inputs, loss_fn or None) from a script or a local Hugging Face config."""
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    if not path.exists():
        raise FileNotFoundError(f"torchneuron estimate: {path} does not exist")
    if path.suffix == ".json":
        return _from_config(path, batch, seq, train) + (None,)
    if path.suffix != ".py":
        raise ValueError(f"torchneuron estimate: {path} is neither a Python script nor a config.json")
    scope = runpy.run_path(str(path), run_name="__torchneuron_estimate__")
    if "model" not in scope or "inputs" not in scope:
        raise ValueError(f"torchneuron estimate: {path} must define `model` and `inputs` at module level "
                         "(build them under `with torch.device('meta'):` to allocate nothing)")
    inputs = scope["inputs"]
    return scope["model"], tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,), scope.get("loss_fn")


def _from_config(path: Path, batch: int, seq: int, train: bool) -> tuple[Any, tuple]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local file: never reach for the Hub
    import transformers

    config = transformers.AutoConfig.from_pretrained(str(path))
    arch = (getattr(config, "architectures", None) or [""])[0]
    auto = transformers.AutoModel
    if train and arch.endswith("ForCausalLM"):
        auto = transformers.AutoModelForCausalLM
    elif train and arch.endswith("ForMaskedLM"):
        auto = transformers.AutoModelForMaskedLM
    with torch.device("meta"):
        model = auto.from_config(config)
    if not train:
        model.eval()
    return model, (torch.zeros(batch, seq, dtype=torch.long, device="meta"),)


def plan(source: str | os.PathLike, *, target: str | None = None, mode: str = "compiled", auto_cast: Any = None,
         weights: str = "inputs", batch: int = 1, seq: int = 128, train: bool = False, optimizer: str = "adamw",
         instance: str | None = None, instances: int = 1, devices: int | None = None, overlap: str = "backward",
         rate: float | None = None, progress: bool = False, rows: int = 15,
         tensor_parallel: int = 1) -> tuple[dict, str]:
    """(numbers, planning table) for ``source``: what ``python -m torchneuron estimate`` prints."""
    from . import estimate, estimate_training
    from .progress import Progress

    model, inputs, loss_fn = load(source, batch, seq, train)
    if train:
        est = estimate_training(model, *inputs, loss_fn=loss_fn, optimizer=optimizer, target=target, mode=mode,
                                auto_cast=auto_cast, instance_type=instance, hourly_usd=rate, devices=devices,
                                instances=instances, overlap=overlap, tensor_parallel=tensor_parallel,
                                progress=progress)
        numbers = {"kind": "training", "source": str(source), "target": est.target, "mode": est.mode,
                   "auto_cast": est.auto_cast, "instance": est.instance.name, "workers": est.workers,
                   "tensor_parallel": est.tensor_parallel,
                   **{f"{p.name.split(' ')[0].replace('-', '_')}_us": p.us for p in est.parts},
                   "allreduce_us": est.allreduce.total_ns / 1e3, "exposed_allreduce_us": est.exposed_allreduce_us,
                   "step_us": est.step_us, "samples_per_s": est.samples_per_s, "tokens_per_s": est.tokens_per_s,
                   "mfu": est.mfu, "hourly_usd": est.hourly_usd, "usd_per_million_tokens": est.usd_per_million_tokens,
                   "usd_per_million_samples": est.usd_per_million_samples, "band": BAND}
        return numbers, est.table()
    with Progress("inference call", enabled=progress) as report:
        report.stage("tracing")
        est = estimate(model, *inputs, target=target, mode=mode, auto_cast=auto_cast, weights=weights)
    numbers = {"kind": "inference", "source": str(source), "target": est.target, "mode": est.mode,
               "auto_cast": est.auto_cast, "weights": est.weights, "batch": est.batch, "total_us": est.total_us,
               "eager_us": est.eager_us, "compiled_us": est.compiled_us, "roofline_us": est.roofline_us,
               "band": BAND}
    lines = [est.table(rows)]
    try:
        cost = est.cost(instance, rate)
    except ValueError as e:
        lines.append(f"cost     : {e}")
    else:
        numbers["cost"] = cost
        lines.append(f"cost     : {usd(cost['usd_per_thousand'])} per thousand inferences "
                     f"({usd(cost['low'])} - {usd(cost['high'])}, ±{BAND:.0%}; "
                     f"{usd(cost['usd_per_thousand'] * 1e3)} per million) on {cost['instance']} at "
                     f"{usd(cost['hourly_usd'])}/h, {cost['devices']} devices serving "
                     f"{cost['inferences_per_s']:,.0f} inferences/s")
    return numbers, "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    numbers, text = plan(args.source, target=args.target, mode=args.mode, auto_cast=args.auto_cast,
                         weights=args.weights, batch=args.batch, seq=args.seq, train=args.train,
                         optimizer=args.optimizer, instance=args.instance, instances=args.instances,
                         devices=args.devices, overlap=args.overlap, rate=args.rate, progress=not args.quiet,
                         rows=args.rows, tensor_parallel=args.tensor_parallel)
    print(json.dumps(numbers, indent=2, default=str) if args.json else text)
    return 0
