"""Damaged inputs, from the command line: every command names the file at fault, its line
and the reason in the same words, and says what to do.

- An empty or incomplete ``.ci_support`` file is blamed on itself, with "rerender", by
  every command that reads it (never on recipe/meta.yaml, which only uses its keys).
- A YAML error reads ``FILE:LINE: not valid YAML (reason)`` whichever command hits it and
  whichever file it is in (variant file, conda-forge.yml, pinning, meta.yaml); JSON a user
  hands in reads ``FILE:LINE: not valid JSON (reason)``.
- A pinning cut short is named as incomplete, a binary one is refused from its first bytes,
  and without any pinning the error says how to get one without conda.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.in_process import run_python

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "fixtures" / "drift" / "pytorch-src"
# The config these tests hand to the commands, read from .ci_support: a linux-64 CPU one
# where the matrix has one (the fastest to render), else a linux-64 one, else any.
_LINUX = feedstock_matrix.prefer(
    {"platform": "linux-64", "cuda": False}, {"platform": "linux-64"}, {}
)
LINUX_CONFIG = _LINUX.name if _LINUX else "no-config-in-ci-support"
RERENDER = "rerender the feedstock"
GIT_CLONE = "git clone --depth 1 https://github.com/conda-forge/conda-forge-pinning-feedstock"


@pytest.fixture
def feedstock(tmp_path: Path) -> Path:
    """This repository's recipe, variant files, conda-forge.yml and build-locally.py, to damage
    (the toolkit itself stays where it is, on PYTHONPATH)."""
    root = tmp_path / "feedstock"
    for name in ("recipe", ".ci_support"):
        shutil.copytree(ROOT / name, root / name)
    for name in ("conda-forge.yml", "build-locally.py"):
        shutil.copy2(ROOT / name, root / name)
    return root


def _run(root: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``python -m tools ARGV`` or ``python build-locally.py ARGV`` inside ``root``."""
    program = [str(root / argv[0])] if argv[0] == "build-locally.py" else ["-m", "tools"]
    args = argv[1:] if argv[0] == "build-locally.py" else argv
    env = {k: v for k, v in os.environ.items() if k not in ("CONDA_PREFIX", "CI")}
    env["PYTHONPATH"] = str(ROOT)
    return run_python([sys.executable, *program, *args], cwd=root, env=env)


def _error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    assert result.returncode == 2, result.stderr
    return lines[0]


# Every command that reads a variant file, and what it is asked to do with it.
RENDERING = {
    "render": ["render", LINUX_CONFIG],
    "check": ["check", "--config", LINUX_CONFIG, "PACKAGES"],
    "explain": ["explain"],
    "drift": ["drift", "--source", str(SOURCE), "--config", LINUX_CONFIG, "--offline"],
}
READING = {
    "runners": ["runners"],
    "build-locally-list": ["build-locally.py", "--list", "--shard", "1/1"],
    "build-locally": ["build-locally.py", LINUX_CONFIG, "--dry-run"],
}


def _argv(argv: list[str], tmp_path: Path) -> list[str]:
    packages = tmp_path / "packages"
    packages.mkdir(exist_ok=True)
    return [str(packages) if arg == "PACKAGES" else arg for arg in argv]


# ------------------------------------------------------------------ empty and incomplete


@pytest.mark.parametrize(
    "argv", [*RENDERING.values(), *READING.values()], ids=[*RENDERING, *READING]
)
def test_an_empty_variant_file_is_blamed_on_itself(feedstock: Path, tmp_path, argv) -> None:
    config = feedstock / ".ci_support" / f"{LINUX_CONFIG}.yaml"
    config.write_text("")
    result = _run(feedstock, _argv(argv, tmp_path))
    text = result.stdout + result.stderr
    assert f"{config}: " in text and RERENDER in text, text
    assert "meta.yaml" not in text
    if argv[0] != "build-locally.py" or "--list" in argv:  # the batch's statuses are its own
        assert _error_line(result).startswith(f"error: {config}: ")


@pytest.mark.parametrize("argv", RENDERING.values(), ids=RENDERING)
def test_an_incomplete_variant_file_is_blamed_on_itself(feedstock: Path, tmp_path, argv) -> None:
    if len(feedstock_matrix.configs()) < 2:
        # the gap shows against the configs beside it (tools/render/meta.py, _siblings_define)
        pytest.skip(".ci_support holds one config: no other variant file sets what it lacks")
    config = feedstock / ".ci_support" / f"{LINUX_CONFIG}.yaml"
    lines = config.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if line.startswith("cuda_compiler_version:"))
    config.write_text("".join(lines[:cut]))  # a file cut short: the keys after it are gone
    line = _error_line(_run(feedstock, _argv(argv, tmp_path)))
    assert line.startswith(f"error: {config}: no 'cuda_compiler_version', which ")
    assert "the variant file is incomplete" in line and RERENDER in line


