"""torch.save / torch.load of neuron tensors, modules and optimizer state, as with CUDA tensors."""

from __future__ import annotations

import io

import pytest
import torch
import torch.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


def test_tensor_roundtrip_keeps_device_dtype_and_values():
    for dtype in (torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.bool, torch.float8_e4m3fn):
        x = torch.arange(12).reshape(3, 4).to(dtype).to("neuron")
        y = roundtrip(x)
        assert y.device == torch.device("neuron:0") and y.dtype == dtype
        assert torch.equal(y.cpu().view(torch.uint8), x.cpu().view(torch.uint8))


def test_storages_keep_their_device_and_views_keep_sharing():
    base = torch.arange(10.0, device="neuron:1")
    loaded = roundtrip({"base": base, "view": base[3:7]})
    assert loaded["base"].device == torch.device("neuron:1")
    storage = roundtrip(base.untyped_storage())  # loads as a uint8 TypedStorage, as on the CPU and CUDA
    assert storage.device == torch.device("neuron:1")
    storage = storage.untyped()
    assert storage.nbytes() == base.untyped_storage().nbytes()
    assert torch.equal(torch.empty(0, device="neuron:1").set_(storage, 0, (10,), (1,)).cpu(), base.cpu())
    assert loaded["view"].untyped_storage().data_ptr() == loaded["base"].untyped_storage().data_ptr()
    assert loaded["view"].storage_offset() == 3
    loaded["base"][4] = -1.0  # still one storage after loading
    assert loaded["view"][1].item() == -1.0


@pytest.mark.parametrize(
    "saved_on, map_location, expect",
    [
        ("neuron:0", "cpu", "cpu"),
        ("cpu", "neuron", "neuron:0"),
        ("cpu", "neuron:2", "neuron:2"),
        ("neuron:1", {"neuron:1": "neuron:0"}, "neuron:0"),
        ("neuron:1", "neuron:0", "neuron:0"),
        ("neuron:1", torch.device("cpu"), "cpu"),
        ("neuron:1", lambda storage, loc: storage, "cpu"),  # the classic "load to CPU" idiom
        ("neuron:1", None, "neuron:1"),
    ],
)
def test_map_location(saved_on, map_location, expect):
    x = torch.randn(5).to(saved_on)
    y = roundtrip(x, map_location=map_location)
    assert y.device == torch.device(expect)
    assert torch.equal(y.cpu(), x.cpu())


def test_weights_only_load_of_neuron_tensors():
    x = torch.randn(3, device="neuron")
    y = roundtrip({"w": x}, weights_only=True)
    assert y["w"].device.type == "neuron" and torch.equal(y["w"].cpu(), x.cpu())


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.BatchNorm1d(12), torch.nn.ReLU(),
                               torch.nn.Linear(12, 3))


def test_module_state_dict_and_whole_module():
    model = _model().to("neuron")
    model(torch.randn(4, 6, device="neuron"))  # move batch-norm statistics
    state = roundtrip(model.state_dict())
    assert all(v.device.type == "neuron" for v in state.values())
    fresh = _model().to("neuron")
    fresh.load_state_dict(state)
    for (k, a), (_, b) in zip(model.state_dict().items(), fresh.state_dict().items()):
        assert torch.equal(a.cpu(), b.cpu()), k
    whole = roundtrip(model, weights_only=False)
    assert next(whole.parameters()).device.type == "neuron"
    x = torch.randn(2, 6, device="neuron")
    model.eval(), whole.eval()
    assert torch.equal(whole(x).cpu(), model(x).cpu())
    on_cpu = _model()
    on_cpu.load_state_dict(roundtrip(model.state_dict(), map_location="cpu"))
    # bit-identical on the simulator (the CPU's kernels); on nrt the device runs compiled programs
    torch.testing.assert_close(on_cpu.eval()(x.cpu()), model(x).cpu(), rtol=1e-5, atol=1e-6)


def _train(model, opt, steps, seed):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x, y = torch.randn(8, 6, generator=g).to("neuron"), torch.randint(0, 3, (8,), generator=g).to("neuron")
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()


@pytest.mark.parametrize("fused", [False, True])
def test_optimizer_state_checkpoint_resumes_exactly(fused):
    model = _model().to("neuron")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=fused)
    _train(model, opt, 3, seed=1)
    ckpt = roundtrip({"model": model.state_dict(), "opt": opt.state_dict()})
    for state in ckpt["opt"]["state"].values():
        assert state["exp_avg"].device.type == "neuron"
    _train(model, opt, 2, seed=2)

    resumed = _model().to("neuron")
    resumed.load_state_dict(ckpt["model"])
    ropt = torch.optim.AdamW(resumed.parameters(), lr=1e-2, fused=fused)
    ropt.load_state_dict(ckpt["opt"])
    _train(resumed, ropt, 2, seed=2)
    for a, b in zip(model.parameters(), resumed.parameters()):
        assert torch.equal(a.detach().cpu(), b.detach().cpu())


def test_file_roundtrip_and_mmap(tmp_path):
    path = tmp_path / "ckpt.pt"
    x = torch.randn(64, device="neuron:3")
    torch.save({"x": x}, path)
    assert torch.load(path)["x"].device == torch.device("neuron:3")
    y = torch.load(path, map_location="cpu", mmap=True)["x"]
    assert y.device.type == "cpu" and torch.equal(y, x.cpu())
