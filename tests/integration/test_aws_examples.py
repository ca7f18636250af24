"""AWS's public TorchNeuron examples that need no download, as a TorchNeuron user writes them from AWS's
documented API and the examples' descriptions (tests/integration/aws_examples/, one script per example:
gpt2-train-loop, llama, simple_moe, fused_attention, compile/{QUICKSTART, device_placement, dtype_handling,
nki_integration, distributed}). Each runs unchanged in a fresh interpreter set up as an installed torchneuron is
(``import torch_neuronx`` is its first line), prints one JSON line of what it observed, and is compared here
with the CPU: the same script with ``--device cpu``, or the CPU references the script computes itself."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.helpers import ROOT, python_env, run_python

EXAMPLES = Path(__file__).with_name("aws_examples")
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))
_TMP: tempfile.TemporaryDirectory | None = None


@functools.cache
def _installed() -> str:
    """A PYTHONPATH under which the interpreter starts as with torchneuron installed from its wheel: the
    ``torchneuron-neuronx.pth`` start-up hook in a site directory (added by a ``sitecustomize``)."""
    global _TMP
    _TMP = tempfile.TemporaryDirectory(prefix="aws_examples_")  # removed when the test session ends
    root = Path(_TMP.name)
    (root / "site").mkdir()
    (root / "site" / "torchneuron-neuronx.pth").write_text((ROOT / "torchneuron" / "torchneuron-neuronx.pth")
                                                           .read_text())
    (root / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(root / 'site')!r})\n")
    return f"{root}:{ROOT}"


@functools.cache
def example(script: str, *args: str) -> dict:
    """What ``python aws_examples/<script> <args>`` printed (run once per arguments in this session)."""
    code = (f"import runpy, sys; sys.argv = [{script!r}, *{list(args)!r}]; "
            f"runpy.run_path({str(EXAMPLES / script)!r}, run_name='__main__')")
    proc = run_python(code, PYTHONPATH=_installed(), timeout=240)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def torchrun_example(script: str, nproc: int) -> dict:
    """What ``torchrun --standalone --nproc-per-node <nproc> aws_examples/<script>`` printed (rank 0)."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           str(EXAMPLES / script)]
    env = python_env(PYTHONPATH=_installed(), OMP_NUM_THREADS="1", LOCAL_RANK=None, NEURON_RT_VISIBLE_CORES=None)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=240)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "stderr": proc.stderr}


def close(a: list, b: list, tol: float) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1.0, abs(y)) for x, y in zip(a, b))


@pytest.mark.parametrize("script", SCRIPTS)
def test_examples_begin_with_import_torch_neuronx(script):
    assert (EXAMPLES / script).read_text().splitlines()[0].startswith("import torch_neuronx")


def test_every_example_is_listed_in_the_docs():
    doc = (ROOT / "docs" / "integrations.md").read_text()
    assert [s for s in SCRIPTS if f"`{s}`" not in doc] == []


# ---- gpt2-train-loop ----

@pytest.mark.parametrize("mode", [(), ("--compile",)], ids=["eager", "compiled"])
def test_gpt2_train_loop_matches_cpu(mode):
    got, cpu = example("gpt2_train_loop.py", *mode), example("gpt2_train_loop.py", "--device", "cpu")
    assert got["device"] == "neuron:0" and cpu["device"] == "cpu"
    assert got["losses"][-1] < 0.85 * got["losses"][0]  # it learns
    assert close(got["losses"], cpu["losses"], 1e-5), (got["losses"], cpu["losses"])
    assert abs(got["param_checksum"] - cpu["param_checksum"]) < 1e-3
    assert got["fallback_ops"] == []


# ---- llama ----

@pytest.mark.parametrize("args", [(), ("--compile",), ("--dtype", "bfloat16")], ids=["eager", "compiled", "bf16"])
def test_llama_forward_and_generate_match_cpu(args):
    got = example("llama.py", *args)
    dtype = ("--dtype", "bfloat16") if "bfloat16" in args else ()
    cpu = example("llama.py", "--device", "cpu", *dtype)
    assert got["device"] == "neuron:0" and got["logits_shape"] == [2, 8, 256]
    assert got["generated"] == cpu["generated"] and len(got["generated"][0]) == 12
    tol = 1e-2 if dtype else 1e-5
    for g, c in zip(got["last_logits"], cpu["last_logits"]):
        assert close(g, c, tol)


def test_llama_generate_reports_no_fallback_ops():
    assert example("llama.py")["fallback_ops"] == []


# ---- simple_moe (torch._grouped_mm) ----

