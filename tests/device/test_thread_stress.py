"""Several Python threads on one neuron device at once, as servers, threaded data preparation and the autograd
device thread use it. PyTorch releases the GIL around every op and copy, so the threads really meet in the
runtime: its stream queues, allocator and host-alias caches, and compiled programs built at call time. The work
runs in a child process under a watchdog (faulthandler prints every thread's stack and exits non-zero), so a
deadlock fails the test instead of hanging CI. Not timed: fixed iteration counts, every result compared with the CPU."""

from __future__ import annotations

from tests.helpers import run_python

WATCHDOG_S = 240

SCRIPT = """
import faulthandler, threading
import torch

faulthandler.dump_traceback_later({watchdog}, exit=True)
THREADS = 4
dev = torch.device("neuron:0")

@torch.compile(backend="neuron")
def compiled(x, w):
    return torch.tanh(x @ w) * 2

def copies(k):
    # Tight host<->device copies: blocking copies run inline on the calling thread while other threads'
    # submissions land on the same queue, the pattern that once let a queue's completed count run backwards.
    a = torch.randn(64, generator=torch.Generator().manual_seed(k))
    side = torch.neuron.Stream() if k % 2 else torch.neuron.current_stream()
    with torch.neuron.stream(side):
        for i in range({copy_iters}):
            y = (a.to(dev, non_blocking=bool(i % 2)) + 1).cpu()
            if not torch.equal(y, a + 1):
                raise AssertionError(f"iteration {{i}}: {{y[:4]}} != {{(a + 1)[:4]}}")

def mixed(k):
    # Eager ops, in-place ops, side streams and a compiled function, checked against the CPU.
    g = torch.Generator().manual_seed(100 + k)
    side = torch.neuron.Stream() if k % 2 else torch.neuron.current_stream()
    w = torch.randn(8, 8, generator=g)
    w_dev = w.to(dev)
    for i in range({mixed_iters}):
        a = torch.randn(8, 8, generator=g)
        with torch.neuron.stream(side):
            x = a.to(dev, non_blocking=True)
            torch.testing.assert_close((x + 1).mul_(0.5).sum(0).cpu(), ((a + 1) * 0.5).sum(0))
            if i % 50 == 0:
                torch.testing.assert_close(compiled(x, w_dev).cpu(), torch.tanh(a @ w) * 2)

model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).eval()
reference = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).eval()
reference.load_state_dict(model.state_dict())
served = torch.compile(model.to(dev), backend="neuron")

def serve(k):
    # A server: requests of varying sizes. A dynamic-shape graph builds a program per new size at call time,
    # tracing while the other threads run compiled code and Dynamo compiles (FX's tracer patches nn.Module
    # process-wide while it traces).
    g = torch.Generator().manual_seed(200 + k)
    for i in range({serve_iters}):
        x = torch.randn(4 + (i + k) % 5, 32, generator=g)
        with torch.inference_mode():
            y = served(x.to(dev)).cpu()
        torch.testing.assert_close(y, reference(x).detach(), rtol=1e-4, atol=1e-4)

def run(phase):
    errors = []
    def body(k):
        try:
            phase(k)
        except BaseException as e:
            errors.append(f"{{phase.__name__}} thread {{k}}: {{e!r}}")
    threads = [threading.Thread(target=body, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]

run(copies)
run(mixed)
run(serve)
torch.neuron.synchronize()
print("ok")
"""


def test_threads_share_a_device_without_deadlock():
    proc = run_python(SCRIPT.format(watchdog=WATCHDOG_S, copy_iters=150_000, mixed_iters=300,
                                           serve_iters=60),
                      timeout=WATCHDOG_S + 60, check=False)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-6000:]
