"""Builds torchneuron._C against the torch that is already installed (see pyproject.toml)."""

import glob
import os

from setuptools import setup
from setuptools.command.build_py import build_py
from torch.utils.cpp_extension import BuildExtension, CppExtension, include_paths

ROOT = os.path.dirname(os.path.abspath(__file__))


def sources() -> list[str]:
    files = sorted(glob.glob(os.path.join("csrc", "**", "*.cpp"), recursive=True))
    if not files:
        raise RuntimeError("no C++ sources found under csrc/")
    return files


# `import torch_neuronx` as a script's first import (AWS TorchNeuron's scripts) needs a finder before torch is
# imported: a .pth file next to the installed packages appends it at start-up (torchneuron/_neuronx_boot.py).
# A .pth, not a `torch_neuronx` package, so that installing torchneuron never overwrites AWS's package.
PTH = "torchneuron-neuronx.pth"


class BuildPyWithPth(build_py):
    def run(self):
        super().run()
        # a wheel's root is site-packages; an editable wheel is assembled in install_lib instead of build_lib
        target = self.get_finalized_command("install").install_lib if self.editable_mode else self.build_lib
        self.copy_file(os.path.join(ROOT, "torchneuron", PTH), os.path.join(target, PTH))


setup(
    ext_modules=[
        CppExtension(
            name="torchneuron._C",
            sources=sources(),
            # kineto/: the activity-profiler plugin API PyTorch ships its headers for (csrc/profiler/).
            include_dirs=[os.path.join(ROOT, "csrc"), os.path.join(include_paths()[0], "kineto")],
            # -falign-functions=64: the per-op host path is a chain of small functions, and where they fall
            # against cache lines moved a small op's time by up to 15 % from one harmless edit to the next
            # (benchmarks/eager_overhead.py: add 1.29-1.31x CPU unaligned, 1.14-1.18x aligned, same source)
            extra_compile_args=["-O2", "-std=c++17", "-Wno-unused-parameter", "-falign-functions=64"],
            # libnrt is opened with dlopen at run time on Trn hosts, never linked.
            libraries=["dl"],
        )
    ],
    cmdclass={"build_ext": BuildExtension, "build_py": BuildPyWithPth},
)