@pytest.mark.parametrize("mode", [(), ("--compile",)], ids=["eager", "compiled"])
def test_simple_moe_grouped_mm_forward_backward_match_cpu(mode):
    got, cpu = example("simple_moe.py", *mode), example("simple_moe.py", "--device", "cpu")
    assert got["loss_grouped_mm"] == cpu["loss_grouped_mm"] and got["loss_loop"] == cpu["loss_loop"]
    assert abs(got["out_checksum"] - cpu["out_checksum"]) < 1e-3
    assert got["grad_checksums"].keys() == {"w1", "w2", "router.weight"}
    for name, value in cpu["grad_checksums"].items():
        assert value > 0 and abs(got["grad_checksums"][name] - value) < 1e-3 * value
    # the grouped matmuls and the per-expert loop are the same layer
    assert got["max_diff_grouped_vs_loop"] < 1e-2


def test_simple_moe_compiles_grouped_mm_in_graph():
    warnings = example("simple_moe.py", "--compile")["warnings"]
    assert not [w for w in warnings if "CompileFallbackWarning" in w], warnings


def test_simple_moe_reports_no_fallback_ops():
    assert example("simple_moe.py")["fallback_ops"] == []


# ---- fused_attention ----

def test_fused_attention_sdpa_and_nki_kernel_match_cpu():
    got = example("fused_attention.py")
    # SDPA, the device's fused attention (OVERRIDEABLE) and nn.MultiheadAttention: the CPU's kernels
    assert got["sdpa_err"] < 1e-6 and got["sdpa_overrideable_err"] < 1e-6 and got["mha_err"] < 1e-6
    assert got["sdpa_bf16_err_vs_cpu_bf16"] < 1e-2
    # the NKI kernel (forward) and its registered backward, eager and compiled
    assert got["nki_err"] < 1e-5 and got["nki_compiled_err"] < 1e-5
    assert got["dynamo_metrics"]["graphs_compiled"] == 2  # forward and backward, no graph break
    assert got["executed_has_sdpa"] and got["fallback_ops"] == []


# ---- compile/ ----

def test_compile_quickstart_trains_as_cpu():
    got = example("compile_quickstart.py")
    assert got["inference_device"] == "neuron:0" and got["inference_err"] < 1e-5
    assert close(got["losses"], got["cpu_losses"], 1e-5) and got["losses"][-1] < got["losses"][0]
    assert got["param_err"] < 1e-5
    assert got["dynamo_metrics"]["eager_pieces"] == 0 and got["fallback_ops"] == []


def test_compile_device_placement():
    got = example("compile_device_placement.py")
    assert got["neuron_inputs_result_device"] == "neuron:0" and got["neuron_inputs_err"] < 1e-5
    # CPU inputs: computed on neuron, results on neuron, one warning for two calls
    assert got["cpu_inputs_result_device"] == "neuron:0" and got["cpu_inputs_err"] < 1e-5
    assert len(got["cpu_inputs_warnings"]) == 1 and "CPU tensors" in got["cpu_inputs_warnings"][0]
    assert got["model_result_device"] == "neuron:0" and got["model_err"] < 1e-5
    if got["device_count"] > 1:
        assert got["neuron1_result_device"] == "neuron:1" and got["neuron1_err"] < 1e-5


def test_compile_dtype_handling():
    got = example("compile_dtype_handling.py")
    assert set(got["dtypes"]) == {"float32", "bfloat16", "float16", "int32", "int64", "float64"}
    for dtype, r in got["dtypes"].items():
        assert r["neuron_dtypes"] == r["cpu_dtypes"], dtype
        # float64 is computed in float32 on NeuronCores (docs/eager.md); the rest are the CPU's results
        assert r["max_rel_err"] < (1e-6 if dtype == "float64" else 1e-6 if dtype == "float32" else 1e-2), dtype
        if dtype.startswith("int"):
            assert r["max_err"] == 0, dtype
    assert got["autocast"]["neuron_dtype"] == got["autocast"]["cpu_dtype"] == "bfloat16"
    assert got["autocast"]["max_err"] < 1e-2


def test_compile_nki_integration():
    got = example("compile_nki_integration.py")
    assert got["eager_err"] < 1e-5 and got["compiled_err"] < 1e-5 and got["compiled_again_err"] < 1e-5
    # one forward and one backward graph, compiled once (the second call reuses them)
    assert got["dynamo_metrics"]["graphs_compiled"] == 2 and got["dynamo_metrics"]["recompiles"] == 0


def test_compile_distributed_ddp_matches_full_batch_cpu():
    got = torchrun_example("compile_distributed.py", 2)
    assert got["world"] == 2 and got["devices"] == ["neuron:0", "neuron:1"]
    # DDP's averaged gradients of two half batches are the whole batch's: the CPU's training, to rounding
    assert close(got["losses"], got["cpu_losses"], 1e-5) and got["losses"][-1] < got["losses"][0]
    assert got["param_err"] < 1e-5
    assert abs(got["allreduce_norm"] - got["cpu_norm"]) < 1e-4 * got["cpu_norm"]
    # DDP runs the process group's collectives from inside the compiled region: Dynamo must not trace them
    assert "Dynamo does not know how to trace" not in got["stderr"], got["stderr"][-3000:]
