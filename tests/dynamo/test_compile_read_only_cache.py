"""torch.compile with a compile cache the process cannot write: a pre-warmed read-only cache (a container
image, a shared CI volume) serves its hits, and a new shape compiles in memory with one warning."""

import json
import subprocess
import sys
import textwrap

from tests.helpers import ROOT, python_env
from tests.read_only import read_only_command

USER = textwrap.dedent("""
    import copy, json, sys, warnings
    import torch, torchneuron
    from torchneuron.compiler import driver

    warnings.simplefilter("always")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    reference = copy.deepcopy(model)
    compiled = torch.compile(model.to("neuron"), backend="neuron")
    with warnings.catch_warnings(record=True) as caught:
        for batch in map(int, sys.argv[1:]):
            x = torch.randn(batch, 8)
            got = compiled(x.to("neuron")).cpu()
            torch.testing.assert_close(got, reference(x), rtol=2e-5, atol=2e-6)
        torch.neuron.synchronize()  # the first-call checks compile beside the program
    print(json.dumps({"stats": driver.default_cache().stats,
                      "graph_hits": torch.neuron.get_dynamo_metrics()["cache_hits"],
                      "warnings": [str(w.message) for w in caught if "compile cache" in str(w.message)]}))
""")


def _run(cache, *shapes, read_only=False):
    argv = [sys.executable, "-c", USER, *map(str, shapes)]
    if read_only:
        argv = read_only_command(str(cache), argv)
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env=python_env(TORCHNEURON_CACHE_DIR=str(cache)))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_prewarmed_read_only_cache_serves_hits_and_compiles_a_new_shape(tmp_path):
    cache = tmp_path / "cache"
    warm = _run(cache, 4)
    assert warm["stats"]["compiles"] >= 1 and not warm["warnings"]
    ro = _run(cache, 4, 7, 9, read_only=True)
    assert ro["graph_hits"] >= 1                          # the pre-warmed shape comes from the read-only cache
    assert ro["stats"]["compiles"] >= 1                   # the new shapes compile in memory
    (warning,) = ro["warnings"]                           # one warning, however many misses
    assert str(cache) in warning and "TORCHNEURON_CACHE_DIR" in warning


def test_cache_directory_that_cannot_exist_compiles_in_memory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    out = _run(blocker / "cache", 4, 5)                   # mkdir fails even for root: ENOTDIR
    (warning,) = out["warnings"]
    assert str(blocker / "cache") in warning and "TORCHNEURON_CACHE_DIR" in warning
