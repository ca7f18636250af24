"""The torch.nn module sweep: every ``nn.Module`` class ``torch.nn.modules`` exports, run on neuron against the
CPU, forward and backward, in training and in eval mode.

Instances and inputs come from PyTorch's own module database (``torch.testing._internal.common_modules.module_db``:
every sample of each class, float32) or, for classes it does not cover, from a small hand-written instance below
(``_small``). Abstract bases and containers without a forward are listed as such.

For each sample, in training and in eval mode, the module is built on the CPU from a fixed seed, copied to
neuron, run forward on both with the same RNG seed, then backward from the same random projection of its
outputs. Outputs, input gradients, parameter gradients and buffers (running statistics) are compared
(float32: rtol 1e-4, atol 1e-5; integers exactly). A sample the CPU itself rejects does not count.

``tools/gen_module_coverage.py`` runs it over every class to write ``docs/module_coverage.md``
(``module_coverage_doc``); tests run it on a sample of classes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

RTOL, ATOL = 1e-4, 1e-5

# Classes with nothing to run: abstract bases and containers with no forward of their own.
NOT_RUNNABLE = {
    "Module": "the base class", "Container": "deprecated base class", "RNNBase": "base of RNN/LSTM/GRU",
    "RNNCellBase": "base of the RNN cells", "ModuleList": "container, no forward",
    "ModuleDict": "container, no forward", "ParameterList": "container, no forward",
    "ParameterDict": "container, no forward",
}

# Known differences from the CPU, with the reason.
KNOWN: dict[str, str] = {
    "TransformerDecoder": "attention dropout in training: the CPU's fused attention kernel draws its dropout mask "
                          "inside the kernel from the CPU generator; neuron takes ATen's math path for dropout > 0 "
                          "so that the mask comes from the neuron generator (csrc/aten/native/Attention.cpp). "
                          "Same distribution, different mask; without dropout (eval, and train with dropout=0) the "
                          "results agree",
}


def _small() -> dict[str, Callable[[], tuple]]:
    """Small instances and inputs for the classes module_db does not cover: name -> () -> (module, args)."""
    import torch
    from torch import nn

    def r(*shape):
        return torch.randn(*shape)

    def unpool(dim):
        pool = {1: nn.MaxPool1d, 2: nn.MaxPool2d, 3: nn.MaxPool3d}[dim](2, return_indices=True)
        x = r(1, 2, *([4] * dim))
        out, idx = pool(x)
        unpool_cls = {1: nn.MaxUnpool1d, 2: nn.MaxUnpool2d, 3: nn.MaxUnpool3d}[dim]
        return unpool_cls(2), (out, idx)

    def decoder():
        layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
        return nn.TransformerDecoder(layer, 2), (r(2, 5, 8), r(2, 3, 8))

    return {
        "AdaptiveLogSoftmaxWithLoss": lambda: (nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7]),
                                               (r(6, 8), torch.tensor([0, 3, 5, 9, 1, 7]))),
        "AlphaDropout": lambda: (nn.AlphaDropout(0.3), (r(4, 6),)),
        "ChannelShuffle": lambda: (nn.ChannelShuffle(2), (r(2, 4, 3, 3),)),
        "CosineSimilarity": lambda: (nn.CosineSimilarity(), (r(4, 6), r(4, 6))),
        "CrossMapLRN2d": lambda: (nn.CrossMapLRN2d(3), (r(2, 4, 5, 5),)),
        "Dropout": lambda: (nn.Dropout(0.3), (r(4, 6),)),
        "Dropout1d": lambda: (nn.Dropout1d(0.3), (r(2, 4, 6),)),
        "Dropout2d": lambda: (nn.Dropout2d(0.3), (r(2, 4, 3, 3),)),
        "Dropout3d": lambda: (nn.Dropout3d(0.3), (r(2, 4, 2, 3, 3),)),
        "EmbeddingBag": lambda: (nn.EmbeddingBag(10, 3, mode="mean"),
                                 (torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4]))),
        "FeatureAlphaDropout": lambda: (nn.FeatureAlphaDropout(0.3), (r(2, 4, 3, 3),)),
        "Flatten": lambda: (nn.Flatten(), (r(2, 3, 4),)),
        "Fold": lambda: (nn.Fold(output_size=(4, 4), kernel_size=2), (r(1, 3 * 4, 9),)),
        "Hardsigmoid": lambda: (nn.Hardsigmoid(), (r(4, 6) * 4,)),
        "Identity": lambda: (nn.Identity(), (r(3, 4),)),
        "LazyBatchNorm1d": lambda: (nn.LazyBatchNorm1d(), (r(4, 3),)),
        "LazyBatchNorm2d": lambda: (nn.LazyBatchNorm2d(), (r(2, 3, 4, 4),)),
        "LazyBatchNorm3d": lambda: (nn.LazyBatchNorm3d(), (r(2, 3, 2, 2, 2),)),
        "LazyInstanceNorm1d": lambda: (nn.LazyInstanceNorm1d(affine=True), (r(2, 3, 5),)),
        "LazyInstanceNorm2d": lambda: (nn.LazyInstanceNorm2d(affine=True), (r(2, 3, 4, 4),)),
        "LazyInstanceNorm3d": lambda: (nn.LazyInstanceNorm3d(affine=True), (r(2, 3, 2, 3, 3),)),
        "LazyLinear": lambda: (nn.LazyLinear(3), (r(4, 5),)),
        "MaxUnpool1d": lambda: unpool(1),
        "MaxUnpool2d": lambda: unpool(2),
        "MaxUnpool3d": lambda: unpool(3),
        "NLLLoss2d": lambda: (nn.NLLLoss(), (r(2, 3, 4, 4).log_softmax(1), torch.randint(0, 3, (2, 4, 4)))),
        "PairwiseDistance": lambda: (nn.PairwiseDistance(), (r(4, 6), r(4, 6))),
        "PixelShuffle": lambda: (nn.PixelShuffle(2), (r(1, 8, 3, 3),)),
        "PixelUnshuffle": lambda: (nn.PixelUnshuffle(2), (r(1, 2, 4, 4),)),
        "RReLU": lambda: (nn.RReLU(), (r(4, 6),)),
        "Sequential": lambda: (nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Linear(6, 2)), (r(3, 4),)),
        "SyncBatchNorm": lambda: (nn.SyncBatchNorm(3), (r(4, 3, 5),)),
        "TransformerDecoder": decoder,
        "TripletMarginLoss": lambda: (nn.TripletMarginLoss(), (r(4, 6), r(4, 6), r(4, 6))),
        "TripletMarginWithDistanceLoss": lambda: (nn.TripletMarginWithDistanceLoss(), (r(4, 6), r(4, 6), r(4, 6))),
        "Unflatten": lambda: (nn.Unflatten(1, (2, 3)), (r(4, 6),)),
        "Unfold": lambda: (nn.Unfold(kernel_size=2), (r(1, 3, 4, 4),)),
        "Upsample": lambda: (nn.Upsample(scale_factor=2, mode="bilinear"), (r(1, 2, 3, 3),)),
        "UpsamplingBilinear2d": lambda: (nn.UpsamplingBilinear2d(scale_factor=2), (r(1, 2, 3, 3),)),
        "UpsamplingNearest2d": lambda: (nn.UpsamplingNearest2d(scale_factor=2), (r(1, 2, 3, 3),)),
    }


def module_classes() -> list[str]:
    import torch
    from torch.nn import modules

    return sorted(n for n in modules.__all__
                  if isinstance(getattr(modules, n), type) and issubclass(getattr(modules, n), torch.nn.Module))


@dataclass
class Sample:
    desc: str
    build: Callable[[], object]  # -> nn.Module on the CPU
    args: tuple
    kwargs: dict = field(default_factory=dict)


def samples(name: str, training: bool) -> Iterator[Sample]:
    """Every sample of the class: module_db's (all of them, float32), else the hand-written one."""
    import torch
    from torch.nn import modules
    from torch.testing._internal.common_modules import module_db

    cls = getattr(modules, name)
    infos = [mi for mi in module_db if mi.module_cls is cls]
    if not infos:
        if name in _small():
            def build_small():
                torch.manual_seed(0)
                return _small()[name]()

            args = tuple(a.detach().requires_grad_() if a.is_floating_point() else a for a in build_small()[1])
            # built afresh for each device: lazy modules' uninitialized buffers cannot be deep-copied
            yield Sample("small instance", lambda: build_small()[0], args)
        return
    for info in infos:
        torch.manual_seed(0)
        inputs = info.module_inputs_func(info, device="cpu", dtype=torch.float32, requires_grad=True,
                                         training=training)
        for i, mi in enumerate(inputs):
            if mi.forward_input is None:
                continue
            c = mi.constructor_input

            def build(c=c, cls=cls):
                torch.manual_seed(0)
                return cls(*c.args, **c.kwargs).to(torch.float32)

            yield Sample(mi.desc or f"sample {i}", build, mi.forward_input.args, mi.forward_input.kwargs)


