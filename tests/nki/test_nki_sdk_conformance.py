"""Behaviour AWS documents for the legacy (`neuronxcc.nki`) API that its public SDK tests exercise, checked
here from the documentation against NumPy references (our own kernels, not AWS's tests)."""

from __future__ import annotations

import numpy as np
import pytest

import torchneuron.nki.legacy as nki
import torchneuron.nki.legacy.isa as nisa
import torchneuron.nki.legacy.language as nl
from torchneuron.nki.errors import NkiError

RNG = np.random.default_rng(32)


# ---- nisa.tensor_copy_dynamic_src / _dst: a copy at an offset read from SBUF while the kernel runs ----

def test_dynamic_src_offset_plus_index_expression_gathers_columns() -> None:
    """`t[i_p, idx[0, b] + i_f]`: the tile value offsets the free-dimension index expression."""
    @nki.jit(mode="simulation")
    def k(a, offs):
        out = nl.ndarray((a.shape[0], offs.shape[1] * 3), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        o = nl.load(offs)
        res = nl.ndarray((a.shape[0], offs.shape[1] * 3), a.dtype, buffer=nl.sbuf)
        ip, jf = nl.mgrid[0:a.shape[0], 0:3]
        for b in nl.affine_range(offs.shape[1]):
            res[ip, b * 3 + jf] = nisa.tensor_copy_dynamic_src(t[ip, o[0, b] + jf])
        nl.store(out, res)
        return out

    a = RNG.standard_normal((64, 40)).astype(np.float32)
    offs = np.array([[5, 0, 37, 12]], dtype=np.int32)
    want = np.concatenate([a[:, s:s + 3] for s in offs[0]], axis=1)
    np.testing.assert_array_equal(k(a, offs), want)


def test_dynamic_src_index_expression_first_and_dtype_cast() -> None:
    """`i_f + idx[0, 0]` (the expression on the left) and dtype= casting the copy, as documented."""
    @nki.jit(mode="simulation")
    def k(a, offs):
        out = nl.ndarray((a.shape[0], 4), nl.bfloat16, buffer=nl.shared_hbm)
        t = nl.load(a)
        o = nl.load(offs)
        ip, jf = nl.mgrid[0:a.shape[0], 0:4]
        nl.store(out, nisa.tensor_copy_dynamic_src(t[ip, jf + o[0, 0]], dtype=nl.bfloat16))
        return out

    a = RNG.standard_normal((32, 16)).astype(np.float32)
    got = k(a, np.array([[9]], dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(got, np.float32),
                                  a[:, 9:13].astype(nl.bfloat16).astype(np.float32))


def test_dynamic_dst_scatters_into_offset() -> None:
    @nki.jit(mode="simulation")
    def k(a, offs):
        out = nl.ndarray((a.shape[0], 16), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        o = nl.load(offs)
        res = nl.zeros((a.shape[0], 16), a.dtype, buffer=nl.sbuf)
        ip, jf = nl.mgrid[0:a.shape[0], 0:a.shape[1]]
        nisa.tensor_copy_dynamic_dst(dst=res[ip, o[0, 0] + jf], src=t)
        nl.store(out, res)
        return out

    a = RNG.standard_normal((8, 5)).astype(np.float32)
    want = np.zeros((8, 16), np.float32)
    want[:, 6:11] = a
    np.testing.assert_array_equal(k(a, np.array([[6]], dtype=np.int32)), want)


def test_dynamic_offset_past_the_tile_is_an_error() -> None:
    @nki.jit(mode="simulation")
    def k(a, offs):
        out = nl.ndarray((a.shape[0], 4), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        o = nl.load(offs)
        ip, jf = nl.mgrid[0:a.shape[0], 0:4]
        nl.store(out, nisa.tensor_copy_dynamic_src(t[ip, o[0, 0] + jf]))
        return out

    with pytest.raises(NkiError, match="out_of_bound|Out-of-bound"):
        k(np.zeros((8, 16), np.float32), np.array([[13]], dtype=np.int32))


def test_dynamic_offset_on_partitions_is_rejected() -> None:
    """The offset is documented for the free dimensions; partitions move with an indirect DMA."""
    @nki.jit(mode="simulation")
    def k(a, offs):
        out = nl.ndarray((4, a.shape[1]), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        o = nl.load(offs)
        ip, jf = nl.mgrid[0:4, 0:a.shape[1]]
        nl.store(out, nisa.tensor_copy_dynamic_src(t[o[0, 0] + ip, jf]))
        return out

    with pytest.raises(NkiError, match="partition"):
        k(np.zeros((8, 16), np.float32), np.array([[2]], dtype=np.int32))


# ---- a kernel named test_* is not collected by pytest (it is not a test function) ----

def test_pytest_does_not_collect_a_kernel_named_like_a_test(tmp_path) -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "test_kernel_named_test.py").write_text(
        "import numpy as np\n"
        "import torchneuron.nki.legacy as nki\n"
        "import torchneuron.nki.legacy.language as nl\n\n"
        "@nki.jit(mode='simulation')\n"
        "def test_copy_kernel(a):\n"
        "    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)\n"
        "    nl.store(out, nl.load(a))\n"
        "    return out\n\n"
        "def test_the_kernel():\n"
        "    a = np.arange(8, dtype=np.float32).reshape(2, 4)\n"
        "    np.testing.assert_array_equal(test_copy_kernel(a), a)\n")
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", tmp_path.name],
                       cwd=tmp_path.parent, env=env, capture_output=True, text=True, timeout=300)
    assert "1 passed" in p.stdout and "error" not in p.stdout.lower(), p.stdout + p.stderr


# ---- nki.profile, like nki.benchmark, takes `nt.tensor[[shape], dtype]` for an input (values unused) ----

def test_profile_takes_tensor_type_stand_ins(tmp_path) -> None:
    import json

    import torchneuron.nki.legacy.typing as nt

    def body(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(a)))
        return out

    real = nki.profile(working_directory=str(tmp_path / "real"))(body)
    a = RNG.standard_normal((250, 512)).astype(np.float32)[:128]
    np.testing.assert_allclose(real(a), np.exp(a), rtol=1e-5)  # a real input still computes its value
    stand_in = nki.profile(working_directory=str(tmp_path / "stand_in"))(body)
    out = stand_in(nt.tensor[[128, 512], nl.float32])
    assert out.shape == (128, 512)
    lat = [json.loads((tmp_path / d / "profile.json").read_text())["latency_ns"] for d in ("real", "stand_in")]
    assert lat[0] == lat[1] > 0
