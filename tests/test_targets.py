"""The facts of each Trainium generation live once (torchneuron/targets.py): the runtime, the compiler and the
NKI simulator read that table, and TORCHNEURON_TARGET is read once per process."""

from __future__ import annotations

import importlib.util
import os

import torch

from tests.helpers import ROOT, run_python
from torchneuron import targets
from torchneuron.compiler import driver, neuronx_cc
from torchneuron.nki import hardware

def test_every_consumer_reads_the_one_table(monkeypatch):
    monkeypatch.delenv("NEURON_LOGICAL_NC_CONFIG", raising=False)
    assert set(driver.TARGETS) == {"sim", *targets.TARGETS}
    for name, t in targets.TARGETS.items():
        assert driver._lnc(name, None) == t.lnc
        assert hardware.target_named(name) is hardware.target_named(t.nki_generation)
        assert hardware.target_named(name).nc_version == t.nki_generation  # NKI's numbers, the table's name
        neuronx_cc.command("m.mlir", "m.neff", target=name, lnc=t.lnc, opt_level=1)
    assert set(hardware.TARGETS) == {s for t in targets.TARGETS.values() for s in (t.name, t.nki_generation)}


def test_the_simulator_is_configured_from_the_table():
    info = torch.neuron.get_device_properties(0)
    t = targets.current()
    facts = (info.target, info.instance, info.core_generation, info.cores)
    assert facts == (t.name, t.instance, t.core_generation, t.lnc)
    if not os.environ.get("TORCHNEURON_SIM_HBM_MB"):
        assert info.total_memory == t.hbm_bytes_per_device
    if not os.environ.get("TORCHNEURON_SIM_DEVICES"):
        assert torch.neuron.device_count() == t.logical_cores


def test_nrt_instance_families_map_to_one_target_each():
    families = [f for t in targets.TARGETS.values() for f in t.nrt_families]
    assert len(families) == len(set(families))
    assert targets.for_nrt_family(5).name == "trn2" and targets.for_nrt_family(1) is None  # inf1 has no Trainium


def test_target_is_read_once_per_process():
    code = """
import os, torch, torchneuron
from torchneuron import targets
from torchneuron.nki import current_target
first = (torch.neuron.device_count(), targets.current().name, current_target().name)
os.environ["TORCHNEURON_TARGET"] = "trn3"
print(first, (torch.neuron.device_count(), targets.current().name, current_target().name))
"""
    out = run_python(code, timeout=120, check=False, TORCHNEURON_TARGET="trn1", TORCHNEURON_RUNTIME="sim",
                     TORCHNEURON_SIM_DEVICES=None)
    assert out.stdout.strip() == "(2, 'trn1', 'trn1') (2, 'trn1', 'trn1')", out.stderr


def test_the_table_needs_no_torch():
    code = f"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("targets", {os.path.join(ROOT, "torchneuron", "targets.py")!r})
m = importlib.util.module_from_spec(spec); sys.modules["targets"] = m; spec.loader.exec_module(m)
print(m.named("gen3").name, "torch" in sys.modules)
"""
    out = run_python(code, timeout=60, check=False)
    assert out.stdout.split() == ["trn2", "False"], out.stderr
    assert importlib.util.find_spec("torchneuron.targets") is not None
