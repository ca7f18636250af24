"""The custom-op layer loads only when used: importing torchneuron, or compiling a graph without NKI ops,
does not load the NKI simulator; touching `torchneuron.nki_op` does. One fresh interpreter checks all three."""

from __future__ import annotations

from tests.helpers import run_python

SCRIPT = """
import sys, torch, torchneuron
NKI = ("torchneuron.nki", "torchneuron.custom_ops.op", "nki_ops")
def loaded():
    return ",".join(m for m in NKI if m in sys.modules) or "-"
print(loaded())
f = torch.compile(lambda x: x.exp() + 1, backend="neuron")
f(torch.ones(3, device="neuron"))
print(loaded())
assert callable(torchneuron.nki_op)
print(loaded())
"""


def test_the_simulator_loads_only_for_nki_code():
    out = run_python(SCRIPT)
    after_import, after_compile, after_nki_op = out.stdout.split()[-3:]
    assert after_import == "-"
    assert after_compile == "-"
    assert "torchneuron.nki" in after_nki_op.split(",")
