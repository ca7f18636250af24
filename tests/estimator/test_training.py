"""estimate_training: a step is forward + backward + optimizer (itemised) + the exposed gradient all-reduce;
the all-reduce grows with the gradient bytes and shrinks with the link speed; throughput, MFU and dollars
follow from the step time."""

import pytest
import torch

from torchneuron.estimator import estimate, estimate_training, instances
from torchneuron.estimator.collectives import all_reduce
from torchneuron.estimator.machine import machine


def _mlp(width: int = 512) -> torch.nn.Module:
    with torch.device("meta"):
        return torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                                   torch.nn.Linear(4 * width, width))


class _WithLoss(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).float().pow(2).mean()


def _params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def test_the_step_is_its_itemised_parts():
    model, x = _mlp(), torch.randn(64, 512, device="meta")
    est = estimate_training(model, x, target="trn1", instance_type="trn1.2xlarge", devices=1)
    names = [p.name for p in est.parts]
    assert names == ["forward", "backward", "optimizer (adamw)"]
    assert all(p.us > 0 for p in est.parts)
    assert est.step_us == pytest.approx(sum(p.us for p in est.parts) + est.exposed_allreduce_us)
    assert est.allreduce.workers == 1 and est.exposed_allreduce_us == 0
    text = str(est)
    for line in ("forward", "backward", "optimizer (adamw)", "gradient all-reduce", "step", "MFU"):
        assert any(row.startswith(line) for row in text.splitlines()), line


def test_forward_and_backward_flops_are_the_matmuls_of_each():
    model, x = _mlp(), torch.randn(64, 512, device="meta")
    est = estimate_training(model, x, target="trn2")
    fwd = 2 * 64 * 512 * 2048 * 2
    # weight gradients of both layers, input gradient of the second only (x needs none)
    bwd = 2 * fwd - 2 * 64 * 512 * 2048
    assert est.part("forward").flops == fwd and est.part("backward").flops == bwd
    assert est.flops_per_device == fwd + bwd
    # the forward of a training step costs at least the inference call (it also saves activations)
    inference = estimate(_WithLoss(model), x, target="trn2", mode="compiled")
    assert est.part("forward").us >= inference.compiled_us * 0.99


@pytest.mark.parametrize("optimizer,passes", [("adamw", 7), ("sgd", 3)])
def test_the_optimizer_moves_its_state_once(optimizer, passes):
    """AdamW reads parameters, gradients and both moments and writes back three; SGD reads two, writes one."""
    model, x = _mlp(256), torch.randn(8, 256, device="meta")
    est = estimate_training(model, x, target="trn1", optimizer=optimizer)
    assert est.part(f"optimizer ({optimizer})").totals.hbm_bytes == passes * 4 * _params(model)


def test_the_all_reduce_grows_with_gradient_bytes_and_shrinks_with_link_speed():
    m = machine("trn1")
    trn1, trn1n = instances.instance("trn1.32xlarge"), instances.instance("trn1n.32xlarge")
    small, big = all_reduce(10 ** 8, m, trn1, 32, 4), all_reduce(4 * 10 ** 8, m, trn1, 32, 4)
    assert big.total_ns > 3.5 * small.total_ns
    fast = all_reduce(4 * 10 ** 8, m, trn1n, 32, 4)
    assert fast.intra_ns == big.intra_ns and fast.inter_ns < 0.55 * big.inter_ns
    # the ring formula over EFA: 2 (n-1)/n of the bytes through the instance's link, 2 (n-1) message latencies
    assert big.inter_ns == pytest.approx(2 * 3 / 4 * 4e8 / (800 / 8) + 2 * 3 * instances.EFA_STEP_NS)
    assert "NeuronLink" in big.link and "EFA" in big.link


def test_overlap_hides_the_all_reduce_behind_the_backward_or_not():
    model, x = _mlp(1024), torch.randn(32, 1024, device="meta")
    hidden = estimate_training(model, x, target="trn1", instance_type="trn1.32xlarge", instances=2)
    exposed = estimate_training(model, x, target="trn1", instance_type="trn1.32xlarge", instances=2, overlap="none")
    assert exposed.exposed_allreduce_us == pytest.approx(exposed.allreduce.total_ns / 1e3)
    assert hidden.exposed_allreduce_us < exposed.exposed_allreduce_us
    assert hidden.workers == 64 and hidden.samples_per_s == pytest.approx(32 * 64 / (hidden.step_us / 1e6))


