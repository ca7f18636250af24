"""The argument and result types of a StableHLO module's ``@main``: what a NEFF built from it takes and returns.

A NEFF's own tensor table (``nrt_get_model_tensor_info``) gives sizes and NRT dtypes, which cannot tell a
bool from a uint8; the module says exactly. Used to preallocate a program's outputs on the device and to
check its inputs, and by the contract fake's compiler to describe the NEFFs it writes. Standard library only
(the fake compiler runs it without torch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# element type -> (bytes per element, NRT dtype code of nrt.h's nrt_dtype_t; 0 when NRT has none)
ELEMENTS: dict[str, tuple[int, int]] = {
    "f32": (4, 0xA), "f16": (2, 0x7), "bf16": (2, 0x6), "f64": (8, 0),
    "i1": (1, 0x3), "i8": (1, 0x2), "i16": (2, 0x4), "i32": (4, 0x8), "i64": (8, 0xC),
    "ui8": (1, 0x3), "ui16": (2, 0x5), "ui32": (4, 0x9), "ui64": (8, 0x1),
    "f8E4M3FN": (1, 0xE), "f8E5M2": (1, 0xF),
    "complex<f32>": (8, 0), "complex<f64>": (16, 0),
}


class SignatureError(ValueError):
    pass


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    element: str

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * ELEMENTS[self.element][0]

    @property
    def nrt_dtype(self) -> int:
        return ELEMENTS[self.element][1]


@dataclass(frozen=True)
class Signature:
    inputs: tuple[TensorType, ...]
    outputs: tuple[TensorType, ...]


def _matching(text: str, start: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``start`` (string literals skipped)."""
    depth, i, n = 0, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise SignatureError(f"unbalanced {open_}{close} in the module")


def _tensor_types(segment: str) -> list[TensorType]:
    out = []
    for m in re.finditer(r"tensor<", segment):
        end = _matching(segment, m.end() - 1, "<", ">")
        out.append(_parse_type(segment[m.end():end]))
    return out


def _parse_type(body: str) -> TensorType:
    """``4x3xf32`` / ``f32`` / ``2xcomplex<f32>`` -> TensorType."""
    parts = re.match(r"((?:[0-9?]+x)*)(.+)$", body.strip())
    if parts is None:
        raise SignatureError(f"cannot read tensor<{body}>")
    dims, element = parts.group(1), parts.group(2).strip()
    if "?" in dims:
        raise SignatureError(f"tensor<{body}> has a dynamic dimension; NEFFs are static-shape")
    if element not in ELEMENTS:
        raise SignatureError(f"tensor<{body}>: element type {element} has no NeuronCore storage type")
    return TensorType(tuple(int(d) for d in dims.split("x") if d), element)


def parse(stablehlo: str) -> Signature:
    m = re.search(r"func\.func\s+(?:public\s+)?@main\s*\(", stablehlo)
    if m is None:
        raise SignatureError("the module has no func.func @main")
    close = _matching(stablehlo, m.end() - 1, "(", ")")
    inputs = _tensor_types(stablehlo[m.end():close])
    rest = stablehlo[close + 1:].lstrip()
    outputs: list[TensorType] = []
    if rest.startswith("->"):
        rest = rest[2:].lstrip()
        if rest.startswith("("):
            outputs = _tensor_types(rest[:_matching(rest, 0, "(", ")") + 1])
        else:
            t = re.match(r"tensor<", rest)
            if t is None:
                raise SignatureError("@main returns something other than tensors")
            outputs = _tensor_types(rest[:_matching(rest, t.end() - 1, "<", ">") + 1])
    return Signature(tuple(inputs), tuple(outputs))
