"""torchneuron.estimate: per-op FLOPs, bytes, bound and time on a target; never faster than the roofline;
matmul-heavy graphs within 3x of it; compiled (fused) never slower than eager."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

import torchneuron
from torchneuron.estimator import estimate, machine


def _mlp(width: int, dtype: torch.dtype) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                               torch.nn.Linear(4 * width, width)).to(dtype)


def test_estimate_is_exported_lazily_from_the_package():
    assert torchneuron.estimate is estimate
    assert "estimate" in torchneuron.__all__


def test_per_op_rows_carry_flops_bytes_time_and_bound():
    est = estimate(lambda a, b: torch.mm(a, b), torch.randn(512, 256), torch.randn(256, 128), target="trn2")
    [mm] = [op for op in est.ops if op.name == "aten::mm"]
    assert mm.flops == 2 * 512 * 256 * 128
    assert mm.bytes == 4 * (512 * 256 + 256 * 128 + 512 * 128)
    assert mm.bound in ("Tensor", "HBM") and mm.time_ns >= mm.roofline_ns > 0
    assert est.target == "trn2" and est.mode == "eager" and est.total_us == est.eager_us


@pytest.mark.parametrize("target", ["trn1", "trn2", "trn3"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_matmul_heavy_graphs_lie_between_the_roofline_and_three_times_it(target, dtype):
    with torch.device("meta"):  # shapes are all an estimate needs
        model, x = _mlp(1024, dtype), torch.randn(1024, 1024, dtype=dtype)
    est = estimate(model, x, target=target)
    for total in (est.eager_us, est.compiled_us):
        assert est.roofline_us <= total <= 3 * est.roofline_us, (target, dtype, str(est))
    assert est.bound == "Tensor"


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 700), k=st.integers(1, 700), n=st.integers(1, 700),
       dtype=st.sampled_from([torch.bfloat16, torch.float16, torch.float32]),
       target=st.sampled_from(["trn1", "trn2", "trn3"]))
def test_never_faster_than_the_roofline(m, k, n, dtype, target):
    def fn(a, b, c):
        return torch.softmax(a @ b, dim=-1).sum(0) + c.exp()

    est = estimate(fn, torch.randn(m, k, dtype=dtype, device="meta"), torch.randn(k, n, dtype=dtype, device="meta"),
                   torch.randn(n, dtype=dtype, device="meta"), target=target)
    for op in est.ops:
        assert op.time_ns >= op.roofline_ns
    assert est.roofline_us <= est.compiled_us <= est.eager_us


def test_flops_agree_with_pytorchs_flop_counter():
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(16 * 8 * 8, 10))
    x = torch.randn(4, 3, 8, 8)
    with FlopCounterMode(display=False) as counter:
        model(x)
    assert estimate(model, x).flops == counter.get_total_flops()


def test_attention_counts_its_matmuls_on_the_tensor_engine():
    q = torch.randn(2, 4, 128, 64, dtype=torch.bfloat16)
    est = estimate(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v), q, q, q)
    assert est.flops == 2 * (2 * 2 * 4 * 128 * 128 * 64)
    attn = [op for op in est.ops if op.flops > 0]
    assert attn and all(op.engines.get("Tensor", 0) > 0 and op.engines.get("Scalar", 0) > 0 for op in attn)


def test_fusing_an_elementwise_chain_removes_hbm_round_trips():
    def chain(x):
        return ((x * 2 + 1).sigmoid() * x).tanh()

    est = estimate(chain, torch.randn(4096, 1024))
    assert est.compiled.hbm_bytes == 2 * 4096 * 1024 * 4  # read x once, write the result once
    assert est.eager.hbm_bytes > 4 * est.compiled.hbm_bytes
    assert est.compiled_us < est.eager_us / 3
    assert {op.bound for op in est.ops} <= {"HBM", "Vector", "Scalar"}


def test_engine_choice_per_op_kind():
    est = estimate(lambda x, i: (x.exp(), x + x, x.sum(), torch.cat([x, x]), x[i], x.t()),
                   torch.randn(256, 4096, dtype=torch.bfloat16), torch.arange(128))
    by = {op.name: op for op in est.ops}
    assert by["aten::exp"].engines.keys() >= {"Scalar"}
    assert "Vector" in by["aten::add"].engines and "Vector" in by["aten::sum"].engines
    assert "DMA" in by["aten::cat"].engines and "DMA" in by["aten::index"].engines
    assert by["aten::t"].bound == "-" and by["aten::t"].time_ns == 0


def test_small_matmuls_pay_for_the_partly_used_array():
    m = machine("trn2")
    bf16 = torch.bfloat16
    big = estimate(torch.mm, torch.randn(1024, 1024, dtype=bf16), torch.randn(1024, 1024, dtype=bf16))
    thin = estimate(torch.mm, torch.randn(1024, 8, dtype=bf16), torch.randn(8, 1024, dtype=bf16))
    big_op, thin_op = big.ops[0], thin.ops[0]
    assert big_op.engines["Tensor"] == pytest.approx(big_op.flops / m.tensor_bf16_flops_per_ns, rel=0.02)
    assert thin_op.engines["Tensor"] > 10 * thin_op.flops / m.tensor_bf16_flops_per_ns


def test_module_parameters_count_as_bytes_read_and_neuron_inputs_need_no_data():
    model = torch.nn.Linear(512, 512).to("neuron")
    x = torch.randn(8, 512, device="neuron")
    before = torch.neuron.memory_allocated()
    est = estimate(model, x)
    assert torch.neuron.memory_allocated() == before  # traced with fake tensors: nothing allocated
    weights = 512 * 512 * 4 + 512 * 4
    assert est.compiled.hbm_bytes >= weights + 8 * 512 * 4 * 2


def test_table_is_readable():
    text = str(estimate(_mlp(256, torch.bfloat16), torch.randn(64, 256, dtype=torch.bfloat16), target="trn1"))
    lines = text.splitlines()
    assert lines[0].startswith("torchneuron.estimate") and "trn1" in lines[0]
    [addmm] = [line for line in lines if line.startswith("aten::addmm")]
    assert addmm.split()[1] == "2" and addmm.split()[-1] in ("Tensor", "HBM")
    assert any(line.startswith("eager    :") for line in lines) and any(line.startswith("roofline :") for line in lines)


def test_a_hugging_face_model_with_a_kv_cache_output():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=1000, n_positions=128, bos_token_id=0,
                        eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    est = estimate(model, torch.randint(0, 1000, (2, 64)))
    names = {op.name for op in est.ops}
    assert {"aten::addmm", "aten::native_layer_norm", "aten::embedding"} <= names
    assert any("attention" in n for n in names)
    assert est.roofline_us <= est.compiled_us < est.eager_us
    # the logits and the KV cache are outputs: written once
    logits = 2 * 64 * 1000 * 4
    cache = 2 * 2 * (2 * 4 * 64 * 32) * 4
    assert est.compiled.hbm_bytes >= logits + cache


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="mode must be 'eager' or 'compiled'"):
        estimate(torch.relu, torch.randn(2), mode="fast")
    with pytest.raises(Exception, match="unknown NeuronCore target 'trn9'"):
        estimate(torch.relu, torch.randn(2), target="trn9")
    with pytest.raises(TypeError, match="expected a function or an nn.Module"):
        estimate(42, torch.randn(2))
