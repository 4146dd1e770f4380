"""``python -m tools drift`` end to end: outputs, --check, --update-readme, bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fixtures.cli import default_sigint, run_tools
from fixtures.drift.synthetic import Output

from tools.__main__ import main
from tools.drift import channel as channel_io
from tools.drift import recipe as recipe_io

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "drift"
SOURCE = FIXTURES / "pytorch-src"
CHANNEL = FIXTURES / "channeldata.json"


def _rendered(sympy: str) -> list:
    variant = {
        "cuda_compiler_version": "None",
        "blas_impl": "generic",
        "python": "3.12.* *_cpython",
    }
    return [
        (
            "linux_64_cpu",
            [
                Output(
                    "libtorch",
                    {"host": ("sleef 3.8.*", "setuptools <82", "numpy", "typing_extensions")},
                    variant,
                ),
                Output("pytorch", {"run": ("python >=3.12,<3.13.0a0", f"sympy {sympy}")}, variant),
            ],
        )
    ]


@pytest.fixture
def recipe_dir(tmp_path: Path) -> Path:
    path = tmp_path / "recipe"
    path.mkdir()
    (path / "meta.yaml").write_text("# only its presence matters here; rendering is replaced\n")
    return path


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["drift", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_tools("drift", *args, timeout=120)


def test_json_rows_for_source_tree_and_channel_data(monkeypatch, capsys, recipe_dir) -> None:
    monkeypatch.setattr(
        recipe_io, "render_all", lambda root, configs=(), recipe_dir=None: _rendered(">=1.13.3")
    )
    code, out, _ = _run(
        capsys,
        "--source",
        str(SOURCE),
        "--channel-data",
        str(CHANNEL),
        "--recipe-dir",
        str(recipe_dir),
        "--json",
    )
    assert code == 0
    document = json.loads(out)
    rows = {(r["package"], r["compared_with"]): r for r in document["rows"]}
    assert rows[("sleef", "build/host")]["status"] == "ok"
    assert rows[("sleef", "build/host")]["conda_forge"]["latest"] == "3.9.0"
    setuptools = rows[("setuptools", "build/host")]  # upstream >=70.1.0,<82, recipe <82
    assert (setuptools["status"], setuptools["reason"]) == (
        "looser",
        "recipe admits 70.0.0, which upstream rejects",
    )
    assert document["inputs"]["recipe_configs"] == ["linux_64_cpu"]


def test_check_exits_1_on_a_conflict(monkeypatch, capsys, recipe_dir, tmp_path) -> None:
    monkeypatch.setattr(
        recipe_io, "render_all", lambda root, configs=(), recipe_dir=None: _rendered("<1.10")
    )
    wheel_metadata = _wheel(tmp_path, "Requires-Dist: sympy>=1.13.3\n")
    code, out, err = _run(
        capsys,
        "--wheel",
        str(wheel_metadata),
        "--offline",
        "--recipe-dir",
        str(recipe_dir),
        "--check",
    )
    assert code == 1
    assert "conflict" in out
    assert "problems: 1 conflict(s) between upstream and the recipe: sympy" in err


def test_check_passes_without_conflicts(monkeypatch, capsys, recipe_dir, tmp_path) -> None:
    monkeypatch.setattr(
        recipe_io, "render_all", lambda root, configs=(), recipe_dir=None: _rendered(">=1.13.3")
    )
    code, _, _ = _run(
        capsys,
        "--wheel",
        str(_wheel(tmp_path, "Requires-Dist: sympy>=1.13.3\n")),
        "--offline",
        "--recipe-dir",
        str(recipe_dir),
        "--check",
    )
    assert code == 0


def test_update_readme_rewrites_only_the_section(monkeypatch, capsys, recipe_dir, tmp_path) -> None:
    monkeypatch.setattr(
        recipe_io, "render_all", lambda root, configs=(), recipe_dir=None: _rendered(">=1.13.3")
    )
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- drift-table:start -->\n<!-- drift-table:end -->\nafter\n")
    code, out, err = _run(
        capsys,
        "--wheel",
        str(_wheel(tmp_path, "Requires-Dist: sympy>=1.13.3\n")),
        "--offline",
        "--recipe-dir",
        str(recipe_dir),
        "--update-readme",
        "--readme",
        str(readme),
    )
    assert code == 0 and out == ""
    text = readme.read_text()
    assert text.startswith("before\n<!-- drift-table:start -->\n| package | upstream |")
    assert "| `sympy` | >=1.13.3 | >=1.13.3 |" in text
    assert text.endswith("<!-- drift-table:end -->\nafter\n")
    assert "drift table updated (1 rows)" in err


def test_unreachable_channel_leaves_the_column_unknown(monkeypatch, capsys, tmp_path) -> None:
    def offline(*args, **kwargs):
        raise OSError("error resolving DNS")

    monkeypatch.setattr(channel_io, "query_channel", offline)
    code, out, err = _run(
        capsys, "--wheel", str(_wheel(tmp_path, "Requires-Dist: sympy>=1.13.3\n")), "--no-recipe"
    )
    assert code == 0
    assert "conda-forge unreachable (error resolving DNS)" in err
    assert "sympy" in out and "note: conda-forge column unknown: conda-forge unreachable" in out


def test_channel_option_queries_a_local_channel(capsys, tmp_path) -> None:
    channel = tmp_path / "channel"
    (channel / "noarch").mkdir(parents=True)
    (channel / "noarch" / "repodata.json").write_text(
        (FIXTURES / "repodata-noarch.json").read_text()
    )
    (channel / "linux-64").mkdir()
    (channel / "linux-64" / "repodata.json").write_text('{"packages": {}, "packages.conda": {}}')
    wheel = _wheel(tmp_path, "Requires-Dist: sympy>=1.13.3\n")
    code, out, _ = _run(
        capsys, "--wheel", str(wheel), "--no-recipe", "--channel", str(channel), "--json"
    )
    assert code == 0
    (row,) = json.loads(out)["rows"]
    assert row["conda_forge"]["latest"] == "1.14.0" and row["conda_forge"]["versions"] == 4


def test_missing_renderer_leaves_the_recipe_column_unknown(
    monkeypatch, capsys, recipe_dir, tmp_path
) -> None:
    def unavailable(root, configs=(), recipe_dir=None):
        raise recipe_io.RendererUnavailable(
            "the recipe renderer (tools.render.config) is unavailable: gone"
        )

    monkeypatch.setattr(recipe_io, "render_all", unavailable)
    code, out, _ = _run(
        capsys,
        "--wheel",
        str(_wheel(tmp_path, "Requires-Dist: sympy\n")),
        "--offline",
        "--recipe-dir",
        str(recipe_dir),
        "--markdown",
    )
    assert code == 0 and "recipe not rendered: the recipe renderer" in out


def _wheel(tmp_path: Path, requires: str) -> Path:
    import zipfile

    path = tmp_path / "torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            "torch-2.13.0+cpu.dist-info/METADATA",
            f"Metadata-Version: 2.4\nName: torch\nVersion: 2.13.0+cpu\n{requires}",
        )
    return path


# -- bad input: one line, exit 2, no traceback (run as a real process) ------------------------


def _assert_one_line_error(result: subprocess.CompletedProcess, fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_not_a_source_tree(tmp_path: Path) -> None:
    _assert_one_line_error(
        _cli("--source", str(tmp_path), "--no-recipe", "--offline"), "not a PyTorch source tree"
    )


def test_corrupt_wheel(tmp_path: Path) -> None:
    wheel = tmp_path / "torch-2.13.0-cp312-cp312-linux_x86_64.whl"
    wheel.write_bytes(b"not a zip")
    _assert_one_line_error(_cli("--wheel", str(wheel), "--no-recipe", "--offline"), "not a wheel")


def test_unreadable_channel_json(tmp_path: Path) -> None:
    data = tmp_path / "repodata.json"
    data.write_text("{not json")
    _assert_one_line_error(
        _cli("--source", str(SOURCE), "--no-recipe", "--channel-data", str(data)),
        "repodata.json:1: not valid JSON (",
    )


def test_readme_without_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# nothing to replace\n")
    result = _cli(
        "--source",
        str(SOURCE),
        "--no-recipe",
        "--offline",
        "--update-readme",
        "--readme",
        str(readme),
    )
    _assert_one_line_error(result, "no <!-- drift-table:start --> marker")
    assert readme.read_text() == "# nothing to replace\n"


def test_nothing_to_compare() -> None:
    _assert_one_line_error(_cli("--no-recipe", "--offline"), "nothing to compare")


# -- Ctrl-C ------------------------------------------------------------------------------------


def test_ctrl_c_while_rendering_prints_interrupted_and_exits_130(tmp_path: Path) -> None:
    """SIGINT to the real command while it renders the recipe: `interrupted`, exit 130, and
    no `FAILED:` step line (an interrupt is not a failed render)."""
    import os
    import signal
    import sys

    from tools.foundation.diskcache import ENV

    wheel = _wheel(tmp_path, "Requires-Dist: sympy>=1.13.3\n")
    # An empty render cache of its own (the documented PYTORCH_FEEDSTOCK_CACHE): every
    # configuration is really rendered, seconds of work, so the SIGINT sent on the step's first
    # line lands inside the render; renders kept from other tests end it in 0.1 s.
    env = {**os.environ, ENV: str(tmp_path / "render-cache")}
    process = subprocess.Popen(
        [sys.executable, "-m", "tools", "drift", "--offline", "--wheel", str(wheel)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_sigint,
    )
    try:
        first = process.stderr.readline()
        assert first.startswith("==> render"), first
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=180)
    finally:
        process.kill()
    assert process.returncode == 130, first + err
    assert err.strip().splitlines()[-1] == "interrupted", err
    assert "FAILED" not in err and "Traceback" not in err, err
    assert "done: render" not in err, err  # it was stopped mid-render, not after it
