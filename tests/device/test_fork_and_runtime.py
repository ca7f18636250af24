"""Process-level behaviour: forked children, runtime selection, autoload."""

import subprocess

import pytest

from tests.helpers import run_python


def _run(code: str, **env) -> subprocess.CompletedProcess:
    """``code`` in a fresh process that, like a user's shell, has none of the suite's settings."""
    return run_python(code, check=False, clean=True, **env)


def test_forked_child_of_initialised_parent_gets_clear_error():
    code = (
        "import os, torch, torchneuron\n"
        "torch.ones(1, device='neuron')\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try:\n"
        "        torch.ones(1, device='neuron')\n"
        "        os._exit(3)\n"
        "    except RuntimeError as e:\n"
        "        print(e, flush=True)\n"
        "        os._exit(0 if 'spawn' in str(e) else 4)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print('child-exit', os.waitstatus_to_exitcode(status))\n"
    )
    out = _run(code)
    assert "child-exit 0" in out.stdout, out.stdout + out.stderr
    assert "forked subprocess" in out.stdout


def test_forked_child_can_still_seed_and_use_cpu():
    # DataLoader workers call torch.manual_seed in forked children: that must not fail.
    code = (
        "import os, torch, torchneuron\n"
        "torch.ones(1, device='neuron')\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    torch.manual_seed(1); torch.ones(2).sum()\n"
        "    os._exit(0 if torch.neuron._is_in_bad_fork() else 5)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print('child-exit', os.waitstatus_to_exitcode(status))\n"
    )
    out = _run(code)
    assert "child-exit 0" in out.stdout, out.stdout + out.stderr


def test_runtime_nrt_without_libnrt_is_a_clear_error():
    out = _run("import torch, torchneuron; torch.ones(1, device='neuron')", TORCHNEURON_RUNTIME="nrt")
    assert out.returncode != 0
    assert "TORCHNEURON_RUNTIME=nrt" in out.stderr and "libnrt" in out.stderr
    assert "Segmentation" not in out.stderr


def test_unknown_target_is_a_clear_error():
    out = _run("import torch, torchneuron; torch.ones(1, device='neuron')", TORCHNEURON_TARGET="trn9")
    assert out.returncode != 0 and "trn1, trn2, trn3" in out.stderr


def test_sim_device_count_override():
    out = _run("import torch, torchneuron; print(torch.neuron.device_count())", TORCHNEURON_SIM_DEVICES="8")
    assert out.stdout.strip() == "8"


def test_lazy_initialisation():
    out = _run("import torch, torchneuron; print(torch.neuron.is_initialized()); torch.neuron.manual_seed(1);"
               "print(torch.neuron.is_initialized()); torch.ones(1, device='neuron');"
               "print(torch.neuron.is_initialized())")
    assert out.stdout.split() == ["False", "False", "True"], out.stderr


def test_autoload_in_fresh_process():
    out = _run("import torch; x = torch.ones(2, device='neuron'); "
               "print(x.device, 'torchneuron' in __import__('sys').modules)")
    if "unsupported device" in out.stderr or "Expected one of" in out.stderr:
        pytest.fail("autoload did not register neuron: is the package installed (make install)?\n" + out.stderr)
    assert out.stdout.strip() == "neuron:0 True", out.stderr


def test_autoload_can_be_disabled():
    out = _run("import sys, torch; print('torchneuron' in sys.modules)", TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert out.stdout.strip() == "False"


def test_second_privateuse1_backend_is_refused():
    code = (
        "import torch\n"
        "torch.utils.rename_privateuse1_backend('otherdev')\n"
        "import torchneuron\n"
    )
    out = _run(code, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert out.returncode != 0
    assert "already claimed as 'otherdev'" in out.stderr and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in out.stderr


def test_autoload_keeps_heavy_dependencies_lazy():
    out = _run("import sys, torch; torch.ones(1, device='neuron');"
               "print(sorted(m for m in ('jax', 'jaxlib', 'torch_mlir') if m in sys.modules))")
    assert out.stdout.strip() == "[]", out.stderr


def test_nki_alias_env_var_works_through_autoload():
    out = _run("import torch, nki, nki.language as nl; print(nki.__name__, nl.__name__)", TORCHNEURON_NKI_ALIASES="1")
    assert out.returncode == 0, out.stderr
    assert "torchneuron.nki" in out.stdout


def test_runtime_nrt_refuses_a_library_without_libnrt_entry_points(tmp_path):
    # Three entry points and no nrt_get_version: not a libnrt torchneuron can use (tests/nrt has the full fake).
    import shutil

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the partial library")
    src = tmp_path / "partial_nrt.c"
    src.write_text("int nrt_init(int a, const char* b, const char* c) { return 0; }\n"
                   "int nrt_tensor_allocate(int p, int v, unsigned long s, const char* n, void** t) { return 4; }\n"
                   "int nrt_get_visible_vnc_count(unsigned* n) { *n = 4; return 0; }\n")
    lib = tmp_path / "libnrt.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    out = _run("import torch, torchneuron; torch.ones(1, device='neuron')", TORCHNEURON_RUNTIME="nrt",
               LD_LIBRARY_PATH=str(tmp_path))
    assert out.returncode != 0
    assert "too old" in out.stderr and "libnrt.so.1" in out.stderr and "TORCHNEURON_RUNTIME=sim" in out.stderr
    assert "unknown (the library has no nrt_get_version)" in out.stderr
    info = _run("import torchneuron; print(torchneuron._C._probe_libnrt()['status'])", LD_LIBRARY_PATH=str(tmp_path))
    assert info.stdout.strip() == "too old", info.stderr
