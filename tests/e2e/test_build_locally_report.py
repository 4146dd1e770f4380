"""``build-locally.py --report``: the CFEP-03 comment and the timeline, from real batches.

Two "machines" (two throw-away feedstocks driven through the fake container engine,
tests/fixtures/fake_docker) each build their shard of the configs, one of them with a
failing config; the first merges the second's build_artifacts/ and writes the report.
The timeline is then drawn by a real browser (Debian's chromium, headless): the test reads
back where the browser laid out every config's label and bar.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.debian import apt_install, can_install
from helpers.fake_engine_feedstock import ARM, CPU, CUDA, Feedstock

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="drives bash scripts (POSIX)")

LABELS = {CUDA: "linux-64 cuda12.9", CPU: "linux-64 cpu", ARM: "linux-aarch64 cpu"}


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> tuple[Feedstock, Path]:
    """Machine "alpha" builds shard 1/2, "beta" shard 2/2 (the aarch64 build fails); alpha
    merges beta's folder.  Returns alpha and beta's build_artifacts/."""
    alpha = Feedstock(tmp_path_factory.mktemp("alpha"))
    beta = Feedstock(tmp_path_factory.mktemp("beta"))
    for machine, name in ((alpha, "alpha"), (beta, "beta")):
        shard = ["--shard", "1/2"] if name == "alpha" else ["--shard", "2/2"]
        # alpha keeps a compiler cache (the fake ccache reports 8 hits, 2 misses)
        cache = ["--ccache", str(machine.root.parent / "ccache")] if name == "alpha" else []
        run = machine.run("--all", *shard, *cache, BUILD_MACHINE=name, FAKE_BUILD_FAIL=ARM)
        assert run.returncode in (0, 1), run.stderr
    merged = alpha.review("merge", str(beta.artifacts))
    assert merged.returncode == 1, merged.stderr  # the failed config is not built anywhere
    return alpha, beta.artifacts


def test_the_report_lists_every_config_by_label_with_status_packages_and_machine(release):
    alpha, _ = release
    run = alpha.review("report")
    assert run.returncode == 0, run.stderr
    rows = {
        cells[0]: cells
        for line in run.stdout.splitlines()
        if line.startswith("| ") and not line.startswith(("| config", "|---"))
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert set(rows) == set(LABELS.values())
    summary = alpha.summary()["configs"]
    for name, label in LABELS.items():
        _, status, duration, packages, ccache, machine, commit, reason = rows[label]
        record = summary[name]
        assert status.endswith(record["status"])
        assert reason == "-"  # every config was attempted somewhere
        # not a git checkout: neither the record nor the packages name a commit
        files = ", ".join(p["path"].rsplit("/", 1)[-1] for p in record["packages"])
        assert commit == (f"✅ (none recorded): {files}" if record["status"] == "done" else "-")
        assert packages == str(len(record["packages"]))
        assert machine == record["machine"] and machine in ("alpha", "beta")
        assert duration.count(":") == 2
        assert ccache == ("80%" if machine == "alpha" else "-")
    assert rows[LABELS[ARM]][1] == "❌ failed"
    assert (alpha.artifacts / "report.md").read_text() == run.stdout


def test_the_report_ends_with_the_totals_and_the_sha256sums_lines(release):
    alpha, _ = release
    run = alpha.review("report")
    total = next(line for line in run.stdout.splitlines() if line.startswith("**Total:**"))
    assert "3 configs (" in total and "2 done" in total and "1 failed" in total
    assert "4 packages" in total and "on 2 machine(s)" in total
    sums = (alpha.artifacts / "SHA256SUMS").read_text().splitlines()
    fenced = run.stdout.split("```\n", 1)[1].split("```", 1)[0].splitlines()
    assert fenced == sums and len(sums) == 4


def test_the_report_reads_several_folders_without_a_merge(release, tmp_path: Path):
    alpha, beta = release
    fresh = Feedstock(tmp_path)
    run = fresh.review("report", str(alpha.artifacts), str(beta))
    assert run.returncode == 0, run.stderr
    assert all(f"| {label} |" in run.stdout for label in LABELS.values())


def test_report_of_a_folder_without_a_summary_is_one_clear_error(tmp_path: Path):
    fresh = Feedstock(tmp_path)
    (tmp_path / "empty").mkdir()
    run = fresh.review("report", str(tmp_path / "empty"))
    assert run.returncode == 2
    assert run.stderr.startswith(f"error: review report {tmp_path / 'empty'}: no summary.json")


# ---------------------------------------------------------------- the picture, in a browser


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None and can_install():
        apt_install("chromium")
        found = shutil.which("chromium")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing on CI and could not be installed with apt-get")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


# Runs in the page: where the browser put each config's label and bar, and the SVG's box.
LAYOUT_SCRIPT = """
const svg = document.querySelector('svg').getBoundingClientRect();
const box = r => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom,
                   width: r.width, height: r.height});
const found = {svg: box(svg), labels: {}, bars: {}};
for (const t of document.querySelectorAll('text.label')) {
  found.labels[t.textContent] = box(t.getBoundingClientRect());
}
for (const r of document.querySelectorAll('rect')) {
  const title = r.querySelector('title');
  if (title) found.bars[title.textContent.split(' (')[0]] = box(r.getBoundingClientRect());
}
document.getElementById('layout').textContent = JSON.stringify(found);
"""


def _browser(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_real_browser_draws_every_config_of_the_timeline(release, tmp_path: Path):
    alpha, _ = release
    assert alpha.review("report").returncode == 0
    svg = (alpha.artifacts / "timeline.svg").read_text()
    page = tmp_path / "page.html"
    page.write_text(
        f"<!doctype html><html><body style='margin:0'>{svg}"
        f"<pre id='layout'></pre><script>{LAYOUT_SCRIPT}</script></body></html>"
    )
    dom = _browser("--dump-dom", page.as_uri(), cwd=tmp_path)
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = dom.stdout.split('<pre id="layout">', 1)[1].split("</pre>", 1)[0]
    layout = json.loads(text.replace("&quot;", '"').replace("&amp;", "&"))
    frame = layout["svg"]
    assert set(layout["labels"]) == set(LABELS.values())
    for label, box in layout["labels"].items():
        assert box["width"] > 20 and box["height"] > 5, label
        assert frame["left"] <= box["left"] and box["right"] <= frame["right"], label
        assert frame["top"] <= box["top"] and box["bottom"] <= frame["bottom"], label
    rows = sorted(layout["labels"].values(), key=lambda b: b["top"])
    assert all(a["bottom"] <= b["top"] for a, b in itertools.pairwise(rows))
    # every config built or attempted has a bar inside the picture, right of the labels
    assert set(layout["bars"]) == set(LABELS.values())
    for label, bar in layout["bars"].items():
        assert bar["width"] >= 2 and bar["right"] <= frame["right"], label
        assert bar["left"] > max(b["right"] for b in layout["labels"].values()), label
    # and a picture comes out, for people to look at
    shot = tmp_path / "timeline.png"
    size = f"{int(frame['width'])},{int(frame['height'])}"
    done = _browser(f"--screenshot={shot}", f"--window-size={size}",
                    (alpha.artifacts / "timeline.svg").as_uri(), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr
    if os.environ.get("TIMELINE_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["TIMELINE_SCREENSHOT"])
