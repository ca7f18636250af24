"""Ops whose only PyTorch kernel is CUDA's. ATen calls some of them for PrivateUse1 tensors too (the fused RNN
cells): those run on neuron. Every other one fails with a NotImplementedError that names the op and the
neuron device, never the dispatcher's "Could not run ... with arguments from the 'CPU' backend".

The list is not kept by hand: it is read from ATen's own dispatch table (native_functions.yaml, shipped with
torch as torchgen/packaged), every op whose dispatch names CUDA and none of CPU or a composite kernel."""

from pathlib import Path

import pytest
import torch
import torchgen
import yaml

IMPLEMENTED = {  # reached from nn.LSTM / nn.GRU / nn.LSTMCell / nn.GRUCell on PrivateUse1 tensors
    "_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_gru_cell",
    "_thnn_fused_gru_cell_backward",
    "record_stream",  # the caching allocator's (csrc/aten/native/Minimal.cpp)
    # nn.SyncBatchNorm's (torchneuron/distributed/sync_batch_norm.py, tests/distributed/test_sync_batch_norm.py)
    "batch_norm_stats", "batch_norm_elemt", "batch_norm_gather_stats_with_counts", "batch_norm_backward_reduce",
    "batch_norm_backward_elemt", "batch_norm_gather_stats",
}
_HOST_KEYS = ("CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd",
              "CompositeExplicitAutogradNonFunctional")


def cuda_only_ops() -> list[str]:
    table = Path(torchgen.__file__).parent / "packaged" / "ATen" / "native" / "native_functions.yaml"
    out = []
    for entry in yaml.safe_load(table.read_text()):
        keys = {k.strip() for spec in entry.get("dispatch", {}) for k in spec.split(",")}
        if "CUDA" in keys and not keys & set(_HOST_KEYS):
            out.append(entry["func"].split("(")[0])
    return out


def test_the_list_comes_from_aten():
    ops = cuda_only_ops()
    assert len(ops) > 60 and "_thnn_fused_lstm_cell" in ops and "cudnn_convolution" in ops
    assert IMPLEMENTED <= {op.split(".")[0] for op in ops}


@pytest.mark.parametrize("op", cuda_only_ops())
def test_every_cuda_only_op_runs_or_is_refused_by_name(op):
    name = "aten::" + op
    if op.split(".")[0] in IMPLEMENTED:
        assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"), op
    else:
        # No neuron kernel and no CPU kernel: the boxed host kernel is what runs, and it refuses by name.
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(name, "PrivateUse1"), op
        assert not torch._C._dispatch_has_computed_kernel_for_dispatch_key(name, "CPU"), op


@pytest.mark.parametrize("call", [
    lambda x: torch._fused_dropout(x, 0.5),
    lambda x: torch._masked_scale(x, x > 0, 2.0),
    lambda x: torch.ops.aten.mm.dtype(x, x, torch.float32),
    lambda x: torch.ops.aten._conv_depthwise2d(x[None, None], x[None, None], [2, 2], None, [1, 1], [0, 0],
                                               [1, 1]),
], ids=["_fused_dropout", "_masked_scale", "mm.dtype", "_conv_depthwise2d"])
def test_refusal_names_the_op_the_device_and_the_inputs(call):
    x = torch.randn(4, 4, device="neuron")
    with pytest.raises(NotImplementedError) as err:
        call(x)
    msg = str(err.value)
    assert "is not supported on the neuron device" in msg and "only for GPU backends" in msg, msg
    assert "neuron:0 Float [" in msg and "'CPU' backend" not in msg, msg
    assert torch.neuron.is_available() and (x + 1).device.type == "neuron"  # the device stays usable


def test_an_op_with_sparse_kernels_only_says_so():
    x = torch.randn(3, 3, device="neuron")
    with pytest.raises(NotImplementedError, match=r"aten::_sparse_sum_backward.*only for SparseCPU tensors"):
        torch.ops.aten._sparse_sum_backward(x, x, [0])
