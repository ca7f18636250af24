"""Shared test setup: the neuron device is registered before any test module imports torch state."""

import json
import os
import stat
import sys
import textwrap
import warnings

import pytest
import torch

import torchneuron  # noqa: F401  (registers the device even when autoload is off)


@pytest.fixture(autouse=True)
def _quiet_fallback_warnings():
    # Fallback warnings are tested where they matter (tests/programs); elsewhere they are noise.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*has no StableHLO lowering.*")
        yield


@pytest.fixture(autouse=True)
def _sim_only(request):
    # tests/nrt runs parts of this suite again on the nrt runtime (TORCHNEURON_RUNTIME=nrt, the contract fake)
    if request.node.get_closest_marker("sim_only") and os.environ.get("TORCHNEURON_RUNTIME", "").lower() == "nrt":
        pytest.skip("checks the simulator itself")


@pytest.fixture
def neuron() -> torch.device:
    return torch.device("neuron:0")


# The neuronx-cc contract fake: a script first on PATH that checks the documented command line
# (torchneuron-anchor §1.3, §4.4), records it, and writes a NEFF. Shared by the compiler and compile tests.
FAKE = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    argv = sys.argv[1:]
    if argv == ["--version"]:
        print("NeuronX Compiler version 2.99.0+fake"); sys.exit(0)
    log = os.environ["FAKE_CC_LOG"]
    with open(log, "a") as f:
        f.write(json.dumps(argv) + "\\n")
    def fail(msg):
        print("ERROR fake neuronx-cc: " + msg, file=sys.stderr); sys.exit(70)
    if not argv or argv[0] != "compile": fail("first argument must be 'compile'")
    module = argv[1]
    if not module.endswith(".mlir") or not os.path.exists(module): fail("module file missing: " + module)
    if "stablehlo." not in open(module).read(): fail("module is not StableHLO")
    def value(flag):
        if flag not in argv: fail("missing " + flag)
        return argv[argv.index(flag) + 1]
    if value("--framework") != "XLA": fail("--framework must be XLA")
    if value("--target") not in ("trn1", "trn2", "trn3"): fail("bad --target")
    if value("--lnc") not in ("1", "2"): fail("bad --lnc")
    if not [a for a in argv if a in ("-O1", "-O2", "-O3")]: fail("missing -O level")
    if os.environ.get("FAKE_CC_FAIL"): fail("NCC_EVRF007: simulated compiler failure")
    out = value("--output")
    with open(out, "wb") as f:
        f.write(b"NEFF" + value("--target").encode() + open(module, "rb").read()[:32])
""")


@pytest.fixture
def fake_cc(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "neuronx-cc"
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "cc.log"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CC_LOG", str(log))
    monkeypatch.setenv("TORCHNEURON_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NEURON_CC_FLAGS", raising=False)
    monkeypatch.delenv("NEURON_COMPILER_OPT_LEVEL", raising=False)
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    from torchneuron.compiler import neuronx_cc

    neuronx_cc._version_of.cache_clear()

    def calls():
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return calls


