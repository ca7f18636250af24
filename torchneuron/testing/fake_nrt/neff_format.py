"""The contract fake's NEFF: the file its ``neuronx-cc`` writes and its libnrt loads.

A real NEFF is AWS's binary format; the fake only has to carry what its runtime needs and check what libnrt
checks at ``nrt_load`` (a format version, the target, the logical-core config). Layout: text header lines,
``end``, then the StableHLO module the program was compiled from::

    FAKE-NEFF 1
    target trn2
    lnc 2
    opt 1
    tensor input input0 f32 10 48 2 4 3      (usage, name, element type, NRT dtype, bytes, ndim, dims...)
    tensor output output0 f32 10 24 2 3 2
    end
    module { func.func @main(...) ... }

Standard library only: the fake compiler runs without torch. Its tensors are named ``input<i>`` and
``output<i>`` in ``@main``'s argument and result order.
"""

from __future__ import annotations

from dataclasses import dataclass

if __package__:  # inside the package
    from torchneuron.compiler.stablehlo_signature import Signature, TensorType, parse
else:  # the fake compiler's copies, side by side (importing torchneuron would import torch: seconds per call)
    from stablehlo_signature import Signature, TensorType, parse  # type: ignore[no-redef]

MAGIC = "FAKE-NEFF"
VERSION = 1


@dataclass(frozen=True)
class Neff:
    target: str
    lnc: int
    opt_level: int
    signature: Signature
    stablehlo: str


def _line(usage: str, index: int, t: TensorType) -> str:
    return " ".join(["tensor", usage, f"{usage}{index}", t.element, str(t.nrt_dtype), str(t.nbytes),
                     str(len(t.shape)), *map(str, t.shape)])


def write(stablehlo: str, *, target: str, lnc: int, opt_level: int, version: int = VERSION) -> bytes:
    sig = parse(stablehlo)
    lines = [f"{MAGIC} {version}", f"target {target}", f"lnc {lnc}", f"opt {opt_level}"]
    lines += [_line("input", i, t) for i, t in enumerate(sig.inputs)]
    lines += [_line("output", i, t) for i, t in enumerate(sig.outputs)]
    lines.append("end")
    return ("\n".join(lines) + "\n" + stablehlo).encode()


def read(blob: bytes) -> Neff:
    text = blob.decode()
    header, sep, body = text.partition("\nend\n")
    if not sep or not header.startswith(MAGIC + " "):
        raise ValueError("not a fake NEFF")
    fields = dict(line.split(" ", 1) for line in header.splitlines()[1:] if not line.startswith("tensor "))
    return Neff(fields["target"], int(fields["lnc"]), int(fields["opt"]), parse(body), body)
