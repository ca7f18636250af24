"""Neuron decompositions: FFT and complex-construction ops torch-mlir has no StableHLO lowering for.

What torch-mlir's StableHLO path can do with complex tensors (probed on this build): complex arguments and
results, data movement (reshape, permute, slice, cat, where), ``neg``, ``mm``/``bmm`` (complex
``dot_general``), ``polar`` (the only op that builds a complex value from reals: ``stablehlo.complex``) and
``_to_copy`` to a real dtype (``stablehlo.convert``: the real part). Complex elementwise arithmetic, reductions,
``complex``, ``view_as_real``/``view_as_complex``, ``real``/``imag`` and real→complex casts do not lower.

So complex values are built and taken apart with those pieces only (see ``_complex`` / ``_view_as_real``);
complex ``mul``/``add``/``sub``/``div`` and ``abs`` become real arithmetic on the parts, and every DFT is a
complex matrix product with a twiddle matrix built in the graph (sizes are static). A matmul DFT costs O(n²) instead
of O(n log n), but it is one ``dot_general`` per transformed dimension — the
shape TensorEngine is built for — and its float32 error stays ~sqrt(n)·eps·|x|.

Known limit: building a complex value multiplies each part by 0 (``polar(x, 0)``, ``x·i``), so a non-finite
real or imaginary part turns the other part into NaN.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .complex_arith import _complex_add, _complex_div, _complex_mul, _complex_sub, _prims_binary
from .complex_parts import _abs, _complex_op, _conj_physical, _polar, _prims_abs, _view_as_complex, _view_as_real
from .dft import _fft_c2c, _fft_c2r, _fft_r2c

aten = torch.ops.aten


def table() -> dict[torch._ops.OperatorBase, Callable]:
    return {
        aten._fft_c2c.default: _fft_c2c,
        aten._fft_r2c.default: _fft_r2c,
        aten._fft_c2r.default: _fft_c2r,
        aten.complex.default: _complex_op,
        aten.polar.default: _polar,
        aten._conj_physical.default: _conj_physical,
        # the lazy-conjugation view (compiled graphs keep it): in a value-semantic program, a conjugated copy
        aten._conj.default: _conj_physical,
        aten.abs.default: _abs,
        # decompositions.py maps prims.abs back to aten.abs only when aten.abs has no entry of its own (to
        # avoid loops); _abs never produces prims.abs, so keep that mapping here
        torch.ops.prims.abs.default: _prims_abs,
        aten.view_as_real.default: _view_as_real,
        aten.view_as_complex.default: _view_as_complex,
        # complex operands only (real ones return NotImplemented and lower as they are); the prims entries
        # are decompositions.py's own prims → ATen mappings, which it skips for ops that have an entry here
        aten.mul.Tensor: _complex_mul,
        aten.add.Tensor: _complex_add,
        aten.sub.Tensor: _complex_sub,
        aten.div.Tensor: _complex_div,
        torch.ops.prims.mul.default: _prims_binary(aten.mul.Tensor),
        torch.ops.prims.add.default: _prims_binary(aten.add.Tensor),
        torch.ops.prims.sub.default: _prims_binary(aten.sub.Tensor),
        torch.ops.prims.div.default: _prims_binary(aten.div.Tensor),
    }
