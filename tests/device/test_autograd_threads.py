"""Where a neuron backward runs. By default on the calling thread, as a CPU backward does
(torchneuron/device/_backward_thread.py); with TORCHNEURON_BACKWARD_THREAD=device in autograd's device thread,
whose host kernels then run without a second OpenMP team (see HostThreads.cpp)."""

import os
import subprocess
import sys

import threading

import pytest
import torch

import torchneuron
from tests.helpers import run_python

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
    out = run_python(SCRIPT, timeout=120, TORCHNEURON_BACKWARD_THREAD="device", TORCHNEURON_AUTOGRAD_THREADS=setting)
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
    env = dict(os.environ, TORCHNEURON_BACKWARD_THREAD="device")
    procs = [subprocess.Popen([sys.executable, "-c", EXIT_SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(12)]
    results = [(p.wait(timeout=180), p.stderr.read()) for p in procs]
    aborted = [err for code, err in results if code != 0]
    assert not aborted, aborted[0]


def _backward_thread_of_neuron_node() -> int:
    x = torch.randn(4, 4, device="neuron", requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(threading.get_ident()))
    (y * 3).sum().backward()
    return seen[0]


def test_backward_runs_on_the_calling_thread_by_default():
    """The importing thread runs neuron backward nodes itself, with PyTorch's intra-op threads, like CPU."""
    assert not torch.autograd.is_multithreading_enabled()
    assert _backward_thread_of_neuron_node() == threading.get_ident()


def test_other_threads_opt_in_with_backward_on_caller():
    seen = {}

    def worker():
        seen["default"] = _backward_thread_of_neuron_node() == threading.get_ident()
        torchneuron.backward_on_caller()
        seen["opted_in"] = _backward_thread_of_neuron_node() == threading.get_ident()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == {"default": False, "opted_in": True}


def test_device_setting_keeps_pytorchs_device_thread():
    script = ("import threading, torch, torchneuron\n"
              "x = torch.randn(4, device='neuron', requires_grad=True); y = x * 2; seen = []\n"
              "y.register_hook(lambda g: seen.append(threading.get_ident()))\n"
              "(y * 3).sum().backward()\n"
              "print(torch.autograd.is_multithreading_enabled(), seen[0] == threading.get_ident())\n")
    out = run_python(script, timeout=120, TORCHNEURON_BACKWARD_THREAD="device")
    assert out.stdout.split() == ["True", "False"]


def test_unknown_setting_is_refused():
    out = run_python("import torch", timeout=120, check=False, TORCHNEURON_BACKWARD_THREAD="sideways")
    assert out.returncode != 0
    assert "TORCHNEURON_BACKWARD_THREAD='sideways'" in out.stderr
