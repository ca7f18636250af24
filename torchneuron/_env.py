"""Every environment variable torchneuron reads, in one place (the README's table is generated from this list).

Values are read when asked for, not at import, so tests can change them with monkeypatch. A variable marked
``internal`` is a knob of torchneuron's own test suite: declared here like the others, left out of the user's
table.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class EnvVar:
    name: str
    default: str
    meaning: str
    internal: bool = False


VARS: dict[str, EnvVar] = {}


def _var(name: str, default: str, meaning: str, *, internal: bool = False) -> str:
    VARS[name] = EnvVar(name, default, meaning, internal)
    return name


# --- device / runtime ---
RUNTIME = _var("TORCHNEURON_RUNTIME", "auto", "auto, sim or nrt: which runtime backs the neuron device")
TARGET = _var("TORCHNEURON_TARGET", "trn2", "trn1, trn2 or trn3: the simulated (or compile) target")
SIM_DEVICES = _var("TORCHNEURON_SIM_DEVICES", "", "number of simulated devices (default: logical cores of one chip)")
SIM_HBM_MB = _var("TORCHNEURON_SIM_HBM_MB", "", "override the simulated HBM capacity per device, in MiB")
BACKWARD_THREAD = _var("TORCHNEURON_BACKWARD_THREAD", "caller", "caller: a neuron backward runs on the thread that calls backward(), as on CPU; device: in autograd's per-device thread (PyTorch's default for devices)")
AUTOGRAD_THREADS = _var("TORCHNEURON_AUTOGRAD_THREADS", "1", "intra-op threads for host kernels in autograd's neuron backward threads on the sim (0: PyTorch's setting)")
LAUNCH_BLOCKING = _var("NEURON_LAUNCH_BLOCKING", "0", "1: every device operation completes before the call returns")
AUTOLOAD = _var("TORCH_DEVICE_BACKEND_AUTOLOAD", "1", "0: `import torch` does not load torchneuron (PyTorch's switch)")

# --- Trn host: read by libnrt itself, as AWS documents them; torchneuron only passes them through ---
VISIBLE_CORES = _var("NEURON_RT_VISIBLE_CORES", "", "NeuronCores this process sees, one index, a range or a list (`2`, `0-3`, `0,2`), renumbered from neuron:0 (read by libnrt on nrt; on the sim: a slice of the simulated cores)")
NUM_CORES = _var("NEURON_RT_NUM_CORES", "0", "this process takes this many NeuronCores (0: all), renumbered from neuron:0 (read by libnrt on nrt; on the sim: the first n simulated cores); NEURON_RT_VISIBLE_CORES wins when both are set")
NUMERICAL_ERRORS = _var("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", "none", "nrt: critical (NaN), debug or verbose (NaN or Inf): an execution producing them raises, naming the op (read by libnrt)")

# --- eager dtype rules ---
FP64 = _var("TORCHNEURON_FP64", "emulate", "emulate: float64 computed in float32 as on NeuronCores; native: in float64")

# --- lowering / compiler ---
EAGER = _var("TORCHNEURON_EAGER", "host", "host: eager ops run as host kernels; lowered: every op through StableHLO + XLA:CPU")
FALLBACK = _var("TORCHNEURON_FALLBACK", "auto", "auto, warn or error: an executed op with no StableHLO lowering is recorded for fallback_ops() and warned about once where it matters (auto: with TORCHNEURON_EAGER=lowered and on nrt, where it runs on the CPU; warn: in the simulator's host mode too), or raises")
CACHE_DIR = _var("TORCHNEURON_CACHE_DIR", "", "on-disk compile cache (default: ~/.cache/torchneuron)")
CC_FLAGS = _var("NEURON_CC_FLAGS", "", "extra neuronx-cc flags, appended")
OPT_LEVEL = _var("NEURON_COMPILER_OPT_LEVEL", "", "neuronx-cc -O level override (eager default 1, graphs 2)")
LNC = _var("NEURON_LOGICAL_NC_CONFIG", "", "logical NeuronCore config (1 or 2): neuronx-cc --lnc, and (read by libnrt) how many physical cores form one device on nrt")

# --- torch.compile ---
COMPILE_FALLBACK = _var("TORCHNEURON_COMPILE_FALLBACK", "warn", "warn or error: a compiled graph with ops that have no lowering runs them eagerly between compiled pieces (reported once per graph), or raises naming the op and source line")
DEBUG_DIR = _var("TORCHNEURON_DEBUG_DIR", "", "keep each compiled graph's FX graph, partition, StableHLO and executable in this directory")
SIM_EXECUTOR = _var("TORCHNEURON_SIM_EXECUTOR", "aten", "aten: lowered pieces run as their ATen graph on PyTorch's CPU kernels (eager's arithmetic without per-op dispatch); xla: as their StableHLO program on XLA:CPU (the Trn host's program); inductor: through inductor's CPU code. The StableHLO is lowered and kept in every case")
COMPILE_CHECK = _var("TORCHNEURON_COMPILE_CHECK", "first", "first, every or off: run each lowered piece's StableHLO on XLA:CPU too and compare with the aten or inductor executor's result on the piece's first call, every call, or never")

# --- distributed ---
ROOT_COMM_ID = _var("NEURON_RT_ROOT_COMM_ID", "", "Trn host: host:port of the Neuron collectives root; set by init_process_group('neuron') from MASTER_ADDR when unset")
LOCAL_RANK = _var("LOCAL_RANK", "", "set by torchrun: this process's index on its host; the neuron process group makes neuron:LOCAL_RANK the current device")
LOCAL_WORLD_SIZE = _var("LOCAL_WORLD_SIZE", "", "set by torchrun: processes on this host; at most one per visible NeuronCore")
MASTER_ADDR = _var("MASTER_ADDR", "", "set by torchrun: address of rank 0 (the Neuron collectives root on a Trn host)")

# --- NKI ---
NKI_TARGET = _var("NEURON_PLATFORM_TARGET_OVERRIDE", "", "NKI target (trn1, trn2 or trn3); falls back to TORCHNEURON_TARGET")
NKI_ALIASES = _var("TORCHNEURON_NKI_ALIASES", "0", "1: `import nki` / `import neuronxcc.nki` resolve to torchneuron.nki when not installed")

# --- ecosystem ---
NEURONX_ALIAS = _var("TORCHNEURON_NEURONX_ALIAS", "auto", "auto, 1 or 0: when no torch_neuronx package is installed, `find_spec('torch_neuronx')` (how HF accelerate/transformers detect Neuron) finds torchneuron's alias; auto: only while no CUDA device is available")

# --- torchneuron's own test suite (internal: not in the README's table) ---
CONFORMANCE = _var("TORCHNEURON_CONFORMANCE", "", "full: the pytest OpInfo suite runs all of op_db and every dtype (default: the CI subset)", internal=True)


def get(name: str) -> str:
    """The value of a registered variable, or its default."""
    return os.environ.get(name, VARS[name].default)


def flag(name: str) -> bool:
    return get(name).strip().lower() in ("1", "true", "yes", "on")


def markdown_table() -> str:
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    rows += [f"| `{v.name}` | `{v.default or '-'}` | {v.meaning} |" for v in VARS.values() if not v.internal]
    return "\n".join(rows)
