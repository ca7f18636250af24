"""Hugging Face generate on neuron compiles a bounded number of programs (issue 29, "Recompiles").

transformers compiles the decode step by itself with ``CompileConfig(backend="neuron", dynamic=False)``.
Sliding-window models (Gemma2, Gemma3) keep the cache length in a Python int that changes every step; it used
to make every step a Dynamo recompile and a new program (8, then Dynamo's limit). Now Dynamo traces it as a
symbolic int (``hf_generate.py``) and the backend keeps ints the graph only does arithmetic on out of the
program (``host_scalars.py``): two programs, cache not yet full and full.
"""

from __future__ import annotations

import warnings

import pytest
import torch

from torchneuron.dynamo import notice


def _tiny(kind: str):
    t = pytest.importorskip("transformers")
    common = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    if kind == "gemma2":  # layer 0 slides over 8 positions: 6 prompt + 8 new tokens fill the window
        return t.Gemma2ForCausalLM(t.Gemma2Config(head_dim=8, sliding_window=8, **common)).eval()
    return t.LlamaForCausalLM(t.LlamaConfig(**common)).eval()


def _generate_on_neuron_matches_cpu(model, new_tokens: int = 8) -> None:
    ids = torch.randint(0, 128, (1, 6))
    expected = model.generate(ids, max_new_tokens=new_tokens, do_sample=False)
    got = model.to("neuron").generate(ids.to("neuron"), max_new_tokens=new_tokens, do_sample=False,
                                      cache_implementation="static")
    assert got.cpu().tolist() == expected.tolist()  # greedy decoding: token for token


@pytest.mark.parametrize("kind,programs", [("gemma2", 2), ("llama", 1)])
def test_static_cache_generate_compiles_at_most_two_programs(kind, programs):
    _generate_on_neuron_matches_cpu(_tiny(kind))
    m = torch.neuron.get_dynamo_metrics()
    # gemma2: one program while the sliding window fills, one once it is full (it was one per step before)
    assert m["graphs_compiled"] == programs and m["recompiles"] == 0 and m["eager_pieces"] == 0, m


def test_compiling_notice_is_one_line_once_per_process(monkeypatch):
    monkeypatch.setattr(notice, "_given", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        small = torch.compile(lambda x: x.sin() * 2, backend="neuron")  # a few ops: builds fast, says nothing
        small(torch.randn(4, device="neuron"))
        assert not [w for w in caught if w.category is notice.NeuronCompileNotice]
        model = _tiny("llama")
        _generate_on_neuron_matches_cpu(model, new_tokens=3)
        torch._dynamo.reset()  # a second model compiled in the same process: no second notice
        _generate_on_neuron_matches_cpu(model.cpu(), new_tokens=3)
    said = [w for w in caught if w.category is notice.NeuronCompileNotice]
    assert len(said) == 1 and str(said[0].message).startswith("torch.compile(backend='neuron'): compiling")
    shown = warnings.formatwarning(said[0].message, said[0].category, said[0].filename, said[0].lineno)
    assert len(shown.splitlines()) == 1, shown  # as Python prints it on stderr: no source line under it


class _Counter:
    def __init__(self):
        self.n = 5


def _compiled_steps(step, values: int):
    c = _Counter()
    fn = torch.compile(step, backend="neuron", dynamic=False)
    x = torch.randn(4)
    outs = []
    with torch.compiler.config.patch(dynamic_sources=r"L\['c'\]\.n"):  # as hf_generate marks HF's cache length
        for _ in range(values):
            out = fn(x.to("neuron"), c)
            outs.append(tuple(o.cpu() for o in out) if isinstance(out, tuple) else out.cpu())
    return c, x, outs


def test_int_only_counted_builds_one_program():
    def step(x, c):
        c.n += 1  # the graph returns n + 1; no tensor reads n
        return x * 2

    c, x, outs = _compiled_steps(step, 4)
    assert c.n == 9  # recomputed on the host from each call's value, not the first program's constant
    assert all(torch.equal(o, x * 2) for o in outs)
    assert torch.neuron.get_dynamo_metrics()["graphs_compiled"] == 1


def test_int_read_as_a_value_is_a_runtime_input():
    def step(x, c):
        c.n += 1
        return x * c.n + (c.n - 2), x.to(torch.int32) + c.n  # operands only: the program takes a 0-d tensor

    c, x, outs = _compiled_steps(step, 3)
    assert c.n == 8
    for k, (f, i) in enumerate(outs):
        n = 6 + k
        torch.testing.assert_close(f, x * n + (n - 2))
        assert i.dtype == torch.int32 and torch.equal(i, x.to(torch.int32) + n)  # dtype as with a Python int
    assert torch.neuron.get_dynamo_metrics()["graphs_compiled"] == 1


def test_int_read_as_an_argument_still_specialises():
    def step(x, c):
        c.n += 1
        return x.roll(c.n)  # a shift, not a value: one program per value, each right

    c, x, outs = _compiled_steps(step, 3)
    assert c.n == 8
    for k, o in enumerate(outs):
        assert torch.equal(o, x.roll(6 + k))
    assert torch.neuron.get_dynamo_metrics()["graphs_compiled"] == 3
