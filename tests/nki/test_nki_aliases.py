"""Unmodified kernels importing `neuronxcc.nki` / `nki`: the explicit switch, the env var, and never
shadowing a real installed package."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from torchneuron import nki as tn_nki

ROOT = Path(__file__).resolve().parents[2]

LEGACY_KERNEL = textwrap.dedent('''
    import numpy as np
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl
    from neuronxcc.nki import isa as nisa
    from neuronxcc.nki.isa.constants import oob_mode  # the ISA enums as their own module

    assert oob_mode.error is nisa.oob_mode.error

    @nki.jit(mode="simulation")
    def tensor_add_kernel(a_input, b_input):
        c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
        ix = nl.arange(128)[:, None]
        iy = nl.arange(512)[None, :]
        a_tile = nl.load(a_input[ix, iy])
        b_tile = nl.load(b_input[ix, iy])
        nl.store(c_output[ix, iy], value=nisa.tensor_tensor(a_tile, b_tile, op=np.add))
        return c_output
''')

CURRENT_KERNEL = textwrap.dedent('''
    import nki
    import nki.isa as nisa
    import nki.language as nl
    from nki.isa.constants import dge_mode

    assert dge_mode.hwdge is nisa.dge_mode.hwdge

    @nki.jit
    def exp_kernel(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.activation(dst=t, op=nl.exp, data=t)
        nisa.dma_copy(dst=out, src=t)
        return out
''')

_ALIAS_NAMES = ("neuronxcc", "nki", "legacy_kernel", "current_kernel")


@pytest.fixture
def kernels_dir(tmp_path: Path):
    (tmp_path / "legacy_kernel.py").write_text(LEGACY_KERNEL)
    (tmp_path / "current_kernel.py").write_text(CURRENT_KERNEL)
    sys.path.insert(0, str(tmp_path))
    yield tmp_path
    sys.path.remove(str(tmp_path))
    tn_nki.uninstall_import_aliases()
    for name in list(sys.modules):
        if name.split(".")[0] in _ALIAS_NAMES:
            del sys.modules[name]


def test_unmodified_kernels_run_after_install(kernels_dir: Path) -> None:
    with pytest.raises(ImportError):
        import current_kernel  # noqa: F401  - no alias yet: `import nki` is not found
    aliased = tn_nki.install_import_aliases()
    assert set(aliased) == {"neuronxcc", "nki"}
    import current_kernel
    import legacy_kernel

    a = np.random.default_rng(0).standard_normal((128, 512), dtype=np.float32)
    np.testing.assert_array_equal(legacy_kernel.tensor_add_kernel(a, a), a + a)
    np.testing.assert_allclose(current_kernel.exp_kernel(a), np.exp(a), rtol=1e-6)
    import neuronxcc.nki.language as nl
    from torchneuron.nki.legacy import language as legacy_language

    assert nl is legacy_language  # one module object: aliasing never re-executes our modules
    tn_nki.uninstall_import_aliases()
    assert "nki" not in sys.modules and "neuronxcc.nki" not in sys.modules


def test_real_package_is_never_shadowed(kernels_dir: Path) -> None:
    real = kernels_dir / "nki"
    real.mkdir()
    (real / "__init__.py").write_text("REAL = True\n")
    tn_nki.uninstall_import_aliases()
    aliased = tn_nki.install_import_aliases()
    assert aliased == ["neuronxcc"]
    import nki

    assert getattr(nki, "REAL", False)
    import neuronxcc.nki

    assert neuronxcc.nki.simulate_kernel is tn_nki.simulate_kernel


def test_env_var_and_module_runner(tmp_path: Path) -> None:
    (tmp_path / "current_kernel.py").write_text(CURRENT_KERNEL)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent('''
        import numpy as np
        import current_kernel
        x = np.ones((4, 4), np.float32)
        print("OK", float(current_kernel.exp_kernel(x)[0, 0]))
    '''))
    # The NKI simulator needs no neuron device: keep torch's backend autoload out of these interpreters.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
           "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    env.pop("TORCHNEURON_NKI_ALIASES", None)
    runner = subprocess.run([sys.executable, "-m", "torchneuron.nki", str(script)], env=env, capture_output=True,
                            text=True, timeout=300, cwd=tmp_path)
    assert runner.returncode == 0, runner.stderr
    assert "OK 2.718" in runner.stdout
    code = "import torchneuron.nki, runpy; runpy.run_path(%r)" % str(script)
    off = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert off.returncode != 0 and "No module named 'nki'" in off.stderr
    on = subprocess.run([sys.executable, "-c", code], env={**env, "TORCHNEURON_NKI_ALIASES": "1"},
                        capture_output=True, text=True, timeout=300)
    assert on.returncode == 0, on.stderr
    assert "OK 2.718" in on.stdout


def test_language_constants_sizeinbytes_imports_as_aws_kernels_do(kernels_dir: Path) -> None:
    """AWS's neuron-team kernels size tiles with `from neuronxcc.nki.language.constants import sizeinbytes`."""
    tn_nki.install_import_aliases()
    import neuronxcc.nki.language as nl
    import nki.language as nl_current
    from neuronxcc.nki.language.constants import sizeinbytes
    from nki.language.constants import sizeinbytes as current_sizeinbytes

    assert current_sizeinbytes is sizeinbytes and nl.constants.sizeinbytes is sizeinbytes
    assert nl_current.constants is nl.constants
    assert [sizeinbytes(d) for d in (np.float32, nl.bfloat16, nl.float16, nl.float8_e4m3, np.int32, nl.uint8)] == \
        [4, 2, 2, 1, 4, 1]
    assert sizeinbytes(np.float32) // sizeinbytes(nl.float8_e4m3) == 4  # the RMSNorm-quant kernel's scale slots
    with pytest.raises(Exception, match="not supported on NeuronCores"):
        sizeinbytes(np.float64)
