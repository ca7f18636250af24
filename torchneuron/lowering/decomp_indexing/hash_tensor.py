"""hash_tensor (mode 0) with float64 bit patterns built from integer ops."""

from __future__ import annotations

import torch


def _float64_bits(x):
    """The IEEE float64 bit pattern (as int64) of each element of a float tensor of at most 32 bits, built
    from its float32 bits with integer ops (float64 itself is emulated as float32 on this path): rebias the
    exponent, widen the mantissa, normalise float32 subnormals (all normal in float64), keep inf/NaN.
    Shift and mask amounts are tensors: torch-mlir lowers only the Tensor-Tensor bitwise forms."""
    b = x.to(torch.float32).view(torch.int32).to(torch.int64)

    def k(v):
        return torch.full_like(b, v)

    b = torch.bitwise_and(b, k(0xFFFFFFFF))
    sign = torch.bitwise_right_shift(b, k(31))
    exp = torch.bitwise_and(torch.bitwise_right_shift(b, k(23)), k(0xFF))
    man = torch.bitwise_and(b, k(0x7FFFFF))
    top = torch.zeros_like(man)  # index of a subnormal mantissa's highest set bit
    for bit in range(1, 23):
        top = top + (man >= (1 << bit)).to(torch.int64)
    sub_man = torch.bitwise_left_shift(man - torch.bitwise_left_shift(k(1), top), k(52) - top)
    is_zero = (exp == 0) & (man == 0)
    exp64 = torch.where(exp == 255, k(2047), torch.where(exp == 0, top - 149 + 1023, exp - 127 + 1023))
    exp64 = torch.where(is_zero, k(0), exp64)
    man64 = torch.where(exp == 0, sub_man, torch.bitwise_left_shift(man, k(29)))
    man64 = torch.where(is_zero, k(0), man64)
    return torch.bitwise_or(torch.bitwise_or(torch.bitwise_left_shift(sign, k(63)),
                                             torch.bitwise_left_shift(exp64, k(52))), man64)


def _hash_tensor(self, dim=(), *, keepdim=False, mode=0):
    """hash_tensor (mode 0): xor of the elements' 64-bit patterns (floats as float64, integers as int64),
    over ``dim`` (all dims when empty), by pairwise xor halving; computed in int64 and returned as uint64
    (same bits)."""
    if mode != 0:
        return NotImplemented
    bits = _float64_bits(self) if self.is_floating_point() else self.to(torch.int64)
    nd = self.dim()
    dims = sorted({d % max(nd, 1) for d in dim}) if len(dim) else list(range(nd))
    kept = [d for d in range(nd) if d not in dims]
    x = bits.permute(kept + dims).reshape([self.shape[d] for d in kept] + [-1]) if nd else bits.reshape(1)
    while x.shape[-1] > 1:
        if x.shape[-1] % 2:
            x = torch.cat([x, torch.zeros_like(x[..., :1])], -1)
        half = x.shape[-1] // 2
        x = torch.bitwise_xor(x[..., :half], x[..., half:])
    out = x[..., 0] if x.shape[-1] == 1 else torch.zeros(x.shape[:-1], dtype=torch.int64, device=x.device)
    if keepdim:
        out = out.reshape([1 if d in dims else self.shape[d] for d in range(nd)])
    return out.to(torch.uint64)
