"""Every skip, expected failure and tolerance change of the OpInfo conformance suite, with its reason.

The one table both the pytest suite and report.py read. Keys are (op, kind, dtype): op is op_db's
name[.variant], kind one of harness.KINDS or "*", dtype a torch.dtype or None for every dtype.
An XFAIL entry whose samples all pass makes the pytest suite fail ("stale entry"), so the table cannot rot.
"""

from __future__ import annotations

import torch

ANY = None

# (op, kind, dtype) -> reason. Skipped outright (not run).
SKIP: dict[tuple[str, str, torch.dtype | None], str] = {}

# Ops whose values are unspecified (uninitialised memory): only shape, dtype and device are compared.
METADATA_ONLY: dict[str, str] = {
    name: "returns uninitialised memory: values are unspecified on every device"
    for name in ("empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted")
}

# op -> reason. Ops that currently kill the process. report.py runs them in a worker and counts them as
# failed; the pytest suite skips them so one crash does not end the run.
# Empty since conjugate/negative copies were fixed in the C++ core (csrc/aten/RegisterMinimal.cpp).
CRASH: dict[str, str] = {}

# (op, kind, dtype) -> reason. Run and counted; failing samples are expected.
_SPARSE = ("sparse layouts: neuron registers no SparsePrivateUse1/SparseCsrPrivateUse1 kernels (Trainium has no "
           "sparse formats)")
XFAIL: dict[tuple[str, str, torch.dtype | None], str] = {
    ("sparse.sampled_addmm", "*", ANY): _SPARSE,
    ("sparse.mm.reduce", "*", ANY): _SPARSE,
    ("to_sparse", "*", ANY): _SPARSE,
    ("fft.ihfftn", "out", ANY): (
        "PyTorch bug, not neuron's: with one transformed dim, fft_ihfftn.out never writes out (its result goes "
        "through conj_physical_out and is dropped), so CPU and neuron both return a presized out's "
        "uninitialised memory, which cannot compare equal"
    ),
    ("nn.functional.linear_cross_entropy.chunked", "*", torch.bfloat16): (
        "on non-CPU devices ATen's chunked linear_cross_entropy accumulates per chunk in bf16; the CPU path "
        "does not chunk, so bf16 losses differ by several ulps"
    ),
    ("nn.functional.linear_cross_entropy.chunked_none", "*", torch.bfloat16): (
        "on non-CPU devices ATen's chunked linear_cross_entropy accumulates per chunk in bf16; the CPU path "
        "does not chunk, so bf16 losses differ by several ulps"
    ),
}

# float64 is computed in float32 on neuron (the Trainium rule, csrc/aten/native/Fp64Emulation.cpp) while
# the reference is the CPU's float64: these float64 samples fail for that reason alone.
_FP64_RANDOM = (
    "float64 random ops draw float32 samples on neuron (float64 computed in float32); the CPU draws float64 "
    "samples from the same seed, so the streams differ"
)
_FP64_PRECISION = (
    "float64 computed in float32 (the Trainium rule): ill-conditioned or iterative, the result is within "
    "float32 precision of the CPU's float64 answer but not within 2e-5"
)
for _op, _kinds in {
    "bernoulli": ("sample", "noncontig", "out"), "normal": ("sample", "noncontig", "out"),
    "normal.in_place": ("sample", "noncontig", "inplace"), "uniform": ("sample", "noncontig", "inplace"),
    "randn": ("sample", "noncontig", "out"), "randn_like": ("sample", "noncontig"),
    "rand_like": ("sample", "noncontig"),
    "nn.functional.fractional_max_pool2d": ("sample", "noncontig", "grad"),
    "nn.functional.fractional_max_pool3d": ("sample", "noncontig", "grad"),
}.items():
    for _kind in _kinds:
        XFAIL[(_op, _kind, torch.float64)] = _FP64_RANDOM
