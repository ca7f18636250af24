"""`python -m torchneuron {info,demo,profile}`."""

from __future__ import annotations

import argparse
import platform
import sys


def info() -> int:
    import torch

    import torchneuron
    from torchneuron import _C, _env

    rt = _C._runtime_info()
    nrt = _C._probe_libnrt()
    libnrt = {"loaded": f"{nrt['version']} at {nrt['path']}", "too old": f"too old ({nrt['error']})",
              "missing": "not found"}[nrt["status"]]
    print(f"torchneuron {torchneuron.__version__}  (torch {torch.__version__}, Python {platform.python_version()})")
    print(f"runtime      : {rt['runtime']}  (TORCHNEURON_RUNTIME={_env.get(_env.RUNTIME)}; libnrt: "
          f"{libnrt})")
    print(f"target       : {rt['target']}  ({rt['instance']}, {rt['core_generation']}, LNC={rt['lnc']})")
    cores = _env.get(_env.VISIBLE_CORES).strip()
    print(f"devices      : {rt['devices']}  x {rt['hbm_bytes_per_device'] / (1 << 30):.1f} GiB HBM each"
          + (f"  (NEURON_RT_VISIBLE_CORES={cores})" if cores else ""))
    for i in range(torch.neuron.device_count()):
        free, total = torch.neuron.mem_get_info(i)
        print(f"  neuron:{i}   {torch.neuron.get_device_name(i)}  free {free / (1 << 30):.1f} / "
              f"{total / (1 << 30):.1f} GiB  allocated {torch.neuron.memory_allocated(i)} B")
    versions = []
    for mod in ("numpy", "ml_dtypes", "jax", "jaxlib", "torch_mlir"):
        try:
            from importlib.metadata import version

            versions.append(f"{mod} {version(mod.replace('_', '-'))}")
        except Exception:
            versions.append(f"{mod} (not installed)")
    print("versions     : " + ", ".join(versions))
    print(f"torch.compile: {_compile_backend(rt['runtime'], _env.get(_env.SIM_EXECUTOR))}")
    from torchneuron import distributed

    print(f"distributed  : {distributed.describe()}")
    return 0


def _compile_backend(runtime: str, executor: str) -> str:
    """How torch.compile finds the neuron backend (read from the entry points: importing Dynamo takes seconds)."""
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="torch_dynamo_backends") if ep.name == "neuron"]
    if not eps:
        return 'backend "neuron" not registered (reinstall torchneuron: pip install -e .)'
    if runtime != "sim":
        return f'backend="neuron" ({eps[0].value}), graphs compile to NEFFs (neuronx-cc -O2)'
    return (f'backend="neuron" ({eps[0].value}), graphs run on the simulator with the {executor} executor '
            "(TORCHNEURON_SIM_EXECUTOR)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchneuron", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="runtime, target, devices, memory and versions")
    demo = sub.add_parser("demo", help="train a small model on the neuron device and report progress")
    demo.add_argument("--steps", type=int, default=300)
    demo.add_argument("--device", default="neuron")
    prof = sub.add_parser("profile", help="run a script under torch.profiler: neuron device events and memory, a "
                                          "Chrome trace and an HTML report (timeline, top ops)")
    prof.add_argument("--out-dir", default=None, help="where trace.json and report.html go (default: "
                                                      "<script>-profile/)")
    prof.add_argument("--no-memory", action="store_true", help="do not record device memory events")
    prof.add_argument("--record-shapes", action="store_true", help="record input shapes of CPU ops")
    prof.add_argument("script")
    prof.add_argument("script_args", nargs=argparse.REMAINDER)
    from torchneuron.estimator import command as estimate_command

    estimate_command.add_arguments(sub.add_parser(
        "estimate", help="the Trainium time and cost of a script's model or a Hugging Face config.json, no device"))
    args = parser.parse_args(argv)
    if args.command == "estimate":
        return estimate_command.run(args)
    if args.command == "info":
        return info()
    if args.command == "profile":
        from torchneuron.profiler.run import profile_script

        return profile_script(args.script, args.script_args, args.out_dir, memory=not args.no_memory,
                              record_shapes=args.record_shapes)
    from torchneuron.demo import run

    return run(steps=args.steps, device=args.device)


if __name__ == "__main__":
    sys.exit(main())
