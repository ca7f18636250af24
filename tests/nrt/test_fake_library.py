"""The contract fake of libnrt enforces what AWS documents, so a pass on it means libnrt was used correctly.
Each script talks to the fake directly through ctypes (tests/nrt/ctypes_nrt.py), in its own process."""

from __future__ import annotations

import signal

PRELUDE = """
import ctypes as C
from tests.nrt import ctypes_nrt as n
lib = n.load()
"""


def test_nothing_works_outside_init_and_close(nrt):
    out = nrt.run(PRELUDE + """
st, t = n.allocate(lib, 0, 64)
print(st)
assert n.init(lib) == n.SUCCESS
print(n.init(lib))                     # twice: refused
lib.nrt_close()
print(n.allocate(lib, 0, 64)[0])
""").stdout.split()
    assert out == [str(n) for n in (13, 1, 14)]  # NRT_UNINITIALIZED, NRT_FAILURE, NRT_CLOSED


def test_handles_sizes_and_cores_are_checked(nrt):
    out = nrt.run(PRELUDE + """
assert n.init(lib) == n.SUCCESS
st, a = n.allocate(lib, 0, 256)
st2, b = n.allocate(lib, 1, 256)
buf = (C.c_char * 512)()
print(lib.nrt_tensor_read(a, buf, 200, 100))          # past the end
print(lib.nrt_tensor_copy(a, 0, b, 0, 16))             # two NeuronCores
print(n.allocate(lib, 7, 16)[0])                       # not one of this process's cores
s = C.c_void_p()
print(lib.nrt_tensor_allocate_slice(a, 128, 64, b"s", C.byref(s)))
lib.nrt_tensor_free(C.byref(a))
print(lib.nrt_tensor_read(s, buf, 0, 8))               # slice of a freed tensor
print(lib.nrt_tensor_read(C.c_void_p(0x1234), buf, 0, 8))  # never a tensor
""").stdout.split()
    assert out == ["2", "2", "2", "0", "2", "2"]


def test_device_memory_is_capped_per_core(nrt):
    out = nrt.run(PRELUDE + """
assert n.init(lib) == n.SUCCESS
stats = n.MemoryStats(); w = C.c_size_t()
lib.nrt_get_vnc_memory_stats(0, C.byref(stats), C.sizeof(stats), C.byref(w))
print(stats.bytes_limit, n.allocate(lib, 0, stats.bytes_limit + 1)[0])
st, t = n.allocate(lib, 0, 1 << 20)
lib.nrt_get_vnc_memory_stats(0, C.byref(stats), C.sizeof(stats), C.byref(w))
print(stats.bytes_used)
""").stdout.split()
    assert out == [str(24 << 30), "4", str(1 << 20)]  # trn2: 96 GiB / 4 logical cores; NRT_RESOURCE


def test_device_memory_is_not_host_memory(nrt):
    # The VA libnrt reports is for DataPtrs and lookups only: reading it on the host faults.
    proc = nrt.run(PRELUDE + """
assert n.init(lib) == n.SUCCESS
st, t = n.allocate(lib, 0, 4096)
data = (C.c_char * 4).from_buffer_copy(b"abcd")
assert lib.nrt_tensor_write(t, data, 0, 4) == 0
back = (C.c_char * 4)()
assert lib.nrt_tensor_read(t, back, 0, 4) == 0 and back.raw == b"abcd"
va = lib.nrt_tensor_get_va(t)
print(va, flush=True)
C.string_at(va, 4)
""", check=False)
    assert proc.returncode == -signal.SIGSEGV and int(proc.stdout.split()[0]) > 0


