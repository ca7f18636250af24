"""Trainer and accelerate pick the neuron device by themselves (no ACCELERATE_TORCH_DEVICE, no code change),
train as on the CPU, accept bf16=True, and checkpoints round-trip through save_pretrained/from_pretrained."""

import copy

import pytest
import torch

from .hf_models import MODELS, batch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")


class _Batches(torch.utils.data.Dataset):
    def __init__(self, name: str, n: int = 8):
        rows = [batch(name, seed=i) for i in range(n // 2)]
        self.items = [{k: v[r] for k, v in b.items()} for b in rows for r in range(2)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def _train(model, tmp_path, **args):
    targs = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=2, logging_steps=1, learning_rate=1e-3,
        report_to=[], save_strategy="no", disable_tqdm=True, seed=0, **args)
    trainer = transformers.Trainer(model=model, args=targs, train_dataset=_Batches("gpt2"))
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return trainer, losses


def test_trainer_trains_on_neuron_without_configuration(tmp_path, monkeypatch):
    monkeypatch.delenv("ACCELERATE_TORCH_DEVICE", raising=False)
    torch.manual_seed(0)
    model = MODELS["gpt2"]()
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0  # the Trainer's sampler draws from the CPU generator, so masks could not match anyway
    on_cpu = copy.deepcopy(model)
    trainer, losses = _train(model, tmp_path / "neuron")
    assert trainer.args.device.type == "neuron"
    assert {p.device.type for p in trainer.model.parameters()} == {"neuron"}
    _, cpu_losses = _train(on_cpu, tmp_path / "cpu", use_cpu=True)
    assert len(losses) == 3
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(cpu_losses), rtol=1e-4, atol=1e-4)


def test_bf16_training_is_accepted_and_runs_on_neuron(tmp_path):
    torch.manual_seed(0)
    trainer, losses = _train(MODELS["llama"](), tmp_path, bf16=True)
    assert trainer.args.device.type == "neuron" and trainer.accelerator.mixed_precision == "bf16"
    assert len(losses) == 3 and all(torch.isfinite(torch.tensor(losses)))


def test_accelerator_prepares_model_and_optimizer_on_neuron(tmp_path):
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=True)
    acc = Accelerator()
    linear = torch.nn.Linear(4, 2)
    model, opt = acc.prepare(linear, torch.optim.AdamW(linear.parameters()))
    assert acc.device.type == "neuron" and next(model.parameters()).device.type == "neuron"
    loss = model(torch.randn(3, 4, device=acc.device)).square().mean()
    acc.backward(loss)
    opt.step()
    acc.save_state(str(tmp_path))
    rng = torch.load(next(tmp_path.glob("random_states_*.pkl")), weights_only=False)
    assert len(rng["torch_neuron_manual_seed"]) == torch.neuron.device_count()
    AcceleratorState._reset_state(reset_partial_state=True)


def test_the_docs_example_runs(tmp_path, monkeypatch):
    import re
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "integrations.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", doc, re.DOTALL):
        exec(compile(block, "docs/integrations.md", "exec"), {})  # noqa: S102  (the doc is ours)


def test_save_pretrained_from_pretrained_round_trip(tmp_path):
    torch.manual_seed(0)
    model = MODELS["llama"]().to("neuron")
    model.save_pretrained(tmp_path)
    on_cpu = type(model).from_pretrained(tmp_path)
    again = type(model).from_pretrained(tmp_path, device_map="neuron")
    assert {p.device.type for p in again.parameters()} == {"neuron"}
    for (k, a), b, c in zip(model.state_dict().items(), on_cpu.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a.cpu(), b) and torch.equal(c.cpu(), b), k
    ids = batch("llama")["input_ids"]
    torch.testing.assert_close(again(ids.to("neuron")).logits.cpu(), on_cpu(ids).logits, rtol=1e-5, atol=1e-5)
