"""The main job on the simulator: train a small convolutional classifier on `neuron`.

The data is generated here (no downloads): 16x16 images of four procedurally drawn shapes (horizontal
bar, vertical bar, diagonal, ring) at random positions, with noise. The script is an ordinary PyTorch
training loop; only the device string says "neuron".
"""

from __future__ import annotations

import math
import time

import torch
from torch import nn

CLASSES = ("horizontal", "vertical", "diagonal", "ring")


def make_shapes(n: int, seed: int = 0, size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, len(CLASSES), (n,), generator=g)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    images = torch.zeros(n, 1, size, size)
    cy = torch.randint(4, size - 4, (n,), generator=g)
    cx = torch.randint(4, size - 4, (n,), generator=g)
    for i in range(n):
        dy, dx = yy - cy[i], xx - cx[i]
        label = int(labels[i])
        if label == 0:
            mask = (dy.abs() <= 1) & (dx.abs() <= 4)
        elif label == 1:
            mask = (dx.abs() <= 1) & (dy.abs() <= 4)
        elif label == 2:
            mask = ((dy - dx).abs() <= 1) & (dx.abs() <= 4)
        else:
            r = (dy.float() ** 2 + dx.float() ** 2).sqrt()
            mask = (r - 3).abs() <= 0.8
        images[i, 0][mask] = 1.0
    images += 0.3 * torch.randn(images.shape, generator=g)
    return images, labels


class ShapeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Dropout(0.1), nn.Linear(32 * 4 * 4, 64), nn.ReLU(),
                                  nn.Linear(64, len(CLASSES)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x))


def run(steps: int = 300, device: str = "neuron", batch: int = 64, quiet: bool = False) -> int:
    say = (lambda *a: None) if quiet else print
    torch.manual_seed(0)
    train_x, train_y = make_shapes(4096, seed=1)
    test_x, test_y = make_shapes(1024, seed=2)
    dev = torch.device(device)
    model = ShapeNet().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loss_fn = nn.CrossEntropyLoss()
    say(f"training ShapeNet ({sum(p.numel() for p in model.parameters())} parameters) on {dev} "
        f"[{torch.neuron.get_device_name(dev.index or 0) if dev.type == 'neuron' else dev.type}]")
    data = torch.utils.data.TensorDataset(train_x, train_y)
    # pin_memory pins for the current accelerator, which is neuron (pin_memory_device is deprecated).
    loader = torch.utils.data.DataLoader(data, batch_size=batch, shuffle=True, drop_last=True,
                                         pin_memory=dev.type == "neuron")
    first_loss = last_loss = math.nan
    step, seen, start = 0, 0, time.perf_counter()
    model.train()
    while step < steps:
        for x, y in loader:
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            loss = loss_fn(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            seen += x.shape[0]
            if step == 1 or step % 50 == 0 or step == steps:
                last_loss = loss.item()
                first_loss = last_loss if step == 1 else first_loss
                rate = seen / (time.perf_counter() - start)
                say(f"  step {step:4d}/{steps}  loss {last_loss:.4f}  {rate:8.0f} samples/s")
            if step == steps:
                break
    elapsed = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        pred = model(test_x.to(dev)).argmax(1).cpu()
    accuracy = (pred == test_y).float().mean().item()
    say(f"done in {elapsed:.1f} s: loss {first_loss:.3f} -> {last_loss:.3f}, test accuracy {accuracy:.1%}, "
        f"{seen / elapsed:.0f} samples/s")
    if dev.type == "neuron":
        idx = dev.index or 0
        say(f"memory on {dev}: allocated {torch.neuron.memory_allocated(idx) / 2**20:.1f} MiB, peak "
            f"{torch.neuron.max_memory_allocated(idx) / 2**20:.1f} MiB, reserved "
            f"{torch.neuron.memory_reserved(idx) / 2**20:.1f} MiB")
    return 0 if last_loss < first_loss else 1
