"""Autograd's neuron backward thread runs host kernels without a second OpenMP team (see HostThreads.cpp)."""

import os
import subprocess
import sys

import pytest

SCRIPT = """
import torch, torchneuron
torch.set_num_threads(2)  # also what new threads start with (autograd threads call at::init_num_threads)
x = torch.randn(8, 8, device="neuron", requires_grad=True)
y = x * 2
seen = []
y.register_hook(lambda g: seen.append(torch.get_num_threads()))
(y * 3).sum().backward()
print(seen[0], torch.get_num_threads())
"""


@pytest.mark.parametrize("setting, backward_threads", [(None, 1), ("0", 2), ("2", 2)])
def test_backward_thread_intra_op_threads(setting, backward_threads):
    env = dict(os.environ)
    env.pop("TORCHNEURON_AUTOGRAD_THREADS", None)
    if setting is not None:
        env["TORCHNEURON_AUTOGRAD_THREADS"] = setting
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    in_backward, main = map(int, out.stdout.split())
    assert in_backward == backward_threads
    assert main == 2  # the calling thread keeps PyTorch's setting


EXIT_SCRIPT = """
import torch, torchneuron
x = torch.randn(8, 8, device="neuron", requires_grad=True)
(x * 3).sum().backward()
"""


def test_exit_right_after_backward_does_not_abort():
    """Without the exit flush, about one run in four aborted ("terminate called without an active
    exception") when the autograd device thread freed the last graph task during finalisation."""
    procs = [subprocess.Popen([sys.executable, "-c", EXIT_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(12)]
    results = [(p.wait(timeout=180), p.stderr.read()) for p in procs]
    aborted = [err for code, err in results if code != 0]
    assert not aborted, aborted[0]
