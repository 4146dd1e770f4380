"""What `python -m tools` prints, held to golden files (tests/golden/<command>/).

Each command runs in process, as `python -m tools` runs it, on inputs of the tests' own that
no maintenance of this feedstock changes: the torchlike miniature feedstock (its recipe,
.ci_support and conda-forge.yml; tests/fixtures/recipes) and a package made here. A bump or
a fork's tailoring of this feedstock's recipe (tests/e2e/test_bump_clone.py and
tests/e2e/test_fork_clone.py run the suite in such a clone) leaves them as they are. `drift`
asks git for the recipe's last commit: its golden is tests/e2e/test_drift_output.py's. A
change to what a command prints is a diff of its golden file:
`python -m pytest tests/unit/test_command_outputs.py --update-golden`, then review
`git diff tests/golden`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.golden import stable

from tools.__main__ import main

FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "fixtures"
TORCHLIKE = FIXTURES / "recipes" / "torchlike"
PINNING = FIXTURES / "recipes" / "pinning-mini"
CUDA = "linux_64_blas_implmklc_compiler_version14cuda_compiler_version12.9cxx_compiler_version14"


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``python -m tools ARGS`` in the torchlike feedstock: (exit status, stdout made stable)."""
    monkeypatch.chdir(TORCHLIKE)
    monkeypatch.setenv("COLUMNS", "100")

    def run(*args: str, **places: Path) -> tuple[int, str]:
        code = main(list(args))
        return code, stable(capsys.readouterr().out, FIXTURES=FIXTURES, **places)

    return run


@pytest.mark.parametrize(
    ("config", "name"), [("osx_arm64_", "osx_arm64"), (CUDA, "linux_64_mkl_cuda")]
)
def test_render_prints_each_output_its_requirements_and_why_it_is_skipped(
    tools, golden, config, name
):
    code, out = tools("render", config)
    assert code == 0
    golden.check(f"render/{name}.txt", out)


def test_explain_prints_the_readmes_table_of_ci_jobs(tools, golden):
    code, out = tools("explain", "--markdown")
    assert code == 0
    golden.check("explain/torchlike.md", out)


def test_matrix_prints_each_ci_job_with_its_platform_and_variant(tools, golden):
    code, out = tools("matrix", "--pinning", str(PINNING))
    assert code == 0
    golden.check("matrix/torchlike.txt", out)


def _package(folder: Path) -> Path:
    """A small noarch package: a Python module, a CMake file and the info/ conda writes."""
    from conda_package_handling import api as cph

    prefix = folder / "prefix"
    files = {
        "site-packages/toy/__init__.py": "ANSWER = 42\n",
        "share/cmake/Toy/ToyConfig.cmake": 'set(TOY_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")\n',
    }
    index = {
        "name": "toy",
        "version": "1.2.0",
        "build": "pyh1234567_0",
        "build_number": 0,
        "subdir": "noarch",
        "noarch": "python",
        "depends": ["python >=3.11"],
    }
    info = {
        "info/index.json": json.dumps(index),
        "info/files": "".join(f"{name}\n" for name in files),
        "info/paths.json": json.dumps(
            {"paths": [{"_path": n, "path_type": "hardlink"} for n in files], "paths_version": 1}
        ),
    }
    for name, text in {**files, **info}.items():
        (prefix / name).parent.mkdir(parents=True, exist_ok=True)
        (prefix / name).write_text(text)
    name = "toy-1.2.0-pyh1234567_0.conda"
    cph.create(str(prefix), [*files, *info], name, out_folder=str(folder))
    return folder / name


def test_check_prints_each_checks_verdict_per_package(tools, golden, tmp_path):
    package = _package(tmp_path)
    code, out = tools("check", str(package), TMP=tmp_path)
    assert code in (0, 1)
    golden.check("check/toy-noarch.txt", out)
