#!/usr/bin/env python
"""Sweep every torch.nn module class on neuron against the CPU and write docs/module_coverage.md.

The sweep is ``torchneuron.testing.module_sweep`` (what it runs and compares is described there), the doc
renderer ``torchneuron.testing.module_coverage_doc``.

    python tools/gen_module_coverage.py                  # sweep all classes, write the doc
    python tools/gen_module_coverage.py --classes LSTM,GRU   # a subset: print, write nothing
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DOC = ROOT / "docs" / "module_coverage.md"

from torchneuron.testing.module_coverage_doc import render_doc, summary  # noqa: E402
from torchneuron.testing.module_sweep import sweep  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--classes", default="", help="comma-separated class names (prints only)")
    args = p.parse_args()
    names = [c for c in args.classes.split(",") if c] or None
    results = sweep(names, progress=True)
    s = summary(results)
    print(s)
    if names is None:
        DOC.write_text(render_doc(results))
        print(f"wrote {DOC.relative_to(ROOT)}")
    sys.exit(0 if s["pass"] + s["known"] == s["swept"] else 1)


if __name__ == "__main__":
    main()
