"""A contract fake of a Trn host's libnrt and neuronx-cc, so the ``nrt`` runtime runs anywhere.

``build(directory)`` (or ``python -m torchneuron.testing.fake_nrt DIR``) writes:

- ``DIR/lib/libnrt.so.1``: a small C library exporting the libnrt entry points torchneuron calls (the same
  declarations, ``nrt_abi.h``), over host memory that only it can touch, enforcing the documented
  preconditions (``fake_nrt.c`` lists them);
- ``DIR/bin/neuronx-cc``: accepts the documented command line and writes a "NEFF" packing the StableHLO
  module (``neff_format.py``), which the fake libnrt runs on XLA:CPU (``executor.py``).

With ``TORCHNEURON_RUNTIME=nrt``, ``LD_LIBRARY_PATH=DIR/lib`` and ``PATH=DIR/bin`` first, torchneuron runs
exactly the code it runs on a Trn host: device memory through nrt_tensor_read/write/copy, eager ops and
compiled graphs as NEFFs, the CPU fallback for the rest. ``FakeNrt.env()`` gives those variables.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from torchneuron import targets

HERE = Path(__file__).resolve().parent
# NRT_INSTANCE_* / NRT_INSTANCE_SIZE_* (nrt.h) of the one-chip instance of each generation modelled.
_INSTANCES = {"trn1": (2, 1, "trn1.2xlarge"), "trn2": (5, 8, "trn2.3xlarge"), "trn3": (14, 8, "trn3.3xlarge")}


class BuildError(RuntimeError):
    pass


@dataclass(frozen=True)
class FakeNrt:
    root: Path
    target: str
    instance: str

    @property
    def lib_dir(self) -> Path:
        return self.root / "lib"

    @property
    def bin_dir(self) -> Path:
        return self.root / "bin"

    @property
    def library(self) -> Path:
        return self.lib_dir / "libnrt.so.1"

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: os.environ) with the fake first on the loader and executable paths."""
        env = dict(os.environ if base is None else base)
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(self.lib_dir), env.get("LD_LIBRARY_PATH")) if p)
        env["PATH"] = os.pathsep.join(p for p in (str(self.bin_dir), env.get("PATH")) if p)
        env["TORCHNEURON_RUNTIME"] = "nrt"
        return env


def _c_compiler() -> list[str]:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return [name]
    for name in ("c++", "g++", "clang++"):
        if shutil.which(name):
            return [name, "-x", "c"]
    raise BuildError("no C compiler found (set CC, or install cc/gcc/clang) to build the fake libnrt")


def build(directory: str | os.PathLike, *, target: str = "trn2", chips: int = 1, version: str = "2.99.0",
          hbm_bytes: int | None = None) -> FakeNrt:
    """Build the fake into ``directory`` for a ``chips``-chip instance of ``target`` (default: one trn2 chip,
    four logical NeuronCores of 24 GiB at LNC=2). ``version`` is what nrt_get_version reports."""
    t = targets.named(target)
    family, size, instance = _INSTANCES[t.name]
    if chips != 1:
        instance = f"{t.name}.{chips}-chip"
    major, minor = (int(p) for p in (version.split(".") + ["0"])[:2])
    root = Path(directory).resolve()
    for sub in ("lib", "bin", "libexec", "state"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    defines = {
        "FAKE_NRT_FAMILY": family, "FAKE_NRT_SIZE": size, "FAKE_NRT_TARGET": f'"{t.name}"',
        "FAKE_NRT_PHYSICAL_CORES": t.physical_cores * chips, "FAKE_NRT_DEFAULT_LNC": t.lnc,
        "FAKE_NRT_HBM_BYTES": f"{hbm_bytes if hbm_bytes is not None else t.chip_hbm_bytes * chips}ull",
        "FAKE_NRT_VERSION_MAJOR": major, "FAKE_NRT_VERSION_MINOR": minor,
        "FAKE_NRT_STATE_DIR": f'"{root / "state"}"',
    }
    lib = root / "lib" / "libnrt.so.1"
    cmd = [*_c_compiler(), "-shared", "-fPIC", "-O2", "-Wall", "-Werror=incompatible-pointer-types", f"-I{HERE}",
           *(f"-D{k}={v}" for k, v in defines.items()),
           "-Wl,-soname,libnrt.so.1", "-o", str(lib), str(HERE / "fake_nrt.c"), "-lpthread", "-ldl"]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"building the fake libnrt failed:\n  $ {' '.join(cmd)}\n{proc.stderr}")
    link = root / "lib" / "libnrt.so"
    if not link.exists():
        link.symlink_to("libnrt.so.1")

    libexec = root / "libexec"
    shutil.copy(HERE / "neuronx_cc.py", libexec / "fake_neuronx_cc.py")
    shutil.copy(HERE / "neff_format.py", libexec / "neff_format.py")
    shutil.copy(HERE.parent.parent / "compiler" / "stablehlo_signature.py", libexec / "stablehlo_signature.py")
    cc = root / "bin" / "neuronx-cc"
    cc.write_text(f"#!{sys.executable} -I\nimport sys\nsys.path.insert(0, {str(libexec)!r})\n"
                  "import fake_neuronx_cc\nsys.exit(fake_neuronx_cc.main(sys.argv[1:]))\n")
    cc.chmod(0o755)
    return FakeNrt(root, t.name, instance)
