"""The neuronx-cc back end against a contract fake (``fake_cc`` in tests/conftest.py): a script first on PATH
that checks the documented command line (torchneuron-anchor §1.3, §4.4), records it, and writes a NEFF."""

import pytest
import torch

from torchneuron.compiler import driver
from torchneuron.compiler.cache import CompileCache
from torchneuron.programs.lowered import lower


def _lowered():
    return lower(torch.nn.Linear(4, 2), torch.randn(3, 4))


def test_documented_command_line(fake_cc, monkeypatch):
    monkeypatch.setenv("NEURON_CC_FLAGS", "--verbose=info --enable-fast-loading-neuron-binaries")
    compiled = _lowered().compile("trn2")
    assert compiled.neff.startswith(b"NEFFtrn2")
    (argv,) = fake_cc()
    assert argv[0] == "compile" and argv[1].endswith("module.mlir")
    assert argv[2:] == ["--framework", "XLA", "--target", "trn2", "--lnc", "2", "-O2", "--model-type", "transformer",
                        "--auto-cast=none", "--verbose=info", "--enable-fast-loading-neuron-binaries",
                        "--output", argv[-1]]
    assert argv[-1].endswith("module.neff")


@pytest.mark.parametrize("target,lnc", [("trn1", "1"), ("trn3", "2")])
def test_target_selects_the_default_lnc(fake_cc, target, lnc):
    _lowered().compile(target)
    (argv,) = fake_cc()
    assert argv[argv.index("--target") + 1] == target and argv[argv.index("--lnc") + 1] == lnc


def test_env_overrides_opt_level_and_lnc(fake_cc, monkeypatch):
    monkeypatch.setenv("NEURON_COMPILER_OPT_LEVEL", "3")
    monkeypatch.setenv("NEURON_LOGICAL_NC_CONFIG", "1")
    _lowered().compile("trn2")
    (argv,) = fake_cc()
    assert "-O3" in argv and argv[argv.index("--lnc") + 1] == "1"


def test_eager_ops_compile_at_O1(fake_cc):
    driver.compile(_lowered().stablehlo, target="trn2", kind="eager", cache=CompileCache())
    assert "-O1" in fake_cc()[0]


def test_neff_is_cached_across_caches(fake_cc):
    text = _lowered().stablehlo
    a = driver.compile(text, target="trn2", cache=CompileCache())
    b = driver.compile(text, target="trn2", cache=CompileCache())  # fresh memory: served from disk
    assert a.neff == b.neff and len(fake_cc()) == 1
    driver.compile(text, target="trn3", cache=CompileCache())     # other target: other key
    assert len(fake_cc()) == 2


def test_compiler_failure_is_reported_with_the_command(fake_cc, monkeypatch):
    monkeypatch.setenv("FAKE_CC_FAIL", "1")
    with pytest.raises(driver.CompileError,
                       match=r"(?s)neuronx-cc failed \(exit 70\).*trn2.*\$ .*neuronx-cc compile.*NCC_EVRF007"):
        driver.compile(_lowered().stablehlo, target="trn2", cache=CompileCache())


def test_missing_compiler_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(driver.CompileError, match="not on PATH.*target='sim'"):
        driver.compile(_lowered().stablehlo, target="trn2", cache=CompileCache())


def test_neff_needs_a_trn_host_to_run(fake_cc):
    compiled = _lowered().compile("trn2")
    with pytest.raises(RuntimeError, match="Trn host.*target='sim'"):
        compiled(torch.randn(3, 4))


def test_bad_target_is_rejected():
    with pytest.raises(ValueError, match="unknown compile target 'inf9'"):
        driver.compile("module {}", target="inf9")
