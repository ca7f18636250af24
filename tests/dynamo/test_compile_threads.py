"""torch.compile(backend="neuron") from several threads of a fresh process: a server's handler threads or
data workers each compiling their own function, the first of them together."""

from __future__ import annotations

import json

import pytest

from tests.helpers import run_python

FIRST_COMPILES_IN_THREADS = """
    {first}
    import json, threading, torch

    x = torch.randn(64, device="neuron")
    barrier = threading.Barrier({n})
    results, errors = {{}}, []

    def work(i):
        try:
            barrier.wait()  # every thread's first lookup of "neuron" at once
            f = torch.compile(lambda t: (t * (i + 1)).sin() + t, backend="neuron")
            results[i] = f(x).cpu()
        except Exception as e:
            errors.append(f"{{type(e).__name__}}: {{e}}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range({n})]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    xc = x.cpu()
    wrong = [i for i, r in results.items() if not torch.allclose(r, (xc * (i + 1)).sin() + xc, atol=1e-6)]
    print(json.dumps({{"errors": errors, "done": sorted(results), "wrong": wrong}}))
"""


@pytest.mark.parametrize("first,autoload", [("", "1"), ("import torch._dynamo; import torchneuron", "0")],
                         ids=["autoload", "dynamo_imported_before_torchneuron"])
def test_first_compiles_in_several_threads_at_once_all_succeed(first: str, autoload: str) -> None:
    code = FIRST_COMPILES_IN_THREADS.format(n=3, first=first)
    out = json.loads(run_python(code, TORCH_DEVICE_BACKEND_AUTOLOAD=autoload).stdout.strip().splitlines()[-1])
    assert out == {"errors": [], "done": [0, 1, 2], "wrong": []}


def test_other_duplicate_registrations_are_still_refused() -> None:
    """Only the neuron backend registered twice is let through: a different function claiming "neuron", or
    any duplicate of another name, fails as Dynamo makes it fail."""
    code = """
        import torch
        torch.compile(lambda t: t + 1, backend="neuron")(torch.ones(2, device="neuron"))
        from torch._dynamo.backends import registry
        same = registry.lookup_backend("inductor")
        for fn, name in ((lambda gm, inputs: gm, "neuron"), (same, "inductor")):
            try:
                registry.register_backend(compiler_fn=fn, name=name)
            except AssertionError as e:
                print(e)
    """
    assert run_python(code).stdout.strip().splitlines()[-2:] == ["duplicate name: neuron", "duplicate name: inductor"]