def test_a_name_no_variant_file_sets_is_still_the_recipes_mistake(feedstock: Path) -> None:
    meta = feedstock / "recipe" / "meta.yaml"
    text = meta.read_text()
    assert "{{ blas_impl }}" in text
    meta.write_text(text.replace("{{ blas_impl }}", "{{ blas_implx }}", 1))
    line = _error_line(_run(feedstock, ["render", LINUX_CONFIG]))
    assert line.startswith(f"error: {meta}:") and "'blas_implx' is undefined" in line


# ------------------------------------------------------------------ YAML errors, one form


@pytest.mark.parametrize(
    "argv", [*RENDERING.values(), *READING.values()], ids=[*RENDERING, *READING]
)
def test_a_variant_file_that_is_not_yaml_gives_file_line_and_reason(
    feedstock: Path, tmp_path, argv
) -> None:
    config = feedstock / ".ci_support" / f"{LINUX_CONFIG}.yaml"
    lines = config.read_text().splitlines(keepends=True)
    lines[2] = "  - [x: :\n"
    config.write_text("".join(lines))
    result = _run(feedstock, _argv(argv, tmp_path))
    expected = f"{config}:3: not valid YAML (mapping values are not allowed in this context)"
    assert expected in result.stderr + result.stdout
    if argv[0] != "build-locally.py" or "--list" in argv:
        line = _error_line(result)
        assert line.startswith(f"error: {expected}") and f"); {RERENDER}" in line


@pytest.mark.parametrize(
    "argv",
    [["render", LINUX_CONFIG], ["explain"], ["runners"], [*RENDERING["drift"]]],
    ids=["render", "explain", "runners", "drift"],
)
def test_a_conda_forge_yml_that_is_not_yaml_gives_file_line_and_reason(
    feedstock: Path, argv
) -> None:
    forge = feedstock / "conda-forge.yml"
    lines = forge.read_text().count("\n")
    with forge.open("a") as stream:
        stream.write("bad: [\n")
    line = _error_line(_run(feedstock, argv))
    assert line == (
        f"error: {forge}:{lines + 2}: not valid YAML "
        "(expected the node content, but found '<stream end>')"
    )


def test_meta_yaml_that_is_not_yaml_gives_file_line_and_reason(feedstock: Path) -> None:
    meta = feedstock / "recipe" / "meta.yaml"
    lines = meta.read_text().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if line.startswith("about:"))
    lines.insert(number, "  bad: [x: :\n")
    meta.write_text("".join(lines))
    line = _error_line(_run(feedstock, ["render", LINUX_CONFIG]))
    assert line.startswith(f"error: {meta}:{number + 1}: not valid YAML (")


def test_a_pinning_with_a_control_character_gives_its_line_not_a_question_mark(
    feedstock: Path, tmp_path: Path
) -> None:
    pinning = tmp_path / "conda_build_config.yaml"
    pinning.write_bytes(b"python:\n  - 3.12\n\x01: [\n")
    line = _error_line(_run(feedstock, ["matrix", "--pinning", str(pinning), "--check"]))
    assert line == (
        f"error: {pinning}:3: not valid YAML (character #x0001: control characters are not allowed)"
    )


def test_a_summary_json_that_is_not_json_gives_file_line_and_reason(
    feedstock: Path, tmp_path: Path
) -> None:
    durations = tmp_path / "summary.json"
    durations.write_text('{\n  "configs": {\n    "a": \n}\n')
    argv = ["build-locally.py", "--all", "--list", "--shard", "1/2", "--durations", str(durations)]
    line = _error_line(_run(feedstock, argv))
    assert f"{durations}:4: not valid JSON (Expecting value)" in line


# ------------------------------------------------------------------ the pinning


def test_a_truncated_pinning_is_named_as_incomplete(
    feedstock: Path, tmp_path: Path, pinning_dir: Path
) -> None:
    text = (pinning_dir / "conda_build_config.yaml").read_text()
    cut = tmp_path / "conda_build_config.yaml"
    cut.write_text(text[: text.index("\nzip_keys:")] + "\n")  # before zip_keys and python
    line = _error_line(_run(feedstock, ["matrix", "--pinning", str(cut), "--check"]))
    assert line.startswith(f"error: {cut}: no 'python', which the migration ")
    assert "the pinning looks incomplete (truncated?)" in line and GIT_CLONE in line