def test_tokens_mfu_and_dollars_follow_from_the_step():
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
    with torch.device("meta"):
        model = BertForMaskedLM(config)
    ids = torch.zeros(4, 128, dtype=torch.long, device="meta")
    est = estimate_training(model, ids, target="trn1", instance_type="trn1.32xlarge", auto_cast="matmult")
    assert est.tokens_per_sample == 128 and est.tokens_per_s == pytest.approx(est.samples_per_s * 128)
    assert 0 < est.mfu < 1
    assert est.usd_per_million_tokens == pytest.approx(21.50 / 3600 / est.tokens_per_s * 1e6)
    cheaper = estimate_training(model, ids, target="trn1", instance_type="trn1.32xlarge", auto_cast="matmult",
                                hourly_usd=10.75)
    assert cheaper.usd_per_million_tokens == pytest.approx(est.usd_per_million_tokens / 2)
    assert "per million tokens at $21.50/h" in str(est)


def test_an_instance_without_a_public_price_asks_for_one():
    model, x = _mlp(128), torch.randn(8, 128, device="meta")
    est = estimate_training(model, x, target="trn3", instance_type="trn3")
    assert est.usd_per_million_samples is None and "pass hourly_usd=" in str(est)
    assert estimate_training(model, x, target="trn3", instance_type="trn3", hourly_usd=8.0).usd_per_million_samples


def test_bad_arguments_are_named():
    model, x = _mlp(128), torch.randn(8, 128, device="meta")
    with pytest.raises(ValueError, match="trn1.2xlarge has 2 neuron devices"):
        estimate_training(model, x, target="trn1", instance_type="trn1.2xlarge", devices=4)
    with pytest.raises(ValueError, match="trn1.2xlarge has no EFA"):
        estimate_training(model, x, target="trn1", instance_type="trn1.2xlarge", instances=2)
    with pytest.raises(ValueError, match="unknown instance type 'p5.48xlarge'"):
        estimate_training(model, x, instance_type="p5.48xlarge")
    with pytest.raises(ValueError, match="optimizer must be 'adamw' or 'sgd'"):
        estimate_training(model, x, optimizer="lamb")


def test_inference_cost_per_thousand_with_its_band():
    model, x = _mlp(256), torch.randn(16, 256, device="meta")
    est = estimate(model, x, target="trn1", mode="compiled")
    cost = est.cost("trn1.2xlarge")
    per_s = 2 * 16 / (est.compiled_us / 1e6)  # both NeuronCores serve
    assert cost["usd_per_thousand"] == pytest.approx(1.34375 / 3600 / per_s * 1e3)
    assert cost["low"] < cost["usd_per_thousand"] < cost["high"]
    assert est.cost("trn1.2xlarge", hourly_usd=2.6875)["usd_per_thousand"] == pytest.approx(
        2 * cost["usd_per_thousand"])


def test_an_update_in_place_is_written_back_even_when_not_returned():
    from torchneuron.estimator import estimate_graph
    from torch.fx.experimental.proxy_tensor import make_fx

    def step(params, grads):
        torch._foreach_add_(params, grads, alpha=-0.1)

    ps = [torch.randn(1000, device="meta") for _ in range(3)]
    gm = make_fx(step, tracing_mode="fake")(ps, [p.clone() for p in ps])
    assert estimate_graph(gm, target="trn1").compiled.hbm_bytes == 3 * 3 * 1000 * 4  # read p, g; write p


def test_tensor_parallel_splits_the_work_and_pays_its_collectives():
    from transformers import BertConfig, BertForMaskedLM

    config = BertConfig(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
    with torch.device("meta"):
        model = BertForMaskedLM(config)
    ids = torch.zeros(4, 128, dtype=torch.long, device="meta")
    one = estimate_training(model, ids, target="trn1", instance_type="trn1.32xlarge")
    four = estimate_training(model, ids, target="trn1", instance_type="trn1.32xlarge", tensor_parallel=4)
    assert four.workers == one.workers // 4 and four.tensor_parallel == 4
    assert four.part("forward").flops == one.part("forward").flops // 4
    assert four.allreduce.nbytes == one.allreduce.nbytes // 4
    [tp] = [p for p in four.parts if p.name.startswith("tensor-parallel collectives")]
    # 8 ring all-gathers / reduce-scatters per layer of the (tokens x hidden) FP32 activations, over NeuronLink
    m = machine("trn1")
    one_collective = 3 / 4 * 4 * 128 * 256 * 4 / (384 / m.devices_per_chip) + 3 * instances.NEURONLINK_STEP_NS
    assert tp.totals.total_ns == pytest.approx(8 * 2 * one_collective)
    with pytest.raises(ValueError, match="must divide the 32 devices"):
        estimate_training(model, ids, target="trn1", instance_type="trn1.32xlarge", tensor_parallel=3)
    with pytest.raises(ValueError, match=r"pass transformer=\(layers, hidden\)"):
        estimate_training(_mlp(128), torch.randn(8, 128, device="meta"), target="trn1",
                          instance_type="trn1.32xlarge", tensor_parallel=2)
