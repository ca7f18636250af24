"""torch.compile(backend="neuron") as installed: a fresh process, a second process (warm start), Hugging Face."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import run_python_json


def test_backend_works_after_install_without_importing_torchneuron():
    res = run_python_json("""
        import json, sys, torch
        assert "torchneuron.dynamo" not in sys.modules  # nothing compile-related loads with torch
        f = torch.compile(lambda t: t.sin() * 2, backend="neuron")
        x = torch.randn(5, device="neuron")
        ok = torch.allclose(f(x).cpu(), x.cpu().sin() * 2, atol=1e-6)
        from torch._dynamo.device_interface import get_interface_for_device
        iface = get_interface_for_device("neuron")
        print(json.dumps({"ok": ok, "listed": "neuron" in torch._dynamo.list_backends(),
                          "devices": iface.device_count(), "current": iface.current_device()}))
    """)
    assert res == {"ok": True, "listed": True, "devices": torch.neuron.device_count(), "current": 0}


WARM = """
    import json, sys, torch
    from torchneuron.testing.models import GPT
    from torchneuron.compiler import driver
    {change}
    torch.manual_seed(0)
    model = GPT().to("neuron")
    tokens = torch.randint(0, 64, (4, 17)).to("neuron")
    _, loss = torch.compile(model, backend="neuron")(tokens[:, :-1], tokens[:, 1:])
    loss.backward()
    torch.neuron.synchronize()  # the first-call checks compile beside the program
    m = torch.neuron.get_dynamo_metrics()
    print(json.dumps({{"loss": loss.item(), "mlir": "torch_mlir" in sys.modules, "jax": "jax" in sys.modules,
                      "pattern_matcher": "torch._inductor.pattern_matcher" in sys.modules,
                      "hits": m["cache_hits"], "split_hits": m["partition_cache_hits"],
                      "pieces": m["lowered_pieces"], "compiles": driver.default_cache().stats["compiles"]}}))
"""


def _warm(cache, change=""):
    return run_python_json(WARM.format(change=change), TORCHNEURON_CACHE_DIR=str(cache))


def test_second_process_compiles_nothing_and_skips_torch_mlir(tmp_path):
    cold = _warm(tmp_path)
    warm = _warm(tmp_path)
    assert cold["mlir"] and cold["compiles"] == cold["pieces"] == 2 and cold["hits"] == 0
    assert not warm["mlir"] and warm["compiles"] == 0 and warm["hits"] == warm["pieces"] == 2
    # the pieces passed their StableHLO cross-check in the cold process: the warm one does not load XLA; the
    # forward/backward split is loaded too, so inductor's pattern matcher (the partitioner's CSE) stays out
    assert cold["jax"] and not warm["jax"]
    assert cold["split_hits"] == 0 and warm["split_hits"] == 1 and not warm["pattern_matcher"]
    assert warm["loss"] == cold["loss"]


WARM_LLAMA = """
    import json, torch, transformers
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).to("neuron")
    ids = torch.randint(0, 128, (2, 16)).to("neuron")
    loss = torch.compile(model, backend="neuron")(input_ids=ids, labels=ids).loss
    loss.backward()
    m = torch.neuron.get_dynamo_metrics()
    print(json.dumps({"loss": loss.item(), "grad": model.lm_head.weight.grad.double().norm().item(),
                      "split_hits": m["partition_cache_hits"]}))
