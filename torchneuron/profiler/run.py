"""``python -m torchneuron profile script.py [args]``: run a script under torch.profiler with neuron device
activity and memory, then write its Chrome trace, an HTML report and the summary tables."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path


def profile_script(script: str, args: list[str], out_dir: str | None = None, *, memory: bool = True,
                   record_shapes: bool = False, row_limit: int = 15) -> int:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from . import report, tables

    path = Path(script)
    if not path.is_file():
        print(f"torchneuron profile: no such script: {script}", file=sys.stderr)
        return 2
    out = Path(out_dir) if out_dir else Path(f"{path.stem}-profile")
    out.mkdir(parents=True, exist_ok=True)
    trace_path, html_path = out / "trace.json", out / "report.html"

    code = 0
    saved_argv = sys.argv
    sys.argv = [str(path), *args]
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1], profile_memory=memory,
                   record_shapes=record_shapes)
    try:
        with prof:
            try:
                runpy.run_path(str(path), run_name="__main__")
            except SystemExit as e:  # the script's own exit code, after the trace is written
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = saved_argv
    if torch.neuron.is_available():
        torch.neuron.synchronize()
    prof.export_chrome_trace(str(trace_path))
    report.write_report(trace_path, html_path, title=f"torchneuron profile: {path.name} {' '.join(args)}".strip())
    print(prof.key_averages().table(sort_by="self_device_time_total", row_limit=row_limit))
    print(tables.device_table(row_limit=row_limit))
    print(f"trace : {trace_path}  (open in Perfetto or chrome://tracing)")
    print(f"report: {html_path}")
    return code
