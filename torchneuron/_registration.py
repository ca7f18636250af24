"""Claims PyTorch's PrivateUse1 backend as `neuron` (once per process) and wires up torch.neuron."""

from __future__ import annotations

import importlib.metadata
import warnings

import torch

from torchneuron import _env, _visible_cores, fp64_rule, targets

_UNCLAIMED = "privateuseone"


def _other_backend_owner(name: str) -> str:
    """Best guess at which installed package registered PrivateUse1, for the error message."""
    try:
        for ep in importlib.metadata.entry_points(group="torch.backends"):
            if ep.name != "torchneuron":
                return f"{ep.value.split(':')[0]} (torch.backends entry point '{ep.name}')"
    except Exception:  # metadata problems must not hide the real error
        pass
    return f"the package that registered '{name}'"


def check_backend_unclaimed() -> None:
    """Fails before any C++ registration when another package owns PrivateUse1."""
    name = torch._C._get_privateuse1_backend_name()
    if name == _UNCLAIMED:
        return
    mod = getattr(torch, name, None)
    if name == "neuron" and getattr(mod, "__torchneuron__", False):
        return
    owner = _other_backend_owner(name)
    raise ImportError(
        f"torchneuron cannot register the 'neuron' device: PyTorch's PrivateUse1 backend is already claimed "
        f"as '{name}' by {owner}, and a process can hold only one. If that package loads automatically, turn "
        f"its autoload off with TORCH_DEVICE_BACKEND_AUTOLOAD=0 (and import torchneuron explicitly), or "
        f"uninstall one of the two packages."
    )


def _autograd_threads() -> int:
    raw = _env.get(_env.AUTOGRAD_THREADS).strip()
    try:
        n = int(raw)
    except ValueError:
        n = -1
    if n < 0:
        warnings.warn(f"{_env.AUTOGRAD_THREADS}={raw!r} is not a thread count (0 or more); using "
                      f"{_env.VARS[_env.AUTOGRAD_THREADS].default}", stacklevel=2)
        n = int(_env.VARS[_env.AUTOGRAD_THREADS].default)
    return n


def configure(C) -> None:
    """Pass every setting the C++ layer needs (it reads no environment variable itself), before any use."""
    devices = _env.get(_env.SIM_DEVICES)
    hbm_mb = _env.get(_env.SIM_HBM_MB)
    lnc = _env.get(_env.LNC).strip()
    kind = _env.get(_env.RUNTIME).strip().lower()
    target = targets.configure()  # TORCHNEURON_TARGET, read once for the process
    count = int(devices) if devices else 0
    if _visible_cores.restricted() and _simulated(C, kind):
        # NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES on the simulator: this process sees some of its cores
        # (libnrt applies the variables itself on a Trn host).
        count = len(_visible_cores.visible_cores(count or target.logical_cores) or [])
    C._configure(
        kind,
        target.name,
        count,
        int(float(hbm_mb) * (1 << 20)) if hbm_mb else 0,
        _env.flag(_env.LAUNCH_BLOCKING),
        int(lnc) if lnc.isdigit() else 0,
        targets.table(),
        torch.__version__,
        _version(),
    )
    fp64_rule.configure(C)
    C._set_autograd_thread_intra_op_threads(_autograd_threads())
    if kind != "sim":
        # On nrt the target is the instance's (nrt_get_instance_info). `nrt` asks the runtime (starting it);
        # `auto` takes it once the runtime exists, and the configured one until then.
        targets.set_resolver(lambda: C._runtime_target(kind == "nrt"))
    C._set_nrt_executor(_nrt_executor_trampoline(C))


def _simulated(C, kind: str) -> bool:
    """Whether the runtime will be the simulator (auto probes for libnrt, which is only loaded, not started)."""
    return kind == "sim" or (kind == "auto" and C._probe_libnrt()["status"] != "loaded")


def _version() -> str:
    try:
        return importlib.metadata.version("torchneuron")
    except importlib.metadata.PackageNotFoundError:
        return "0.1.0"


def _nrt_executor_trampoline(C):
    """The nrt runtime's eager executor, imported on its first op (the device layer calls it only on nrt)."""
    def execute(op, args, kwargs):
        from torchneuron.programs import nrt_eager

        C._set_nrt_executor(nrt_eager.execute)
        return nrt_eager.execute(op, args, kwargs)
    return execute


def register(device_module) -> None:
    if torch._C._get_privateuse1_backend_name() == _UNCLAIMED:
        torch.utils.rename_privateuse1_backend("neuron")
    if not hasattr(torch, "neuron"):
        torch._register_device_module("neuron", device_module)
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
        )
