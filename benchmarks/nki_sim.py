"""NKI simulator speed and cost-model sanity, measured in one run (JSON).

1. Wall time of the simulator running a 2048x2048x2048 bf16 tiled matmul kernel (nki_ops.matmul) against
   NumPy's fp32 matmul of the same shape in the same process (target: ratio <= 5; best of `--repeat`).
2. The cost model's estimate for that kernel on trn2 against the trn2 roofline (one NeuronCore: Tensor
   engine peak bf16 FLOPs, DMA bandwidth for one pass over inputs and output).

    python benchmarks/nki_sim.py [--out PATH] [--size 2048] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The simulator needs no neuron device; keep torch's backend autoload (device registration) out of the timing.
os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")

from nki_ops import matmul  # noqa: E402
from torchneuron import nki  # noqa: E402
from torchneuron.nki import cost  # noqa: E402
from torchneuron.nki.hardware import target_named  # noqa: E402


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the JSON here (default: stdout)")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.size
    os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn2"
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((n, n), dtype=np.float32).astype(ml_dtypes.bfloat16)
    lhsT32, rhs32 = lhsT.astype(np.float32), rhs.astype(np.float32)

    kernel = nki.simulate(matmul.matmul_kernel)
    result = kernel(lhsT, rhs)  # warm-up; also the correctness check below
    reference = matmul.reference(lhsT, rhs).astype(np.float32)
    max_rel_err = float(np.abs(result.astype(np.float32) - reference).max() / np.abs(reference).max())
    sim_s = best_time(lambda: kernel(lhsT, rhs), args.repeat)
    numpy_s = best_time(lambda: lhsT32.T @ rhs32, args.repeat)

    report = kernel.report
    trn2 = target_named("trn2")
    flops = 2.0 * n * n * n
    hbm_bytes = 3 * n * n * 2  # read lhsT and rhs, write out, bf16
    roofline_ns = cost.roofline_ns(flops, hbm_bytes, trn2)
    out = {
        "benchmark": "nki_sim",
        "shape": [n, n, n],
        "dtype": "bfloat16",
        "host": {"python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count()},
        "simulator_wall_s": sim_s,
        "numpy_fp32_matmul_wall_s": numpy_s,
        "sim_over_numpy": sim_s / numpy_s,
        "sim_over_numpy_target": 5.0,
        "max_rel_error_vs_reference": max_rel_err,
        "estimate": report.to_dict(),
        "trn2_roofline_us": roofline_ns / 1000.0,
        "estimate_over_roofline": report.latency_ns / roofline_ns,
    }
    text = json.dumps(out, indent=2)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
