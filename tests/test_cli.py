"""The two user-facing commands: `python -m torchneuron info` and `python -m torchneuron demo`."""

import subprocess
import sys


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "ignore", "-m", "torchneuron", *args], capture_output=True,
                          text=True, timeout=300)


def test_info_reports_runtime_target_devices_and_versions():
    out = _run("info")
    assert out.returncode == 0, out.stderr
    for text in ("runtime      : sim", "target       : trn2", "devices      : 4", "neuron:3", "torch_mlir",
                 'torch.compile: backend="neuron" (torchneuron.dynamo.backend:neuron_backend)',
                 ('distributed  : c10d backend "neuron" (init_process_group("neuron"), the default for neuron) over '
                  "gloo on host views of device memory (simulator)")):
        assert text in out.stdout


def test_demo_trains_and_loss_goes_down():
    out = _run("demo", "--steps", "40")
    assert out.returncode == 0, out.stdout + out.stderr  # exit 0 only when the final loss is below the first
    assert "step   40/40" in out.stdout and "samples/s" in out.stdout and "memory on neuron" in out.stdout