class CpuRejects(Exception):
    pass


def _run(sample: Sample, device: str, training: bool, module=None):
    import torch
    import torch.utils._pytree as pytree

    def move(v):
        if isinstance(v, torch.Tensor):
            return v.detach().to(device).requires_grad_(v.requires_grad)
        return v

    module = module.to(device).train(training)
    args, kwargs = pytree.tree_map(move, (sample.args, sample.kwargs))
    torch.manual_seed(1)  # random modules (dropout, RReLU) draw the same numbers on both devices
    out = module(*args, **kwargs)
    outs = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
    differentiable = [t for t in outs if t.requires_grad and t.is_floating_point()]
    grads = []
    if differentiable:
        g = torch.Generator().manual_seed(2)
        loss = sum((t.float() * torch.randn(t.shape, generator=g).to(device)).sum() for t in differentiable)
        leaves = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad]
        leaves += [p for p in module.parameters() if p.requires_grad]
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    state = list(module.state_dict().values())
    return {"output": outs, "gradient": list(grads), "state": state}


def check(sample: Sample, training: bool) -> tuple[str, str]:
    """("identical" | "close" | "fail" | "error" | "cpu-rejects", detail)."""
    import torch

    try:
        cpu_module = sample.build()
        expected = _run(sample, "cpu", training, cpu_module)
    except Exception as e:  # noqa: BLE001 — the CPU's own refusal of a sample means it does not count
        return "cpu-rejects", f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
    try:
        got = _run(sample, "neuron", training, sample.build())
    except Exception as e:  # noqa: BLE001 — any neuron failure is a result to report
        return "error", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    worst = 0.0
    for what in ("output", "gradient", "state"):
        a_list, e_list = got[what], expected[what]
        if len(a_list) != len(e_list):
            return "fail", f"{len(a_list)} {what}s, the CPU has {len(e_list)}"
        for i, (a, e) in enumerate(zip(a_list, e_list)):
            if (a is None) != (e is None):
                return "fail", f"{what} {i}: {'missing' if a is None else 'present'} on neuron only"
            if a is None:
                continue
            if a.device.type != "neuron" and what != "state":
                return "fail", f"{what} {i} is on {a.device}, not neuron"
            a, e = a.detach().cpu(), e.detach()
            if a.shape != e.shape or a.dtype != e.dtype:
                return "fail", f"{what} {i}: {a.dtype}{list(a.shape)} vs the CPU's {e.dtype}{list(e.shape)}"
            if a.is_floating_point() or a.is_complex():
                try:
                    torch.testing.assert_close(a, e, rtol=RTOL, atol=ATOL, equal_nan=True)
                except AssertionError:
                    diff = (a - e).abs().nan_to_num(0).max().item()
                    return "fail", f"{what} {i} differs by up to {diff:.2e}"
                if not torch.equal(a.nan_to_num(0), e.nan_to_num(0)):
                    worst = max(worst, (a - e).abs().nan_to_num(0).max().item())
            elif not torch.equal(a, e):
                return "fail", f"{what} {i} differs"
    return ("identical", "") if worst == 0.0 else ("close", f"max difference {worst:.1e}")


