"""FSDP2 (fully_shard) on neuron: training matches one process; the mixed-precision policy computes in bf16
and reduces in fp32; torch.distributed.checkpoint saves (atomically: save_atomic) and reloads the sharded
model."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from _report import run_job
from _training import assert_same_params, batches, model, shard, train
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor

from torchneuron.distributed.checkpoint import save_atomic


def sharded(m, mesh, mp=None):
    kw = {"mesh": mesh} | ({"mp_policy": mp} if mp else {})
    for block in m.blocks:
        fully_shard(block, **kw)
    fully_shard(m, **kw)
    return m


def full(p):
    return p.full_tensor() if isinstance(p, DTensor) else p


def fsdp_matches_single_process(mesh):
    ref = model()
    fsdp = sharded(copy.deepcopy(ref), mesh)
    p = fsdp.blocks[0].qkv.weight
    assert isinstance(p, DTensor) and p.to_local().shape[0] == ref.blocks[0].qkv.weight.shape[0] // mesh.size()
    assert p.to_local().device.type == "neuron"
    data = batches(3)
    train(ref, data)
    train(fsdp, data, step_batches=lambda b: [shard(b)])
    assert_same_params(fsdp, ref, full=full)


def fsdp_mixed_precision(mesh):
    ref = model()
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    fsdp = sharded(copy.deepcopy(ref), mesh, mp)
    seen = []
    fsdp.blocks[0].qkv.register_forward_pre_hook(lambda mod, args: seen.append((mod.weight.dtype, args[0].dtype)))
    data = batches(4)
    ref_losses = train(ref, data)
    losses = train(fsdp, data, step_batches=lambda b: [shard(b)])
    assert seen and all(s == (torch.bfloat16, torch.bfloat16) for s in seen), seen
    assert fsdp.blocks[0].qkv.weight.dtype == torch.float32  # sharded master weights stay fp32
    # bf16 compute: same trajectory as fp32 training to bf16 precision
    local = [ref_losses[i] for i in range(len(ref_losses))]
    assert all(abs(a - b) < 0.05 * abs(b) + 0.05 for a, b in zip(losses, local)), (losses, local)
    assert_same_params(fsdp, ref, atol=3e-2, rtol=3e-2, full=full)


def checkpoint_round_trip(mesh):
    path = Path(os.environ["WORKER_OUT"]) / "ckpt"
    src = sharded(model(seed=5), mesh)
    opt = torch.optim.AdamW(src.parameters(), lr=1e-2)
    train(src, batches(1), step_batches=lambda b: [shard(b)], opt=opt)
    msd, osd = get_state_dict(src, opt)
    save_atomic({"model": msd, "optim": osd}, path)  # dcp.save into a staging directory, renamed on success
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith("ckpt")) == ["ckpt"]
    dst = sharded(model(seed=6), mesh)
    dst_opt = torch.optim.AdamW(dst.parameters(), lr=1e-2)
    train(dst, batches(1, seed=9), step_batches=lambda b: [shard(b)], opt=dst_opt)  # optimizer state exists
    msd2, osd2 = get_state_dict(dst, dst_opt)
    state = {"model": msd2, "optim": osd2}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(dst, dst_opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    assert_same_params(dst, src, atol=0, rtol=0, full=full)
    # the optimizer continues identically from the loaded state
    more = batches(1, seed=11)
    train(src, more, step_batches=lambda b: [shard(b)], opt=opt)
    train(dst, more, step_batches=lambda b: [shard(b)], opt=dst_opt)
    assert_same_params(dst, src, atol=1e-6, rtol=1e-5, full=full)
    assert any(f.suffix == ".distcp" for f in path.iterdir())


def main() -> None:
    run_job("neuron", [("fsdp2 matches single process", fsdp_matches_single_process),
                       ("fsdp2 mixed precision", fsdp_mixed_precision), ("dcp round trip", checkpoint_round_trip)],
            setup=lambda: (init_device_mesh("neuron", (dist.get_world_size(),)),))


if __name__ == "__main__":
    main()
