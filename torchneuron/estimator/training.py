"""``torchneuron.estimate_training``: one training step — forward, backward, optimizer update — on each of
N data-parallel neuron devices, the gradient all-reduce between them, and what that gives: step time,
samples/s, tokens/s, MFU and dollars.

The forward and backward are traced together (one ATen graph, ``torch.autograd.grad`` of the loss) and
priced as ``torch.compile(backend="neuron")`` runs them: two programs, the forward writing the activations the
backward reads back, the backward reading the weights again. The optimizer update (AdamW or SGD, written with
``torch._foreach`` ops as PyTorch's foreach implementation runs) is a third program over every parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx
from torch.utils import _pytree as pytree

from ..lowering import auto_cast as _auto_cast
from .band import BAND
from .collectives import AllReduce, all_reduce
from .cost import OpEstimate, Totals, eager_totals, fused_totals
from .graph import _nbytes, _readers, _root, graph_cost, output_tensors
from .instances import Instance, default_for, instance
from .machine import Machine, machine
from .progress import Progress
from .tensor_parallel import collectives, shard, transformer_shape
from .result import human, usd

DDP_BUCKET_BYTES = 25 * 2 ** 20  # gradients are all-reduced in buckets of this size as the backward makes them


@dataclass
class Part:
    name: str
    ops: list[OpEstimate]
    totals: Totals

    @property
    def us(self) -> float:
        return self.totals.total_us

    @property
    def flops(self) -> int:
        return sum(op.flops for op in self.ops)


@dataclass
class TrainingEstimate:
    target: str
    mode: str
    auto_cast: str
    optimizer: str
    parts: list[Part]                 # forward, backward, optimizer: one device's programs
    allreduce: AllReduce
    exposed_allreduce_us: float       # the part of the all-reduce the backward does not hide
    overlap: str
    instance: Instance
    devices: int                      # data-parallel replicas per instance (each tensor_parallel devices)
    instances: int
    samples_per_device: int
    tokens_per_sample: int | None
    peak_flops_per_ns: float
    notes: list[str] = field(default_factory=list)
    tensor_parallel: int = 1          # devices per model replica

    def part(self, name: str) -> Part:
        return next(p for p in self.parts if p.name == name)

    @property
    def compute_us(self) -> float:
        return sum(p.us for p in self.parts)

    @property
    def step_us(self) -> float:
        return self.compute_us + self.exposed_allreduce_us

    @property
    def workers(self) -> int:
        """Data-parallel replicas (each ``tensor_parallel`` devices)."""
        return self.devices * self.instances

    @property
    def samples_per_s(self) -> float:
        return self.samples_per_device * self.workers / (self.step_us / 1e6)

    @property
    def tokens_per_s(self) -> float | None:
        return None if self.tokens_per_sample is None else self.samples_per_s * self.tokens_per_sample

    @property
    def flops_per_device(self) -> int:
        """Matmul FLOPs of one device's forward and backward (model FLOPs: the optimizer's are not counted;
        with tensor parallel, the device's shard)."""
        return self.part("forward").flops + self.part("backward").flops

    @property
    def mfu(self) -> float:
        """Model FLOPs utilisation: the forward and backward matmul FLOPs over the device's bf16 peak for the
        whole step."""
        return self.flops_per_device / (self.step_us * 1e3 * self.peak_flops_per_ns)

    @property
    def hourly_usd(self) -> float | None:
        return None if self.instance.hourly_usd is None else self.instance.hourly_usd * self.instances

    @property
    def usd_per_million_tokens(self) -> float | None:
        if self.hourly_usd is None or self.tokens_per_s is None:
            return None
        return self.hourly_usd / 3600 / self.tokens_per_s * 1e6

    @property
    def usd_per_million_samples(self) -> float | None:
        return None if self.hourly_usd is None else self.hourly_usd / 3600 / self.samples_per_s * 1e6

    def table(self) -> str:
        band = f"±{BAND:.0%}"
        lines = [f"torchneuron.estimate_training — {self.target}, {self.mode}, auto-cast {self.auto_cast}, "
                 f"optimizer {self.optimizer}",
                 f"data parallel: {self.devices} replica(s) x {self.instances} instance(s) of {self.instance.name} "
                 f"= {self.workers} worker(s) of {self.tensor_parallel} device(s), {self.samples_per_device} "
                 "sample(s) per worker",
                 f"{'part':<44} {'time us':>12} {'share':>7}  bound"]
        total = self.step_us or 1.0
        for p in self.parts:
            lines.append(f"{p.name:<44} {p.us:>12.1f} {100 * p.us / total:>6.1f}%  {p.totals.bound}")
        ar = self.allreduce
        lines.append(f"{'gradient all-reduce':<44} {ar.total_ns / 1e3:>12.1f} {'':>7}  "
                     f"{human(ar.nbytes, 'B')} over {ar.workers} workers ({ar.link})")
        lines.append(f"{'  exposed':<44} {self.exposed_allreduce_us:>12.1f} "
                     f"{100 * self.exposed_allreduce_us / total:>6.1f}%  {self.overlap}")
        lines.append(f"{'step':<44} {self.step_us:>12.1f}")
        lines.append(f"throughput : {self.samples_per_s:,.1f} samples/s"
                     + (f", {self.tokens_per_s:,.0f} tokens/s" if self.tokens_per_s is not None else ""))
        lines.append(f"MFU        : {100 * self.mfu:.1f}% ({human(self.flops_per_device)}FLOP per device per step)")
        if self.hourly_usd is not None:
            per = f"{usd(self.usd_per_million_tokens)} per million tokens" if self.usd_per_million_tokens \
                is not None else f"{usd(self.usd_per_million_samples)} per million samples"
            lines.append(f"cost       : {per} at ${self.hourly_usd:,.2f}/h "
                         f"({self.instances} x {self.instance.name}); estimate band {band}")
        else:
            lines.append(f"cost       : no public hourly rate for {self.instance.name}: pass hourly_usd=")
        lines.extend(f"note       : {n}" for n in self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _default_loss(out: Any) -> torch.Tensor:
    loss = getattr(out, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    tensors = [t for t in output_tensors(out) if t.is_floating_point()]
    if not tensors:
        raise ValueError("torchneuron.estimate_training: the model returns no floating-point tensor; pass loss_fn=")
    return tensors[0].float().pow(2).mean()


def _optimizer_step(name: str, lr: float = 1e-4, betas=(0.9, 0.999), eps: float = 1e-8, wd: float = 0.01):
    def adamw(params, grads, exp_avg, exp_avg_sq):
        torch._foreach_mul_(params, 1 - lr * wd)
        torch._foreach_lerp_(exp_avg, grads, 1 - betas[0])
        torch._foreach_mul_(exp_avg_sq, betas[1])
        torch._foreach_addcmul_(exp_avg_sq, grads, grads, value=1 - betas[1])
        denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_add_(denom, eps)
        torch._foreach_addcdiv_(params, exp_avg, denom, value=-lr)
        return params, exp_avg, exp_avg_sq

    def sgd(params, grads, exp_avg, exp_avg_sq):
        torch._foreach_add_(params, grads, alpha=-lr)
        return params

    if name not in ("adamw", "sgd"):
        raise ValueError(f"torchneuron.estimate_training: optimizer must be 'adamw' or 'sgd', got {name!r}")
    return adamw if name == "adamw" else sgd


def _crossing_bytes(gm: fx.GraphModule, forward: set[fx.Node]) -> tuple[int, int]:
    """(activations the forward saves for the backward, weights the backward reads again)."""
    saved = reread = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if any(r not in forward and r.op == "call_function" for r in _readers(node)) and \
                    any(r in forward for r in _readers(node)):
                reread += _nbytes(node)
        elif node in forward and _root(node) is node and \
                any(r not in forward and r.op == "call_function" for r in _readers(node)):
            saved += _nbytes(node)
    return saved, reread


def _program(name: str, ops: list[OpEstimate], op_bytes: list[int], extra: int, m: Machine, mode: str) -> Part:
    totals = fused_totals(ops, op_bytes, extra, m) if mode == "compiled" else eager_totals(ops)
    return Part(name, ops, totals)


def estimate_training(model: torch.nn.Module, *inputs: Any, loss_fn=None, optimizer: str = "adamw",
                      target: str | None = None, mode: str = "compiled", auto_cast: Any = None,
                      instance_type: str | Instance | None = None, hourly_usd: float | None = None,
                      devices: int | None = None, instances: int = 1, overlap: str = "backward",
                      tokens_per_sample: int | None = None, tensor_parallel: int = 1,
                      transformer: tuple[int, int] | None = None, progress: bool = False,
                      **kwargs: Any) -> TrainingEstimate:
    """Estimated training step of ``model`` on ``inputs`` (one device's micro-batch) on ``target``.

    ``loss_fn(output)`` makes the loss (default: ``output.loss`` when the model returns one, else the mean
    square of its first floating-point output). ``optimizer``: ``"adamw"`` or ``"sgd"``. Data parallel over
    ``devices`` neuron devices per instance (default: every device of ``instance_type``) and ``instances``
    instances; ``overlap="backward"`` (gradient buckets all-reduced while the backward runs, the last one
    exposed, as DDP does) or ``"none"``. ``tokens_per_sample`` defaults to the second dimension of an integer
    (token id) first input. ``hourly_usd`` overrides the instance's default rate.

    ``tensor_parallel=k`` shards the model over groups of ``k`` devices (Megatron tensor + sequence
    parallel, idealised: ``tensor_parallel.py``); data parallel then runs over ``devices * instances / k``
    groups. ``inputs`` stay one data-parallel group's micro-batch; ``transformer=(layers, hidden)`` sizes the
    collectives when the model has no Hugging Face config."""
    if mode not in ("eager", "compiled"):
        raise ValueError(f"torchneuron.estimate_training: mode must be 'eager' or 'compiled', got {mode!r}")
    if overlap not in ("backward", "none"):
        raise ValueError(f"torchneuron.estimate_training: overlap must be 'backward' or 'none', got {overlap!r}")
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"torchneuron.estimate_training: expected an nn.Module, got {type(model).__name__}")
    inst = instance(instance_type, hourly_usd) if instance_type is not None else None
    m = machine(target or (inst.target if inst else None))
    inst = inst or default_for(m.target)
    if hourly_usd is not None:
        inst = inst.with_rate(hourly_usd)
    if inst.target != m.target:
        raise ValueError(f"torchneuron.estimate_training: {inst.name} has {inst.target} chips, not {m.target}")
    per_instance = inst.chips * m.devices_per_chip
    devices = per_instance if devices is None else int(devices)
    if not 1 <= devices <= per_instance:
        raise ValueError(f"torchneuron.estimate_training: {inst.name} has {per_instance} neuron devices "
                         f"({inst.chips} chip(s) x {m.devices_per_chip}); devices={devices}")
    k = int(tensor_parallel)
    if k < 1 or devices % k:
        raise ValueError(f"torchneuron.estimate_training: tensor_parallel={tensor_parallel} must divide the "
                         f"{devices} devices per instance")
    shape = transformer or (transformer_shape(model) if k > 1 else None)
    if k > 1 and shape is None:
        raise ValueError("torchneuron.estimate_training: tensor_parallel needs the transformer's shape: pass "
                         "transformer=(layers, hidden)")
    cast = _auto_cast.parse(auto_cast)
    loss_fn = loss_fn or _default_loss
    params = {k: v for k, v in model.named_parameters() if v.requires_grad}
    buffers = {**{k: v for k, v in model.named_parameters() if not v.requires_grad}, **dict(model.named_buffers())}
    from torch.fx.experimental.proxy_tensor import make_fx

    def forward(params, buffers, args, kw):
        return loss_fn(torch.func.functional_call(model, {**params, **buffers}, args, kw))

    def forward_backward(params, buffers, args, kw):
        loss = forward(params, buffers, args, kw)
        return [loss, *torch.autograd.grad(loss, list(params.values()))]

    with Progress("training step", enabled=progress) as report:
        report.stage("tracing the forward")
        gm_f = make_fx(forward, tracing_mode="fake")(params, buffers, inputs, kwargs)
        report.stage("tracing the forward and backward")
        gm = make_fx(forward_backward, tracing_mode="fake")(params, buffers, inputs, kwargs)
        report.stage("costing")
        n_fwd = len(_op_nodes(gm_f))
        cost = graph_cost(gm, m, cast)
        ops_nodes = _op_nodes(gm)
        # make_fx records the forward's ops first, in the same order: the first n_fwd are the forward
        if [str(n.target) for n in ops_nodes[:n_fwd]] != [str(n.target) for n in _op_nodes(gm_f)]:
            raise RuntimeError("torchneuron.estimate_training: the forward traced differently with and without "
                               "the backward; please report the model")
        fwd_nodes = set(ops_nodes[:n_fwd])
        saved, reread = _crossing_bytes(gm, fwd_nodes)
        fwd = _program("forward", *shard(cost.ops[:n_fwd], cost.op_bytes[:n_fwd], k), saved // k, m, mode)
        bwd = _program("backward", *shard(cost.ops[n_fwd:], cost.op_bytes[n_fwd:], k), (saved + reread) // k, m,
                       mode)
        report.stage(f"tracing the {optimizer} update")
        step = _optimizer_step(optimizer)
        plist = list(params.values())
        state = [[p.detach() for p in plist] for _ in range(4)]  # parameters, gradients and the two moments
        gm_o = make_fx(step, tracing_mode="fake")(*state)
        opt_cost = graph_cost(gm_o, m, cast)
        opt = _program(f"optimizer ({optimizer})", *shard(opt_cost.ops, opt_cost.op_bytes, k),
                       opt_cost.extra_bytes // k, m, mode)
    parts = [fwd, bwd, opt]
    batch = _batch(inputs)
    tokens = tokens_per_sample if tokens_per_sample is not None else _tokens(inputs)
    if k > 1:
        layers, hidden = shape
        act = next((t for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)), None)
        seq = tokens or (int(act.shape[1]) if act is not None and act.dim() > 2 else 1)
        tp = collectives(k, layers, batch * seq, hidden, 4, m, inst)
        parts.append(Part(f"tensor-parallel collectives ({tp.link})", [],
                          Totals(tp.collective_ns, "DMA", 0, {"DMA": tp.collective_ns})))
    grad_bytes = sum(p.numel() * p.dtype.itemsize for p in plist) // k
    ar = all_reduce(grad_bytes, m, inst, devices // k, instances)
    if overlap == "backward" and ar.workers > 1:
        last = min(1.0, DDP_BUCKET_BYTES / max(grad_bytes, 1)) * ar.total_ns
        exposed = max(ar.total_ns - bwd.totals.total_ns, last)
        overlap_text = "backward hides all but the last 25 MB bucket"
    else:
        exposed = ar.total_ns
        overlap_text = "no overlap" if ar.workers > 1 else "one worker"
    notes = [f"calibrated on inference (band ±{BAND:.0%}); the backward and the collectives are not "
             "calibrated against published numbers"]
    if cast.enabled:
        notes.append(f"auto-cast {cast}: gradients and the optimizer stay FP32")
    if k > 1:
        notes.append(f"tensor parallel {k} (Megatron tensor + sequence parallel, idealised): work and weights "
                     f"split {k} ways, {8 * shape[0]} collectives of the activations per step, not overlapped")
    return TrainingEstimate(m.target, mode, str(cast), optimizer, parts, ar, exposed / 1e3, overlap_text,
                            inst, devices // k, instances, batch, tokens, m.peak_flops_per_ns, notes, k)


def _op_nodes(gm: fx.GraphModule) -> list[fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)]


def _batch(inputs: tuple) -> int:
    first = next((t for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)), None)
    return int(first.shape[0]) if first is not None and first.dim() > 0 else 1


def _tokens(inputs: tuple) -> int | None:
    first = next((t for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor)), None)
    if first is not None and not first.is_floating_point() and first.dim() == 2:
        return int(first.shape[1])
    return None


__all__ = ["Part", "TrainingEstimate", "estimate_training"]