def test_visible_cores_num_cores_and_lnc_as_documented(nrt):
    count = PRELUDE + """
c = C.c_uint32()
before = lib.nrt_get_visible_vnc_count(C.byref(c)), c.value
print(n.init(lib), before[1], lib.nrt_get_visible_vnc_count(C.byref(c)), c.value)
"""
    assert nrt.run(count).stdout.split() == ["0", "4", "0", "4"]
    assert nrt.run(count, NEURON_RT_VISIBLE_CORES="1-2").stdout.split() == ["0", "2", "0", "2"]
    assert nrt.run(count, NEURON_RT_VISIBLE_CORES="3").stdout.split() == ["0", "1", "0", "1"]
    assert nrt.run(count, NEURON_RT_NUM_CORES="3").stdout.split() == ["0", "3", "0", "3"]
    # NEURON_RT_VISIBLE_CORES takes precedence over NEURON_RT_NUM_CORES
    assert nrt.run(count, NEURON_RT_VISIBLE_CORES="0", NEURON_RT_NUM_CORES="3").stdout.split()[1] == "1"
    assert nrt.run(count, NEURON_LOGICAL_NC_CONFIG="1").stdout.split() == ["0", "8", "0", "8"]
    bad = nrt.run(count, NEURON_RT_VISIBLE_CORES="2-9", check=False)
    assert bad.stdout.split()[0] == "2" and "NEURON_RT_VISIBLE_CORES" in bad.stderr


def test_a_core_held_by_another_process_is_busy(nrt):
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", PRELUDE + "assert n.init(lib) == 0\nprint('held', flush=True)\n"
                               "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=nrt.env(NEURON_RT_VISIBLE_CORES="1"), cwd=nrt.tmp)
    try:
        assert holder.stdout.readline().strip() == "held"
        script = PRELUDE + "print(n.init(lib))"
        busy = nrt.run(script, NEURON_RT_VISIBLE_CORES="0-1")
        assert busy.stdout.split() == ["1005"] and "NeuronCore(s) not available - Requested:nc0-nc1" in busy.stderr
        assert nrt.run(script, NEURON_RT_VISIBLE_CORES="2-3").stdout.split() == ["0"]
        assert nrt.run(script, NEURON_RT_NUM_CORES="3").stdout.split() == ["0"]   # 0, 2, 3 are free
        assert nrt.run(script, NEURON_RT_NUM_CORES="4").stdout.split() == ["1005"]
    finally:
        holder.communicate("")


ADD = """module {
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
"""


def test_neff_is_checked_at_load_and_runs_its_stablehlo(nrt):
    proc = nrt.run(PRELUDE + f"""
import struct, subprocess, os
open("add.mlir", "w").write('''{ADD}''')
def neff(*flags):
    subprocess.run(["neuronx-cc", "compile", "add.mlir", "--framework", "XLA", "--output", "add.neff", *flags],
                   check=True)
    return open("add.neff", "rb").read()
assert n.init(lib) == 0
def load(blob):
    m = C.c_void_p()
    return lib.nrt_load(blob, len(blob), 0, -1, C.byref(m)), m
good = neff("--target", "trn2", "--lnc", "2", "-O1")
print(load(b"not a neff")[0], load(good.replace(b"FAKE-NEFF 1", b"FAKE-NEFF 7"))[0],
      load(neff("--target", "trn3", "--lnc", "2"))[0], load(neff("--target", "trn2", "--lnc", "1"))[0])
st, model = load(good)
def tensor(values):
    st, t = n.allocate(lib, 0, 24)
    raw = struct.pack("6f", *values)
    assert lib.nrt_tensor_write(t, raw, 0, 24) == 0
    return t
a, b, out = tensor(range(6)), tensor([10] * 6), tensor([0] * 6)
ins, outs = C.c_void_p(), C.c_void_p()
lib.nrt_allocate_tensor_set(C.byref(ins)); lib.nrt_allocate_tensor_set(C.byref(outs))
lib.nrt_add_tensor_to_tensor_set(ins, b"input0", a)
lib.nrt_add_tensor_to_tensor_set(outs, b"output0", out)
print(lib.nrt_execute(model, ins, outs))                  # input1 missing
lib.nrt_add_tensor_to_tensor_set(ins, b"input1", b)
print(lib.nrt_execute(model, ins, outs))
res = (C.c_char * 24)()
lib.nrt_tensor_read(out, res, 0, 24)
print(*struct.unpack("6f", res.raw))
""")
    out = proc.stdout.split()
    assert out[4:6] == ["2", "0"], proc.stderr
    assert out[:4] == ["2", "10", "2", "2"]  # not a NEFF, NEFF version, target, LNC
    assert out[4:6] == ["2", "0"]
    assert [float(v) for v in out[6:]] == [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]


