"""`python -m torchneuron estimate` for a script or a local Hugging Face config.json: the planning table, the
same numbers as from Python (`command.plan`, `estimate`), progress on stderr, and named errors."""

import json
import subprocess
import sys

import pytest
import torch

from torchneuron.estimator import command, estimate

SCRIPT = '''
import torch
with torch.device("meta"):
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    inputs = (torch.randn(16, 256),)
'''


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "ignore", "-m", "torchneuron", "estimate", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def config(tmp_path):
    from transformers import BertConfig

    cfg = BertConfig(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
    cfg.architectures = ["BertForMaskedLM"]
    cfg.save_pretrained(tmp_path)
    return tmp_path / "config.json"


def test_a_script_prints_the_planning_table_and_the_same_numbers_as_python(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(SCRIPT)
    out = _run(str(script), "--target", "trn1", "--auto-cast", "matmult")
    assert out.returncode == 0, out.stderr
    assert "assumed  : auto-cast matmult-bf16; weights inputs" in out.stdout
    assert "per thousand inferences" in out.stdout and "on trn1.2xlarge at $1.34/h" in out.stdout
    assert "inference call: done" in out.stderr  # progress
    numbers = json.loads(_run(str(script), "--target", "trn1", "--auto-cast", "matmult", "--json").stdout)
    with torch.device("meta"):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256))
    direct = estimate(model, torch.randn(16, 256, device="meta"), target="trn1", mode="compiled",
                      auto_cast="matmult")
    assert numbers["compiled_us"] == pytest.approx(direct.compiled_us) and numbers["batch"] == 16
    assert numbers["cost"]["usd_per_thousand"] == pytest.approx(direct.cost("trn1.2xlarge")["usd_per_thousand"])


def test_a_config_json_is_read_locally_and_trains(config):
    numbers, text = command.plan(config, target="trn1", train=True, batch=4, seq=64, instance="trn1.32xlarge",
                                 instances=2)
    assert numbers["kind"] == "training" and numbers["workers"] == 64
    assert numbers["step_us"] == pytest.approx(numbers["forward_us"] + numbers["backward_us"]
                                               + numbers["optimizer_us"] + numbers["exposed_allreduce_us"])
    assert numbers["tokens_per_s"] == pytest.approx(numbers["samples_per_s"] * 64)
    assert "per million tokens" in text and "NeuronLink + EFA" in text
    out = _run(str(config.parent), "--target", "trn1", "--batch", "2", "--json", "--quiet")
    assert out.returncode == 0 and out.stderr.strip() == "", out.stderr
    assert json.loads(out.stdout)["kind"] == "inference"


def test_errors_name_the_fix(tmp_path):
    bad = tmp_path / "empty.py"
    bad.write_text("x = 1\n")
    out = _run(str(bad))
    assert out.returncode != 0 and "must define `model` and `inputs`" in out.stderr
    assert "does not exist" in _run(str(tmp_path / "missing.json")).stderr