"""


def test_warm_split_of_a_graph_holding_tensor_constants(tmp_path):
    # the joint graph of a HF Llama holds real tensor constants (pickled outside AOTAutograd's fake mode)
    pytest.importorskip("transformers")
    cold = run_python_json(WARM_LLAMA, TORCHNEURON_CACHE_DIR=str(tmp_path))
    warm = run_python_json(WARM_LLAMA, TORCHNEURON_CACHE_DIR=str(tmp_path))
    assert cold["split_hits"] == 0 and warm["split_hits"] == 1
    assert warm["loss"] == cold["loss"] and warm["grad"] == cold["grad"]


@pytest.mark.parametrize("change", [
    # an upgrade of any package that shapes the programs (torch, torch-mlir, jaxlib, torchneuron)
    "import torchneuron.compiler.keys as keys; keys._version = lambda name: '0+changed'",
    # a compile setting that changes the programs
    "import torchneuron; torchneuron.compile_options(auto_cast='matmult-bf16')",
])
def test_a_changed_version_or_setting_misses_the_warm_cache(tmp_path, change):
    _warm(tmp_path)
    changed = _warm(tmp_path, change)
    assert changed["hits"] == 0 and changed["compiles"] >= 1 and changed["mlir"]
    if "keys" in change:
        assert changed["split_hits"] == 0


def test_hf_llama_static_cache_generate_auto_compiles_and_matches_cpu():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 128, (1, 6))
    expected = model.generate(ids, max_new_tokens=8, do_sample=False)
    got = model.to("neuron").generate(ids.to("neuron"), max_new_tokens=8, do_sample=False,
                                      cache_implementation="static")
    assert got.cpu().tolist() == expected.tolist()
    m = torch.neuron.get_dynamo_metrics()
    assert m["graphs_compiled"] >= 1 and m["eager_pieces"] == 0  # transformers compiled the decode step for neuron


def _hf_models():
    t = pytest.importorskip("transformers")
    return {
        "gpt2": lambda: t.GPT2LMHeadModel(t.GPT2Config(vocab_size=128, n_embd=32, n_layer=2, n_head=4,
                                                        n_positions=64)),
        "bert_padding_mask": lambda: t.BertForMaskedLM(t.BertConfig(
            vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=64)),
        "t5": lambda: t.T5ForConditionalGeneration(t.T5Config(vocab_size=128, d_model=32, d_kv=8, d_ff=64,
                                                              num_layers=2, num_heads=4, decoder_start_token_id=0)),
        "llama_gqa": lambda: t.LlamaForCausalLM(t.LlamaConfig(
            vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64)),
    }


_EXECUTOR_CASES = ([(n, "aten") for n in ("gpt2", "bert_padding_mask", "t5", "llama_gqa")]
                   + [(n, e) for e in ("xla", "inductor") for n in ("gpt2", "t5")])


@pytest.mark.parametrize("name,executor", _EXECUTOR_CASES)
def test_hf_training_step_compiled_matches_eager(name, executor, monkeypatch):
    """Training mode (dropout 0.1) under every simulator executor: GPT2 and T5 once crashed the inductor
    executor on a view of a dropout-masked attention tensor."""
    import copy

    monkeypatch.setenv("TORCHNEURON_SIM_EXECUTOR", executor)
    torch.manual_seed(0)
    model = _hf_models()[name]().train()
    ids = torch.randint(0, 128, (2, 12))
    batch = {"input_ids": ids, "labels": ids}
    if name == "t5":
        batch["decoder_input_ids"] = ids
    if name.startswith("bert"):
        batch["attention_mask"] = torch.ones_like(ids).index_fill_(1, torch.tensor([10, 11]), 0)
    results = []
    for compiled in (False, True):
        m = copy.deepcopy(model).to("neuron")
        fn = torch.compile(m, backend="neuron") if compiled else m
        torch.manual_seed(1)  # dropout masks: the compiled graph draws them as eager does
        out = fn(**{k: v.to("neuron") for k, v in batch.items()})
        out.loss.backward()
        results.append((out.loss.detach().cpu(), {n: p.grad.cpu() for n, p in m.named_parameters()
                                                  if p.grad is not None}))
    (e_loss, e_grads), (c_loss, c_grads) = results
    torch.testing.assert_close(c_loss, e_loss, rtol=1e-5, atol=1e-6)
    assert e_grads.keys() == c_grads.keys()
    for n in e_grads:
        torch.testing.assert_close(c_grads[n], e_grads[n], rtol=1e-4, atol=1e-5)
    assert torch.neuron.get_dynamo_metrics()["fallback_ops"] == {}
