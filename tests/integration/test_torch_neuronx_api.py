"""AWS TorchNeuron's ``torch_neuronx`` API on torchneuron (torchneuron.neuronx_api, docs/integrations.md).

The first test runs a script written only against AWS's documented API, ``import torch_neuronx`` first, in a
fresh interpreter set up as an installed torchneuron is: the ``torchneuron-neuronx.pth`` start-up hook is in a
site directory (a ``sitecustomize`` adds it, since the suite runs from a checkout on PYTHONPATH)."""

import importlib
import os
import json
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import ROOT, run_python
from torchneuron import _neuronx_alias

SCRIPT = Path(__file__).with_name("aws_script.py")


@pytest.fixture
def installed(tmp_path):
    """A PYTHONPATH under which the interpreter starts as with torchneuron installed from its wheel."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "torchneuron-neuronx.pth").write_text((ROOT / "torchneuron" / "torchneuron-neuronx.pth").read_text())
    (tmp_path / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(site)!r})\n")
    return f"{tmp_path}:{ROOT}"


@pytest.fixture
def alias():
    """torch_neuronx imported in this process; afterwards forgotten, with what materialising it set up."""
    _neuronx_alias.reset()
    yield importlib.import_module("torch_neuronx")
    _neuronx_alias.reset()


def test_a_script_written_for_aws_runs_unchanged(installed, tmp_path):
    proc = run_python(f"import runpy, sys; sys.argv = ['aws_script.py', {str(tmp_path / 'trace')!r}]; "
                      f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')", PYTHONPATH=installed)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["same_count"] and out["count"] >= 2
    assert out["current_after_set"] == 1 and out["in_context"] == 0
    assert "Invalid device id" in out["bad_device"]
    assert out["grew_by"] >= 256 * 256 * 4
    assert out["nested_equals_flat"] and out["aws_counters"] and out["peak_ge_current"]
    assert out["summary_mentions_device"]
    assert out["stream_is_current"] and out["elapsed_ms_nonneg"] and out["default_stream_back"]
    assert out["matmul_err"] < 1e-3
    # AWS's names: the composite op by name, no overloads, one entry per execution
    assert out["linear_count"] == 1 and "aten::relu" in out["executed"]
    assert all(op.startswith("aten::") and "." not in op for op in out["executed"])
    assert out["fallback"] == [] and out["after_clear"] == []
    assert out["linear_err"] < 1e-4
    assert out["nki_eager_err"] < 1e-5 and out["nki_compiled_err"] < 1e-5
    assert out["dynamo_metrics_is_dict"]
    assert out["profile_files"] == ["neuron_report.html", "pytorch_trace.json"]
    assert out["trace_has_device_mul"] and not out["profiler_active_after"]
    assert "XLA-based torch-neuronx" in out["trace_error"] and "backend='neuron'" in out["trace_error"]


def test_the_startup_hook_imports_nothing_for_other_programs(installed):
    """With the hook installed, a program that never asks for torch_neuronx imports neither torch nor
    torchneuron; the hook is one finder at the end of sys.meta_path."""
    code = ("import sys; print(sorted(m for m in ('torch', 'torchneuron') if m in sys.modules), "
            "type(sys.meta_path[-1]).__name__)")
    assert run_python(code, PYTHONPATH=installed).stdout.split() == ["[]", "BootFinder"]


def test_the_startup_hook_follows_the_alias_setting(installed):
    proc = run_python("import torch_neuronx", PYTHONPATH=installed, TORCHNEURON_NEURONX_ALIAS="0", check=False)
    assert proc.returncode != 0 and "No module named 'torch_neuronx'" in proc.stderr


def test_the_startup_hook_never_shadows_aws_package(installed, tmp_path):
    pkg = tmp_path / "aws" / "torch_neuronx"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("REAL = 'aws'\n")
    code = "import torch_neuronx, sys; print(torch_neuronx.REAL, 'torch' in sys.modules)"
    out = run_python(code, PYTHONPATH=f"{tmp_path / 'aws'}:{installed}")
    assert out.stdout.split() == ["aws", "False"]


def test_aws_nki_example_imports_neuronxcc_first(installed):
    """AWS's examples/compile/nki_integration.py shape: ``import neuronxcc.nki`` before torch, a @wrap_nki
    kernel inside an nki_op (mutates_args={}), called in a fullgraph torch.compile. The NKI names resolve to
    torchneuron's front ends when TORCHNEURON_NKI_ALIASES=1."""
    code = """
        import neuronxcc.nki as nki
        import neuronxcc.nki.language as nl
        import torch
        from torch_neuronx import nki_op, wrap_nki

        @wrap_nki
        @nki.jit
        def add_kernel(a_input, b_input):
            c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
            ix = nl.arange(128)[:, None]
            iy = nl.arange(512)[None, :]
            nl.store(c_output[ix, iy], value=nl.load(a_input[ix, iy]) + nl.load(b_input[ix, iy]))
            return c_output

        @nki_op("awsexample::nki_add", mutates_args={})
        def nki_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return add_kernel(a, b)

        @torch.compile(backend="neuron", fullgraph=True)
        def compute_with_nki(a, b):
            return nki_add(a * 2, b)

        a = torch.rand(128, 512, device="neuron")
        b = torch.rand(128, 512, device="neuron")
        torch.testing.assert_close(compute_with_nki(a, b), a * 2 + b, rtol=1e-4, atol=1e-4)
        print("ok")
    """
    assert run_python(code, PYTHONPATH=installed, TORCHNEURON_NKI_ALIASES="1").stdout.split()[-1] == "ok"