for _op, _kinds in {
    "cov": ("grad",), "digamma": ("grad",), "grid_sampler_2d": ("grad",), "grid_sampler_3d": ("grad",),
    "linalg.eigh": ("out",), "linalg.householder_product": ("grad",),
    "linalg.pinv.singular": ("sample", "noncontig", "grad"), "linalg.svd": ("out", "grad"), "svd": ("out", "grad"),
    "logcumsumexp": ("grad",), "matrix_exp": ("sample", "noncontig"), "nn.functional.ctc_loss": ("grad",),
}.items():
    for _kind in _kinds:
        XFAIL[(_op, _kind, torch.float64)] = _FP64_PRECISION

# (op, kind, dtype) -> reason. Expected failures that depend on the random sample values (float64 in
# float32 near a pole or cancellation): counted as known when they fail, never reported stale when a run's
# samples happen to pass (the pytest suite and report.py draw different samples).
SAMPLE_DEPENDENT: dict[tuple[str, str, torch.dtype | None], str] = {}
for _op, _kinds in {
    "special.polygamma.special_polygamma_n_0": ("sample", "noncontig", "out"),
    **{f"polygamma.polygamma_n_{n}": ("sample", "noncontig", "out", "inplace") for n in range(5)},
    "nn.functional.multi_head_attention_forward": ("sample", "noncontig"),
    "nn.functional.scaled_dot_product_attention": ("noncontig", "grad"),
    "linalg.eig": ("out",),
    "linalg.lstsq": ("grad",), "linalg.lstsq.grad_oriented": ("grad",),
}.items():
    for _kind in _kinds:
        SAMPLE_DEPENDENT[(_op, _kind, torch.float64)] = _FP64_PRECISION
# float_power computes in float64 whatever its inputs; its gradient sums float64 products over the
# broadcast dimensions, which neuron computes in float32, so cancellation there leaves float32 rounding.
for _dtype in (torch.float32, torch.float64):
    SAMPLE_DEPENDENT[("float_power", "grad", _dtype)] = _FP64_PRECISION

# float16 goes the bf16 way where ATen's generic decompositions run (chunked linear_cross_entropy).
for _op, _kinds in {
    "nn.functional.linear_cross_entropy.chunked": ("sample", "noncontig", "grad"),
    "nn.functional.linear_cross_entropy.chunked_none": ("sample", "noncontig", "grad"),
}.items():
    for _kind in _kinds:
        XFAIL[(_op, _kind, torch.float16)] = (
            "fp16 through ATen's generic decomposition on neuron (chunked linear_cross_entropy) vs the CPU's "
            "fused fp32-accumulating kernel: fp16 rounding differs"
        )
XFAIL[("nn.functional.mish", "grad", torch.float16)] = (
    "fp16 mish backward: one element differs by one fp16 ulp beyond tolerance (composite backward on neuron)"
)

# (op, dtype) -> (rtol, atol, reason): where neuron legitimately computes differently from the CPU.
TOLERANCE: dict[tuple[str, torch.dtype | None], tuple[float, float, str]] = {
}


def _lookup(table: dict, op: str, kind: str, dtype: torch.dtype):
    for key in ((op, kind, dtype), (op, kind, ANY), (op, "*", dtype), (op, "*", ANY)):
        if key in table:
            return table[key]
    return None


def skip_reason(op: str, kind: str, dtype: torch.dtype) -> str | None:
    return _lookup(SKIP, op, kind, dtype)


def crash_reason(op: str) -> str | None:
    return CRASH.get(op)


def xfail_reason(op: str, kind: str, dtype: torch.dtype) -> str | None:
    return _lookup(XFAIL, op, kind, dtype) or _lookup(SAMPLE_DEPENDENT, op, kind, dtype)


def may_pass(op: str, kind: str, dtype: torch.dtype) -> bool:
    """Whether an expected failure may pass on other samples (no stale-entry error then)."""
    return _lookup(XFAIL, op, kind, dtype) is None and _lookup(SAMPLE_DEPENDENT, op, kind, dtype) is not None


def tolerance(op: str, dtype: torch.dtype) -> tuple[float, float] | None:
    entry = TOLERANCE.get((op, dtype)) or TOLERANCE.get((op, ANY))
    return None if entry is None else entry[:2]
