"""float64 on neuron: the one rule both eager executors follow, and the table it reads.

NeuronCores have no float64 arithmetic, so an eager op that computes on float64 neuron tensors runs in float32
and its float64 results are stored back as float64 (float32 precision), as on a Trn host. Ops that only
move, select or materialise data are exempt: a NeuronCore moves float64 bytes untouched (DMA copies are
bit-exact whatever the dtype), so converting their arguments would lose bits the hardware keeps.

The rule is applied in one place, the device layer's boxed host kernel (``csrc/aten/native/Fp64Emulation.cpp``),
in front of whichever executor runs the op: the host kernel (the default) or the lowered-eager executor
(``TORCHNEURON_EAGER=lowered``, ``programs/strict_eager.py``), so the two modes give the same bits. This module
owns the table and the mode and hands both to it at import; compiled graphs (``dynamo/fx_passes.py``) read
the mode from here too.
"""

from __future__ import annotations

import functools
import warnings

from torchneuron import _env

EMULATE, NATIVE = "emulate", "native"

# By name (every overload) or as "name.overload" (that overload only).
DATA_MOVEMENT_OPS: frozenset[str] = frozenset({
    # copies and materialised views
    "aten::_to_copy", "aten::copy_", "aten::_copy_from", "aten::_copy_from_and_resize", "aten::clone",
    "aten::narrow_copy", "aten::as_strided_copy", "aten::unfold_copy", "aten::expand_copy", "aten::permute_copy",
    "aten::transpose_copy", "aten::view_copy", "aten::t_copy", "aten::diagonal_copy", "aten::squeeze_copy",
    "aten::unsqueeze_copy", "aten::split_copy", "aten::unbind_copy", "aten::alias_copy", "aten::detach_copy",
    "aten::_reshape_alias_copy", "aten::lift", "aten::lift_fresh", "aten::lift_fresh_copy", "aten::_unsafe_view",
    "aten::resolve_conj", "aten::resolve_neg", "aten::unfold", "aten::_pin_memory",
    # joining, reordering and repeating
    "aten::cat", "aten::stack", "aten::flip", "aten::roll", "aten::repeat", "aten::repeat_interleave",
    "aten::tril", "aten::triu", "aten::diag_embed", "aten::im2col", "aten::pixel_shuffle", "aten::pixel_unshuffle",
    "aten::channel_shuffle", "aten::native_channel_shuffle", "aten::complex", "aten::view_as_real",
    "aten::view_as_complex",
    # padding
    "aten::constant_pad_nd", "aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d",
    "aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d",
    # selecting and placing
    "aten::index", "aten::index_select", "aten::gather", "aten::take", "aten::put", "aten::put_",
    "aten::index_put", "aten::index_put_", "aten::_index_put_impl_", "aten::_unsafe_index",
    "aten::_unsafe_index_put", "aten::index_copy", "aten::index_copy_", "aten::index_fill", "aten::index_fill_",
    "aten::masked_fill", "aten::masked_fill_", "aten::masked_scatter", "aten::masked_scatter_",
    "aten::masked_select", "aten::where", "aten::nonzero", "aten::nonzero_static", "aten::argwhere",
    "aten::slice_scatter", "aten::select_scatter", "aten::diagonal_scatter", "aten::as_strided_scatter",
    # scatter without a reduction only places values
    "aten::scatter.src", "aten::scatter.value", "aten::scatter_.src", "aten::scatter_.value",
    "aten::scatter.src_out", "aten::scatter.value_out",
    # filling and allocating
    "aten::fill", "aten::fill_", "aten::zero_", "aten::zeros_like", "aten::ones_like", "aten::empty_like",
    "aten::full_like", "aten::new_empty", "aten::new_empty_strided", "aten::new_zeros", "aten::new_ones",
    "aten::new_full",
    # storage and metadata
    "aten::resize_", "aten::resize_as_", "aten::set_", "aten::is_same_size", "aten::record_stream",
    "aten::_local_scalar_dense",
})


@functools.cache
def mode() -> str:
    """``emulate`` (the default) or ``native``: ``TORCHNEURON_FP64``, read once per process."""
    value = _env.get(_env.FP64).strip().lower()
    if value in ("", EMULATE):
        return EMULATE
    if value == NATIVE:
        return NATIVE
    warnings.warn(f"{_env.FP64}={value!r} is not 'emulate' or 'native'; using 'emulate' (float64 computed in "
                  "float32, as on NeuronCores)", stacklevel=2)
    return EMULATE


def emulated() -> bool:
    return mode() == EMULATE


def is_exempt(op: str) -> bool:
    """Whether ``op`` ("aten::cat.default", "aten::scatter.src") keeps its float64 arguments as they are."""
    name, _, overload = op.partition(".")
    return name in DATA_MOVEMENT_OPS or (bool(overload) and op in DATA_MOVEMENT_OPS)


def configure(C) -> None:
    """Hand the rule to the device layer (at import, before any op runs)."""
    C._set_fp64_rule(emulated(), sorted(DATA_MOVEMENT_OPS))
