"""The xla-cpu back end: StableHLO compiled by jaxlib, run on host buffers through DLPack without copies."""

import pytest
import torch

from tests.helpers import run_python_json
from torchneuron.compiler import driver, xla_cpu
from torchneuron.compiler.cache import CompileCache

MM = """module {
  func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> (tensor<8x4xf32>, tensor<8x16xf32>) {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    %1 = stablehlo.exponential %a : tensor<8x16xf32>
    return %0, %1 : tensor<8x4xf32>, tensor<8x16xf32>
  }
}
"""


def test_runs_and_matches_torch():
    exe = driver.compile(MM, cache=CompileCache())
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    mm, ex = exe.run([a, b])
    torch.testing.assert_close(mm, a @ b, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ex, a.exp())


def test_check_kind_compiles_unoptimised_under_its_own_key_with_the_same_results(tmp_path):
    cache = CompileCache(tmp_path)
    fast, check = driver.compile(MM, cache=cache), driver.compile(MM, kind="check", cache=cache)
    assert cache.stats["compiles"] == 2 and fast is not check  # an optimised program never serves a check
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    for got, expected in zip(check.run([a, b]), fast.run([a, b])):
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)


def test_inputs_are_aliased_not_copied():
    exe = driver.compile(MM, cache=CompileCache())
    a = torch.randn(8, 16)
    buf = exe.buffer(a)
    assert buf.unsafe_buffer_pointer() == a.data_ptr()
    a.mul_(0)  # the XLA buffer sees the host memory itself
    (mm, ex) = exe.run_buffers([buf, exe.buffer(torch.ones(16, 4))])
    assert mm.abs().sum().item() == 0.0 and torch.all(ex == 1)


def test_outputs_own_xla_memory_and_survive_the_executable():
    exe = driver.compile(MM, cache=CompileCache())
    outs = exe.run([torch.ones(8, 16), torch.ones(16, 4)])
    del exe
    assert outs[0].sum().item() == 8 * 4 * 16


def test_rejected_module_is_a_compile_error():
    bad = MM.replace("tensor<16x4xf32>) -> tensor<8x4xf32>", "tensor<16x4xf32>) -> tensor<8x5xf32>", 1)
    with pytest.raises(driver.CompileError, match="XLA:CPU rejected"):
        driver.compile(bad, cache=CompileCache())


def test_version_names_jaxlib():
    assert xla_cpu.version().startswith("jaxlib-")


def test_compiling_and_running_leaves_the_process_environment_alone(tmp_path):
    """A JAX the user starts after torchneuron must not inherit our XLA_FLAGS: the Eigen setting travels with
    each compilation instead."""
    out = run_python_json("""
        import json, os
        import torch, torchneuron
        before = dict(os.environ)
        lowered = torchneuron.lower(lambda x: (x @ x.T).exp(), torch.randn(4, 8))
        y = lowered(torch.randn(4, 8, device="neuron"))
        y.cpu()
        print(json.dumps({"changed": sorted(k for k in set(before) | set(os.environ)
                                            if before.get(k) != os.environ.get(k))}))
    """, XLA_FLAGS=None, TORCHNEURON_CACHE_DIR=str(tmp_path),
        # PyTorch itself pins this one when Dynamo is imported (make_fx imports it): given, it stays as is
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    assert out == {"changed": []}


def test_the_eigen_setting_is_a_compile_option_unless_xla_flags_sets_it(monkeypatch):
    from jax._src.lib import xla_client

    monkeypatch.delenv("XLA_FLAGS", raising=False)
    assert xla_cpu._compile_options(xla_client).env_option_overrides == [("xla_cpu_multi_thread_eigen", False)]
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=true")
    assert xla_cpu._compile_options(xla_client).env_option_overrides == []
