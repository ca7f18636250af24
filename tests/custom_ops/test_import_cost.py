"""The custom-op layer loads only when used: importing torchneuron, or compiling a graph without NKI ops,
does not load the NKI simulator."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys, torch, torchneuron
assert callable(torchneuron.nki_op)
loaded = [m for m in ("torchneuron.nki", "torchneuron.custom_ops.op", "nki_ops") if m in sys.modules]
print(",".join(loaded))
"""


def _loaded(body: str) -> str:
    out = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""


def test_import_torch_loads_no_nki_code():
    assert _loaded("import sys, torch, torchneuron\nprint(','.join(m for m in ('torchneuron.nki', "
                   "'torchneuron.custom_ops', 'nki_ops') if m in sys.modules))") == ""


def test_touching_nki_op_loads_the_simulator():
    assert "torchneuron.nki" in _loaded(SCRIPT)


def test_compiling_a_graph_without_nki_ops_does_not_load_the_simulator():
    body = ("import sys, torch, torchneuron\n"
            "f = torch.compile(lambda x: x.exp() + 1, backend='neuron')\n"
            "f(torch.ones(3, device='neuron'))\n"
            "print(','.join(m for m in ('torchneuron.nki', 'torchneuron.custom_ops.op') if m in sys.modules))")
    assert _loaded(body) == ""