def test_numerical_errors_are_reported_when_asked(nrt):
    code = PRELUDE + f"""
import struct, subprocess
open("add.mlir", "w").write('''{ADD}''')
subprocess.run(["neuronx-cc", "compile", "add.mlir", "--framework", "XLA", "--target", "trn2", "--output", "a.neff"],
               check=True)
blob = open("a.neff", "rb").read()
assert n.init(lib) == 0
m = C.c_void_p(); assert lib.nrt_load(blob, len(blob), 0, -1, C.byref(m)) == 0
ts = []
for v in (float("nan"), 1.0, 0.0):
    st, t = n.allocate(lib, 0, 24); lib.nrt_tensor_write(t, struct.pack("6f", *[v] * 6), 0, 24); ts.append(t)
ins, outs = C.c_void_p(), C.c_void_p()
lib.nrt_allocate_tensor_set(C.byref(ins)); lib.nrt_allocate_tensor_set(C.byref(outs))
lib.nrt_add_tensor_to_tensor_set(ins, b"input0", ts[0]); lib.nrt_add_tensor_to_tensor_set(ins, b"input1", ts[1])
lib.nrt_add_tensor_to_tensor_set(outs, b"output0", ts[2])
print(lib.nrt_execute(m, ins, outs))
"""
    assert nrt.run(code).stdout.split() == ["0"]  # off by default, as documented
    assert nrt.run(code, NEURON_RT_NUMERICAL_ERRORS_VERBOSITY="critical").stdout.split() == ["1003"]


def test_fake_compiler_refuses_what_neuronx_cc_refuses(nrt):
    out = nrt.run(f"""
import subprocess
open("add.mlir", "w").write('''{ADD}''')
def cc(*flags):
    return subprocess.run(["neuronx-cc", "compile", "add.mlir", "--output", "x.neff", *flags],
                          capture_output=True, text=True).returncode
print(cc("--framework", "XLA", "--target", "trn2"), cc("--framework", "TENSORFLOW", "--target", "trn2"),
      cc("--framework", "XLA", "--target", "inf9"), cc("--framework", "XLA", "--target", "trn1", "--lnc", "2"),
      cc("--framework", "XLA", "--target", "trn2", "-O7"))
print(subprocess.run(["neuronx-cc", "--version"], capture_output=True, text=True).stdout.strip())
""").stdout.splitlines()
    assert out[0].split() == ["0", "1", "1", "1", "1"]
    assert out[1].startswith("NeuronX Compiler version")


def test_the_documented_cli_builds_the_fake_and_prints_its_environment(nrt, tmp_path):
    # docs/nrt.md: `python -m torchneuron.testing.fake_nrt DIR` (and `--env` for $GITHUB_ENV)
    out = nrt.run(f"""
import subprocess, sys
for flags in ([], ["--env"]):
    proc = subprocess.run([sys.executable, "-m", "torchneuron.testing.fake_nrt", {str(tmp_path / "cli")!r}, *flags],
                          capture_output=True, text=True, check=True)
    print(proc.stdout)
""").stdout
    assert f"export LD_LIBRARY_PATH={tmp_path / 'cli' / 'lib'}" in out and "export TORCHNEURON_RUNTIME=nrt" in out
    assert f"\nPATH={tmp_path / 'cli' / 'bin'}:" in out and "\nTORCHNEURON_RUNTIME=nrt" in out
    assert (tmp_path / "cli" / "lib" / "libnrt.so.1").exists() and (tmp_path / "cli" / "bin" / "neuronx-cc").exists()