def test_submodules_are_the_implementing_modules(alias):
    import torch_neuronx.memory
    import torch_neuronx.neuron
    import torch_neuronx.profiling
    from torch_neuronx.nki_hop import nki_op, wrap_nki

    from torchneuron.custom_ops import op, wrap

    assert torch_neuronx.neuron is torch.neuron
    assert torch_neuronx.profiling is sys.modules["torchneuron.neuronx_api.profiling"]
    assert torch_neuronx.memory.memory_stats is alias.memory_stats
    assert nki_op is op.nki_op and wrap_nki is wrap.wrap_nki
    assert alias.Stream is torch.neuron.Stream and alias.Event is torch.neuron.Event


@pytest.mark.parametrize("name", ["trace", "DataParallel", "analyze", "nki_jit"])
def test_xla_era_names_say_what_to_use(alias, name):
    with pytest.raises(AttributeError, match=r"XLA-based torch-neuronx.*not to TorchNeuron.*use "):
        getattr(alias, name)


def test_xla_era_submodules_say_what_to_use(alias):
    with pytest.raises(ModuleNotFoundError, match=r"torch_neuronx.xla_impl belongs to the XLA-based"):
        importlib.import_module("torch_neuronx.xla_impl.ops")


def test_an_unknown_name_points_to_the_table(alias):
    with pytest.raises(AttributeError, match=r"no attribute 'frobnicate'.*docs/integrations.md"):
        alias.frobnicate  # noqa: B018


def test_torch_neuron_functions_are_reachable(alias):
    assert alias.get_rng_state().equal(torch.neuron.get_rng_state())
    assert alias.is_available() and alias.is_neuron_runtime_initialized() == torch.neuron.is_initialized()


def test_linear_by_name_keeps_gradients(alias):
    """Counting aten::linear by name runs PyTorch's own decomposition: values and gradients as on the CPU."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 3)
    x = torch.randn(4, 8, requires_grad=True)
    lin.zero_grad()
    ref = lin(x)
    ref.square().sum().backward()
    ref_grads = [x.grad.clone(), lin.weight.grad.clone(), lin.bias.grad.clone()]
    nlin = torch.nn.Linear(8, 3).to("neuron")
    nlin.load_state_dict(lin.state_dict())
    nx = x.detach().to("neuron").requires_grad_()
    alias.clear_op_tracking()
    got = nlin(nx)
    got.square().sum().backward()
    assert alias.get_executed_ops().count("aten::linear") == 1
    torch.testing.assert_close(got.cpu(), ref)
    for g, r in zip([nx.grad, nlin.weight.grad, nlin.bias.grad], ref_grads):
        torch.testing.assert_close(g.cpu(), r)


def test_memory_stats_has_both_key_styles(alias):
    t = torch.ones(1024, device="neuron")
    torch.neuron.synchronize()
    stats = alias.memory_stats()
    flat = torch.neuron.memory_stats()
    for name in ("allocated_bytes", "reserved_bytes", "active_bytes"):
        assert stats[name] == {f: flat[f"{name}.all.{f}"] for f in ("current", "peak", "allocated", "freed")}
    assert stats["allocation_requests"] == flat["allocation.all.allocated"]
    assert alias.memory_allocated() == stats["allocated_bytes"]["current"] >= t.numel() * 4


def test_neuron_config_says_what_to_use(alias):
    from torch_neuronx.profiling import NeuronConfig, ProfileMode

    with pytest.raises(RuntimeError, match=r"libnrt's inspector.*ProfilerActivity.PrivateUse1"):
        NeuronConfig(modes=[ProfileMode.DEVICE])


@pytest.mark.parametrize("name", ["_record_memory_history", "_dump_snapshot", "memory_snapshot"])
def test_memory_snapshots_say_what_to_use(name):
    with pytest.raises(RuntimeError, match=r"keeps no allocation history.*memory_stats\(\)"):
        getattr(torch.neuron.memory, name)()


def test_a_build_puts_the_startup_hook_next_to_the_packages(tmp_path):
    """setup.py's build_py copies torchneuron-neuronx.pth to the root of what a wheel installs (site-packages),
    where the interpreter runs it at start-up."""
    import subprocess

    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    hook = tmp_path / "torchneuron-neuronx.pth"
    assert hook.read_text() == (ROOT / "torchneuron" / "torchneuron-neuronx.pth").read_text()
    assert (tmp_path / "torchneuron" / "_neuronx_boot.py").exists()


def test_first_import_registers_the_device_without_autoload(installed):
    """AWS: an explicit `import torch_neuronx` is what registers the device when TORCH_DEVICE_BACKEND_AUTOLOAD=0."""
    code = "import torch_neuronx, torch; print(torch.ones(2, device='neuron').device, torch_neuronx.device_count() > 0)"
    out = run_python(code, PYTHONPATH=installed, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert out.stdout.split() == ["neuron:0", "True"]
