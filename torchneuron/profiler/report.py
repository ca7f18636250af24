"""A self-contained HTML report of a profiler trace: a timeline (SVG: CPU threads and neuron device rows)
and the top device and CPU ops. Plain HTML and inline SVG: opens from disk in any browser, no server, no
script, nothing fetched."""

from __future__ import annotations

import html
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_WIDTH = 1200          # px of the time axis
_ROW = 18              # px per row
_LABEL = 190           # px for row labels
_MAX_RECTS = 6000      # the longest events are drawn; the rest would be sub-pixel anyway
_COLORS = {"kernel": "#2b7bb9", "gpu_memcpy": "#e08a1e", "cpu_op": "#7a9a3a", "user_annotation": "#9a5fb0"}


@dataclass
class Row:
    key: tuple[int, int]
    label: str
    device: bool


def load_trace(path: str | Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    if isinstance(data, list):  # the JSON array form of the trace format
        data = {"traceEvents": data}
    if "traceEvents" not in data:
        raise ValueError(f"{path}: not a Chrome trace (no 'traceEvents')")
    return data


def _rows(events: list[dict]) -> tuple[dict[tuple[int, int], Row], dict[int, str]]:
    process: dict[int, str] = {}
    thread: dict[tuple[int, int], str] = {}
    for e in events:
        if e.get("ph") != "M":
            continue
        if e.get("name") == "process_name":
            process[e["pid"]] = str(e.get("args", {}).get("name", e["pid"]))
        elif e.get("name") == "thread_name":
            thread[(e["pid"], e["tid"])] = str(e.get("args", {}).get("name", e["tid"]))
    rows: dict[tuple[int, int], Row] = {}
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        key = (e.get("pid"), e.get("tid"))
        if key in rows:
            continue
        pname = process.get(key[0], str(key[0]))
        device = pname.startswith("neuron:")
        label = thread.get(key) or f"{pname} thread {key[1]}"
        if device and not label.startswith("neuron:"):
            label = f"{pname} stream {key[1]}"
        rows[key] = Row(key, label, device)
    return rows, process


def _timeline(spans: list[dict], rows: list[Row], t0: float, t1: float) -> str:
    span = max(t1 - t0, 1e-3)
    index = {r.key: i for i, r in enumerate(rows)}
    height = _ROW * len(rows) + 30
    out = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{_LABEL + _WIDTH + 10}" height="{height}" '
            f'class="timeline" role="img" aria-label="timeline">')]
    for i, r in enumerate(rows):
        y = i * _ROW
        fill = "#eef4fa" if r.device else ("#f6f6f6" if i % 2 else "#ffffff")
        out.append(f'<rect x="0" y="{y}" width="{_LABEL + _WIDTH}" height="{_ROW}" fill="{fill}"/>')
        out.append(f'<text x="4" y="{y + 13}" class="row">{html.escape(r.label)}</text>')
    drawn = sorted(spans, key=lambda e: -e["dur"])[:_MAX_RECTS]
    for e in drawn:
        i = index[(e.get("pid"), e.get("tid"))]
        x = _LABEL + (e["ts"] - t0) / span * _WIDTH
        w = max(e["dur"] / span * _WIDTH, 0.5)
        color = _COLORS.get(e.get("cat", ""), "#8a8a8a")
        tip = f"{e['name']}  {e['dur']:.1f} us"
        est = e.get("args", {}).get("est_trn_us")
        if est is not None:
            tip += f"  (est. Trainium {est} us)"
        out.append(f'<rect x="{x:.2f}" y="{i * _ROW + 2}" width="{w:.2f}" height="{_ROW - 4}" fill="{color}">'
                   f'<title>{html.escape(tip)}</title></rect>')
    for k in range(6):
        x = _LABEL + k * _WIDTH / 5
        out.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 26}" stroke="#ccc"/>')
        out.append(f'<text x="{x:.1f}" y="{height - 12}" class="tick">{k * span / 5 / 1e3:.2f} ms</text>')
    out.append("</svg>")
    return "\n".join(out)


