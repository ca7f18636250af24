"""NEURON_RT_VISIBLE_CORES on the simulator: a process sees its slice of the simulated cores, from neuron:0."""

import subprocess
import sys

import pytest
import torch

from torchneuron import _visible_cores

from .launch import ROOT, worker_env


def _python(code: str, tmp_path, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=worker_env(tmp_path, **env), capture_output=True,
                          text=True, timeout=120, cwd=ROOT, check=False)


def test_parse_ranges_and_lists():
    assert _visible_cores.parse("3", 4) == [3]
    assert _visible_cores.parse("0-3", 4) == [0, 1, 2, 3]
    assert _visible_cores.parse("0, 2,4-5", 8) == [0, 2, 4, 5]
    assert _visible_cores.describe([0, 2, 4, 5]) == "0,2,4-5"


@pytest.mark.parametrize("spec, message", [
    ("4", "core 4 does not exist, the simulated machine has 4 NeuronCores (0-3)"),
    ("a-b", "expected core indices and ranges"),
    ("3-1", "is not a range"),
    ("1,1", "names a core twice"),
    (",", "names no core"),
])
def test_bad_values_are_named(spec, message):
    with pytest.raises(ValueError, match="NEURON_RT_VISIBLE_CORES") as e:
        _visible_cores.parse(spec, 4)
    assert message in str(e.value)


def test_a_process_sees_its_slice(tmp_path):
    code = ("import torch; x = torch.ones(2, device='neuron:1'); "
            "print(torch.neuron.device_count(), x.device, torch.neuron.mem_get_info(0)[1])")
    sliced = _python(code, tmp_path, NEURON_RT_VISIBLE_CORES="1-2")
    assert sliced.returncode == 0, sliced.stderr
    count, device, total = sliced.stdout.split()
    assert (count, device) == ("2", "neuron:1")
    assert torch.neuron.device_count() == 4  # this process (no slice): trn2's 4 logical cores
    assert int(total) == torch.neuron.mem_get_info(0)[1]  # each core keeps its own HBM
    many = _python(code, tmp_path, NEURON_RT_VISIBLE_CORES="6-7", TORCHNEURON_SIM_DEVICES="8")
    assert many.stdout.split()[:2] == ["2", "neuron:1"], many.stderr


def test_a_core_outside_the_machine_is_an_error(tmp_path):
    proc = _python("import torch; torch.ones(1, device='neuron')", tmp_path, NEURON_RT_VISIBLE_CORES="4-5")
    assert proc.returncode != 0
    assert "NEURON_RT_VISIBLE_CORES='4-5': core 4 does not exist" in proc.stderr


def test_num_cores_gives_the_first_n_and_visible_cores_wins(tmp_path):
    """NEURON_RT_NUM_CORES as libnrt reads it: n cores (0: all), renumbered from neuron:0;
    NEURON_RT_VISIBLE_CORES takes precedence when both are set."""
    code = "import torch; print(torch.neuron.device_count())"
    assert _python(code, tmp_path, NEURON_RT_NUM_CORES="3").stdout.split() == ["3"]
    assert _python(code, tmp_path, NEURON_RT_NUM_CORES="0").stdout.split() == ["4"]
    assert _python(code, tmp_path, NEURON_RT_NUM_CORES="3", NEURON_RT_VISIBLE_CORES="2").stdout.split() == ["1"]
    too_many = _python("import torch; torch.ones(1, device='neuron')", tmp_path, NEURON_RT_NUM_CORES="5")
    assert too_many.returncode != 0 and "NEURON_RT_NUM_CORES='5': the simulated machine has 4" in too_many.stderr


@pytest.mark.parametrize("spec, message", [("two", "expected a number"), ("-1", r"0 \(all\) or a positive")])
def test_bad_num_cores_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        _visible_cores.parse_count(spec, 4)
