"""`python -m torchneuron profile script.py [args]`: the script runs with its arguments under the profiler;
a Chrome trace and a self-contained HTML report (timeline + top ops) are written; its exit code is kept."""

import json
import subprocess
import sys
import textwrap
from html.parser import HTMLParser

SCRIPT = textwrap.dedent("""\
    import sys
    import torch

    steps, code = int(sys.argv[1]), int(sys.argv[2])
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).to("neuron")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = model(torch.randn(16, 32, device="neuron")).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    print("trained", steps)
    sys.exit(code)
""")


class _Report(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.svg_rects = 0
        self.row_labels: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._stack: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        self._stack.append(tag)
        if tag == "rect" and "svg" in self._stack:
            self.svg_rects += 1
        if tag == "table":
            self._table = attrs.get("class", "")
            self.tables[self._table] = []
        if tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if self._stack and self._stack[-1] == tag:
            self._stack.pop()
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._stack and self._stack[-1] == "text" and "svg" in self._stack:
            self.row_labels.append(data)


def test_profile_command_writes_trace_and_report(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / "prof"
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "torchneuron", "profile", "--out-dir", str(out),
                           str(script), "2", "3"], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # the script's own exit code
    assert "trained 2" in proc.stdout and "NEURON total" in proc.stdout and "est trn us" in proc.stdout

    trace = json.loads((out / "trace.json").read_text())
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert {"aten::addmm", "aten::mm"} <= {k["name"] for k in kernels}

    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "http://" not in html.replace(
        "http://www.w3.org/2000/svg", "")
    report = _Report()
    report.feed(html)
    assert report.tags.count("svg") == 1 and report.svg_rects > len(kernels)
    assert "neuron:0 stream 0" in report.row_labels
    device_ops = report.tables["device-ops"]
    assert device_ops[0] == ["name", "calls", "sim us", "est. Trainium us", "bound"]
    by_name = {r[0]: r for r in device_ops[1:]}
    assert int(by_name["aten::addmm"][1]) == 4 and float(by_name["aten::addmm"][3]) > 0
    assert report.tables["cpu-ops"][0] == ["name", "calls", "total us"] and len(report.tables["cpu-ops"]) > 3


def test_profile_command_names_a_missing_script(tmp_path, capsys):
    from torchneuron.profiler.run import profile_script

    assert profile_script(str(tmp_path / "nope.py"), []) == 2
    assert "no such script" in capsys.readouterr().err
