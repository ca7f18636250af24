"""Set-up the NKI tests share: seeded inputs, the check that a kernel fails with a given error at a given line,
and neuron-tensor inputs for kernels launched through torch (tests/custom_ops).

tests/nki imports this by name (pytest puts that folder, which is not a package, on sys.path); other test
packages import it as `tests.nki.nki_test_utils`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from torchneuron.nki import NkiError


def line_of(func: Callable[..., Any], marker: str) -> int:
    """The absolute line number of the first source line of `func` containing `marker`."""
    func = getattr(func, "func", func)
    lines, start = inspect.getsourcelines(func)
    for i, text in enumerate(lines):
        if marker in text:
            return start + i
    raise AssertionError(f"marker {marker!r} not in {func.__name__}")


def expect_error(code: str, kernel: Any, *args: Any, marker: str = "# BAD") -> NkiError:
    """`kernel(*args)` raises the NKI error `code`, located at the kernel's source line holding `marker`,
    and the message says how to fix it."""
    with pytest.raises(NkiError) as info:
        kernel(*args)
    err = info.value
    assert err.code == code, str(err)
    assert err.filename == getattr(kernel, "func", kernel).__code__.co_filename, str(err)
    assert err.lineno == line_of(kernel, marker), str(err)
    assert code in str(err) and "Fix:" in str(err)
    return err


def standard_normal_f32(rng: np.random.Generator) -> Callable[..., np.ndarray]:
    """`f32(*shape)`: standard-normal float32 arrays drawn from `rng` (one generator per test module, so a
    module's inputs do not depend on which other tests ran)."""

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32)

    return f32


def random_array(shape: tuple[int, ...], dtype: Any, seed: int, low: float | None = None,
                 high: float | None = None) -> np.ndarray:
    """Seeded input in `dtype`, drawn in float32: standard normal, or uniform in [low, high) when given."""
    rng = np.random.default_rng(seed)
    if low is None:
        x = rng.standard_normal(shape, dtype=np.float32)
    else:
        x = rng.uniform(low, high, shape).astype(np.float32)
    return x.astype(dtype)


def neuron_randn(*shape: int, dtype: Any = None, seed: int = 0) -> Any:
    """A seeded standard-normal tensor on the neuron device (drawn on the CPU in float32, then cast)."""
    import torch

    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
    return (x if dtype is None else x.to(dtype)).to("neuron")