def test_a_pinning_cut_inside_its_zip_keys_is_named_as_incomplete(
    feedstock: Path, tmp_path: Path, pinning_dir: Path
) -> None:
    text = (pinning_dir / "conda_build_config.yaml").read_text()
    cut = tmp_path / "conda_build_config.yaml"
    cut.write_text(text[: text.index("\npython:")] + "\n")
    line = _error_line(_run(feedstock, ["matrix", "--pinning", str(cut), "--check"]))
    assert line.startswith(f"error: {cut}: zip_keys names 'python', which the file never sets")
    assert "incomplete" in line


def test_a_migration_whose_ordering_misses_a_value_is_named_with_the_value(
    feedstock: Path, pinning_dir: Path
) -> None:
    # A maintainer's own Python migration that orders only the new Pythons: conda-smithy
    # stops on a bare ValueError there; we name the file, the key and the missing value.
    migration = feedstock / ".ci_support" / "migrations" / "python315.yaml"
    migration.write_text(
        "migrator_ts: 1790000000\n"
        "__migrator:\n  kind: version\n  migration_number: 1\n  use_local: true\n"
        "  ordering:\n    python:\n      - 3.14.* *_cp314\n      - 3.15.* *_cp315\n"
        "python:\n  - 3.15.* *_cp315\n"
    )
    line = _error_line(_run(feedstock, ["matrix", "--pinning", str(pinning_dir), "--check"]))
    assert line.startswith(
        f"error: {migration}: its `__migrator: ordering: python:` does not list "
    )
    assert "'3.10.* *_cpython'" in line and "add it to the ordering" in line


def test_without_a_pinning_the_error_says_how_to_get_one_without_conda(feedstock: Path) -> None:
    line = _error_line(_run(feedstock, ["matrix", "--check"]))
    assert line.startswith("error: no conda-forge pinning found")
    assert GIT_CLONE in line and "--pinning conda-forge-pinning-feedstock/recipe" in line


def test_without_a_pinning_the_error_says_how_to_bring_one_to_a_machine_without_internet(
    feedstock: Path,
) -> None:
    """Before: its only way was a `git clone` from GitHub (issue 43, item 8)."""
    line = _error_line(_run(feedstock, ["matrix", "--write"]))
    assert line.endswith(
        "without internet, make that clone on a machine that has it and copy the folder here "
        '(docs/build-locally.md, "Air-gapped builds")'
    )


def test_a_clone_of_the_pinning_feedstock_is_a_pinning(
    feedstock: Path, tmp_path: Path, pinning_dir: Path
) -> None:
    # conda-forge-pinning-feedstock keeps recipe/conda_build_config.yaml and recipe/migrations/.
    clone = tmp_path / "conda-forge-pinning-feedstock"
    (clone / "recipe").mkdir(parents=True)
    shutil.copy2(pinning_dir / "conda_build_config.yaml", clone / "recipe")
    migrations = pinning_dir / "share" / "conda-forge" / "migrations"
    if migrations.is_dir():
        shutil.copytree(migrations, clone / "recipe" / "migrations")
    for given in (clone, clone / "recipe"):
        result = _run(feedstock, ["matrix", "--pinning", str(given), "--check"])
        assert result.returncode == 0, result.stderr
        assert "up to date" in result.stdout


def test_a_binary_pinning_is_refused_without_reading_it_whole(
    feedstock: Path, tmp_path: Path
) -> None:
    wheel = tmp_path / "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    with wheel.open("wb") as stream:  # a zip's header, then 190 MB (sparse: no disk used)
        stream.write(b"PK\x03\x04\x14\x00\x00\x00\x08\x00")
        stream.truncate(190 * 1024 * 1024)
    # The peak of this process's own memory (VmHWM). Not ru_maxrss: Linux carries the
    # forking parent's peak into it across exec, so it grows with the pytest process.
    probe = (
        "import sys\n"
        "from pathlib import Path\n"
        "from tools.__main__ import main\n"
        "code = main(sys.argv[1:])\n"
        "status = Path('/proc/self/status').read_text().splitlines()\n"
        "peak = next(line.split()[1] for line in status if line.startswith('VmHWM:'))\n"
        "print('maxrss', peak, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, "matrix", "--pinning", str(wheel), "--check"],
        cwd=feedstock,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"error: {wheel}: not a text file (NUL at byte ")
    peak_kib = int(result.stderr.split("maxrss ")[1].split()[0])
    assert peak_kib < 120 * 1024, f"read {peak_kib} KiB for a 190 MB file it refuses"