def _table(headers: list[str], rows: list[list[Any]], cls: str) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def summarize_trace(data: dict[str, Any]) -> dict[str, Any]:
    """Rows, spans and per-name totals of a trace: what the report shows."""
    events = data["traceEvents"]
    rows, _ = _rows(events)
    spans = [e for e in events if e.get("ph") == "X" and "dur" in e and (e.get("pid"), e.get("tid")) in rows]
    device: dict[str, dict[str, Any]] = defaultdict(lambda: {"calls": 0, "sim_us": 0.0, "est_us": 0.0, "bound": ""})
    cpu: dict[str, dict[str, Any]] = defaultdict(lambda: {"calls": 0, "total_us": 0.0})
    for e in spans:
        if rows[(e.get("pid"), e.get("tid"))].device:
            d = device[e["name"]]
            d["calls"] += 1
            d["sim_us"] += e["dur"]
            args = e.get("args", {})
            d["est_us"] += float(args.get("est_trn_us", 0.0))
            d["bound"] = args.get("bound", d["bound"])
        elif e.get("cat") == "cpu_op":
            c = cpu[e["name"]]
            c["calls"] += 1
            c["total_us"] += e["dur"]
    return {"rows": rows, "spans": spans, "device": dict(device), "cpu": dict(cpu)}


def write_report(trace_path: str | Path, html_path: str | Path, *, title: str = "torchneuron profile",
                 top: int = 25) -> Path:
    """Write the HTML report of the Chrome trace at ``trace_path`` (``prof.export_chrome_trace``)."""
    data = load_trace(trace_path)
    s = summarize_trace(data)
    rows: dict[tuple[int, int], Row] = s["rows"]
    spans = s["spans"]
    ordered = sorted(rows.values(), key=lambda r: (r.device, r.label))
    t0 = min((e["ts"] for e in spans), default=0.0)
    t1 = max((e["ts"] + e["dur"] for e in spans), default=1.0)
    device_rows = [[name, d["calls"], f"{d['sim_us']:.1f}", f"{d['est_us']:.1f}", d["bound"]]
                   for name, d in sorted(s["device"].items(), key=lambda kv: -kv[1]["sim_us"])[:top]]
    cpu_rows = [[name, c["calls"], f"{c['total_us']:.1f}"]
                for name, c in sorted(s["cpu"].items(), key=lambda kv: -kv[1]["total_us"])[:top]]
    sim_total = sum(d["sim_us"] for d in s["device"].values())
    est_total = sum(d["est_us"] for d in s["device"].values())
    device_count = len({r.key[0] for r in rows.values() if r.device})
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 13px -apple-system, Segoe UI, Helvetica, Arial, sans-serif; margin: 20px; color: #222; }}
h1 {{ font-size: 18px; }} h2 {{ font-size: 15px; margin-top: 24px; }}
table {{ border-collapse: collapse; margin-top: 6px; }}
th, td {{ border: 1px solid #ddd; padding: 3px 8px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
th {{ background: #f0f0f0; }}
.timeline text.row {{ font-size: 11px; fill: #333; }} .timeline text.tick {{ font-size: 10px; fill: #666; }}
.note {{ color: #666; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<p class="summary">{len(spans)} events on {len(rows)} rows ({device_count} neuron device(s));
device time {sim_total:.1f} us on the simulator, {est_total:.1f} us estimated on Trainium;
span {(t1 - t0) / 1e3:.2f} ms.</p>
<h2>Timeline</h2>
<p class="note">CPU threads, then one row per neuron device stream. Hover a box for its name and times.</p>
{_timeline(spans, ordered, t0, t1)}
<h2>Top device ops</h2>
{_table(["name", "calls", "sim us", "est. Trainium us", "bound"], device_rows, "device-ops")}
<h2>Top CPU ops</h2>
{_table(["name", "calls", "total us"], cpu_rows, "cpu-ops")}
<p class="note">Open the trace itself ({html.escape(Path(trace_path).name)}) in https://ui.perfetto.dev for
every event and its arguments.</p>
</body></html>
"""
    out = Path(html_path)
    out.write_text(page)
    return out