@dataclass
class ClassResult:
    name: str
    source: str  # "module_db" | "small instance" | ""
    status: str  # "pass" | "fail" | "known difference" | "not run on CPU" | "nothing to run" | "no instance"
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def sweep_class(name: str) -> ClassResult:
    from torch.nn import modules
    from torch.testing._internal.common_modules import module_db

    if name in NOT_RUNNABLE:
        return ClassResult(name, "", "nothing to run", notes=[NOT_RUNNABLE[name]])
    in_db = any(mi.module_cls is getattr(modules, name) for mi in module_db)
    result = ClassResult(name, "module_db" if in_db else ("small instance" if name in _small() else ""), "pass")
    if not result.source:
        return ClassResult(name, "", "no instance", notes=["no module_db entry and no small instance in the tool"])
    for training in (True, False):
        mode = "train" if training else "eval"
        for s in samples(name, training):
            status, detail = check(s, training)
            result.counts[status] = result.counts.get(status, 0) + 1
            if status in ("fail", "error"):
                result.status = "fail"
                result.notes.append(f"{mode}, {s.desc}: {detail}")
    ran = result.counts.get("identical", 0) + result.counts.get("close", 0) + result.counts.get("fail", 0) + \
        result.counts.get("error", 0)
    if ran == 0:
        result.status = "not run on CPU"
        result.notes.append("the CPU rejects every sample")
    if result.status == "fail" and name in KNOWN:
        result.status = "known difference"
        result.notes.insert(0, KNOWN[name])
    return result


def sweep(names: list[str] | None = None, progress: bool = False) -> list[ClassResult]:
    import warnings

    import torch

    import torchneuron  # noqa: F401  (the neuron device, also with autoload off)

    torch.set_default_dtype(torch.float32)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # module_db samples warn (deprecated arguments, prototype nested tensors)
        for name in names or module_classes():
            r = sweep_class(name)
            if progress:
                print(f"{name:32s} {r.status:15s} {r.counts} {'; '.join(r.notes)[:160]}", file=sys.stderr)
            out.append(r)
    return out
