"""One way to name a config, for every command that takes one (tools/foundation/selection.py).

From the user's side: each command is run as a process in this repository, with the
.ci_support configs it holds, and judged by its exit status, stdout and stderr.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.cli import run_tools
from helpers.fake_engine_feedstock import install_fake_engine
from helpers.in_process import run_python

from tools.foundation.selection import (
    read_labels,
)

ROOT = Path(__file__).resolve().parents[2]
DRIFT_SOURCE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "drift" / "pytorch-src"
# The configs these tests name, read from .ci_support: a fork's tailored matrix keeps them
# meaningful (tests/helpers/feedstock_matrix.py).
MATRIX = feedstock_matrix.configs(ROOT)
CONFIGS = [c.name for c in MATRIX]
LABELS = read_labels(ROOT / ".ci_support", CONFIGS)
BY_PLATFORM: dict[str, list[str]] = {}
for _config in MATRIX:
    BY_PLATFORM.setdefault(_config.prefix, []).append(_config.name)
#: The platform with the most configs (a prefix of several names).
CROWDED = max(BY_PLATFORM, key=lambda p: (len(BY_PLATFORM[p]), p), default=None)
#: A config alone on its platform (conda-forge's osx_arm64), else the first; its platform prefix
#: names it uniquely when it is alone.
ALONE = next((names[0] for names in BY_PLATFORM.values() if len(names) == 1), None)
ONE = ALONE or (CONFIGS[0] if CONFIGS else None)
ONE_PREFIX = next((p for p, names in BY_PLATFORM.items() if ONE in names), None)
LINUX = [c.name for c in MATRIX if c.platform.startswith("linux")]
#: ONE's operating system, as a glob takes it (``osx_*``: conda-forge's three macOS configs).
OS_GLOB = f"{ONE_PREFIX.split('_')[0]}_*" if ONE_PREFIX else "*"
OS_CONFIGS = [c for c in CONFIGS if fnmatch.fnmatchcase(c, OS_GLOB)]

pytestmark = pytest.mark.skipif(not CONFIGS, reason=".ci_support holds no configs")


def _need_several() -> str:
    """The platform prefix several configs start with (an ambiguous prefix)."""
    if CROWDED is None or len(BY_PLATFORM[CROWDED]) < 2:
        pytest.skip(".ci_support holds no platform with two configs")
    return CROWDED


def _need_alone() -> str:
    if ALONE is None:
        pytest.skip(".ci_support holds no config alone on its platform")
    return ALONE


def _need_linux() -> str:
    """A Linux config: build-locally.py's dry run reaches the container step for these."""
    if not LINUX:
        pytest.skip(".ci_support holds no Linux config")
    return LINUX[-1]


def _misspelt(prefix: str) -> str:
    """A platform prefix with its last two letters swapped (``osx_arm64`` -> ``osx_arm46``):
    a glob of it matches nothing."""
    return prefix[:-2] + prefix[-1] + prefix[-2]


def _unique_prefix(config: str) -> str:
    return next(config[:n] for n in range(1, len(config) + 1) if _starts(config[:n]) == [config])


def _tools(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run_tools(*args, cwd=cwd)


def _build_locally(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_python([sys.executable, ROOT / "build-locally.py", *args], cwd=ROOT, env=env)


def _with_an_engine(tmp_path: Path) -> dict[str, str]:
    """An environment whose `docker` answers (tests/fixtures/fake_docker): a dry run probes the
    engine as the run does, and this machine may have none."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    install_fake_engine(bin_dir)
    env = {k: v for k, v in os.environ.items() if k not in ("DOCKER_EXECUTABLE", "DOCKER_IMAGE")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", FAKE_DOCKER_STATE=str(tmp_path / "s"))
    return env


def _starts(prefix: str) -> list[str]:
    return [c for c in CONFIGS if c.startswith(prefix)]


def _error(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The error's lines: stderr from the `error:` line on (progress lines may come first)."""
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("error: ")) :]


def _ambiguity(result: subprocess.CompletedProcess[str], text: str) -> list[str]:
    """The names an "ambiguous" error lists, after checking its first line and exit status."""
    first, *names = _error(result)
    assert first == (
        f"error: config {text!r} is ambiguous, it matches {len(names)} configs; "
        "give more of the name:"
    )
    assert all(name.startswith("  ") for name in names)
    return _names(names)


def _names(lines: list[str]) -> list[str]:
    """The config names of ``  LABEL  NAME`` lines, after checking each label is the name's."""
    for line in lines:
        label, name = line.strip().rsplit("  ", 1)
        assert LABELS[name] == label.strip()
    return [line.split()[-1] for line in lines]


def _closest(result: subprocess.CompletedProcess[str], text: str) -> list[str]:
    first, *names = _error(result)
    assert first == f"error: no config named {text!r} in .ci_support/; the closest are:"
    return _names(names)


# ------------------------------------------------------------------ render


def test_render_accepts_a_unique_prefix() -> None:
    config = _need_alone()
    result = _tools("render", ONE_PREFIX, "--json")
    assert result.returncode == 0, result.stderr
    assert {o["config"] for o in json.loads(result.stdout)} == {config}


@pytest.mark.parametrize("form", ["{}.yaml", ".ci_support/{}.yaml", "{}"])
def test_render_accepts_the_name_the_file_name_and_the_path(form: str) -> None:
    result = _tools("render", form.format(ONE), "--json")
    assert result.returncode == 0, result.stderr
    assert {o["config"] for o in json.loads(result.stdout)} == {ONE}


def test_render_with_an_ambiguous_prefix_lists_every_match_one_per_line() -> None:
    prefix = _need_several()
    assert _ambiguity(_tools("render", prefix), prefix) == BY_PLATFORM[prefix]


def test_render_with_an_unknown_name_lists_the_three_closest() -> None:
    # a config's name with a stretch from its middle left out, as a hurried copy gives it
    config = CONFIGS[-1]
    typo = config[: len(config) // 3] + config[len(config) // 2 :]
    names = _closest(_tools("render", typo), typo)
    assert len(names) == min(3, len(CONFIGS)) and config in names


def test_render_takes_a_glob_and_renders_every_match_under_its_own_heading() -> None:
    # one config renders without a heading
    glob, matched = (OS_GLOB, OS_CONFIGS) if len(OS_CONFIGS) > 1 else ("*", CONFIGS)
    if len(matched) < 2:
        pytest.skip(".ci_support holds one config: no glob matches two")
    result = _tools("render", glob, "--built-only")
    assert result.returncode == 0, result.stderr
    headings = [line for line in result.stdout.splitlines() if line.startswith("== ")]
    assert headings == [f"== {LABELS[c]}  {c} ==" for c in matched]


def test_render_filter_alone_renders_every_config_it_matches() -> None:
    prefix = sorted(BY_PLATFORM)[-1]
    result = _tools("render", "--filter", f"{prefix}_*", "--json")
    assert result.returncode == 0, result.stderr
    rendered = {o["config"] for o in json.loads(result.stdout)}
    assert rendered == set(BY_PLATFORM[prefix])


def test_render_filter_excluding_the_named_config_is_an_error() -> None:
    others = [c for c in CONFIGS if c != ONE]
    if not others:
        pytest.skip(".ci_support holds one config: no filter can leave another")
    result = _tools("render", ONE, "--filter", others[0])
    assert result.returncode == 2
    assert result.stderr == f"error: config {ONE!r} is excluded by --filter {others[0]!r}\n"


def test_render_without_config_or_filter_says_what_to_give() -> None:
    result = _tools("render")
    assert result.returncode == 2
    assert result.stderr.startswith("error: name a CONFIG") and "--filter" in result.stderr


# ------------------------------------------------------------------ check, drift


def test_check_config_with_an_ambiguous_prefix_lists_every_match(tmp_path: Path) -> None:
    prefix = _need_several()
    result = _tools("check", "--config", prefix, str(tmp_path))
    assert _ambiguity(result, prefix) == BY_PLATFORM[prefix]


def test_check_config_accepts_a_unique_prefix_and_renders_it(tmp_path: Path) -> None:
    # The config is rendered first; the empty directory is what fails, afterwards.
    _need_alone()
    result = _tools("check", "--config", ONE_PREFIX, str(tmp_path))
    assert result.returncode == 2
    assert "holds no .conda or .tar.bz2 packages" in result.stderr


def test_drift_config_with_an_unknown_name_lists_the_three_closest() -> None:
    # the platform prefix without its underscore (conda-forge's win_64 typed as win64)
    prefix = sorted(BY_PLATFORM)[-1]
    typo = prefix.replace("_", "")
    result = _tools("drift", "--source", str(DRIFT_SOURCE), "--offline", "--config", typo)
    names = _closest(result, typo)
    group = BY_PLATFORM[prefix]
    assert len(names) == min(3, len(CONFIGS))
    assert set(names[: min(3, len(group))]) <= set(group)


def test_drift_config_takes_globs_and_unique_prefixes() -> None:
    result = _tools(
        "drift",
        "--source",
        str(DRIFT_SOURCE),
        "--offline",
        "--json",
        "--config",
        OS_GLOB,
        "--config",
        _unique_prefix(CONFIGS[-1]),
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    configs = {c for row in rows for r in row["recipe"] for c in r["configs"]}
    expected = {*OS_CONFIGS, CONFIGS[-1]}
    assert configs and configs <= expected


# ------------------------------------------------------------------ build-locally.py


def test_build_locally_with_an_ambiguous_prefix_lists_every_match_and_starts_nothing() -> None:
    prefix = _need_several()
    result = _build_locally(prefix, "--dry-run")
    assert _ambiguity(result, prefix) == BY_PLATFORM[prefix]
    assert result.stdout == ""


def test_build_locally_accepts_a_unique_prefix(tmp_path: Path) -> None:
    config = _need_linux()
    result = _build_locally(_unique_prefix(config), "--dry-run", env=_with_an_engine(tmp_path))
    assert result.returncode == 0, result.stderr
    assert f"CONFIG={config}" in result.stdout


def test_build_locally_with_an_unknown_name_lists_the_three_closest() -> None:
    _need_linux()
    names = _closest(_build_locally("linux_99", "--dry-run"), "linux_99")
    assert len(names) == min(3, len(CONFIGS))
    assert all(n.startswith("linux_") for n in names[: min(3, len(LINUX))])


def _closest_to_glob(result: subprocess.CompletedProcess[str], glob: str) -> list[str]:
    first, *names = _error(result)
    assert first == (
        f"error: pattern {glob!r} matches none of the {len(CONFIGS)} configs; the closest are:"
    )
    return _names(names)


def test_build_locally_with_a_misspelt_glob_lists_the_three_closest() -> None:
    glob = f"{_misspelt(ONE_PREFIX)}*"
    names = _closest_to_glob(_build_locally(glob), glob)
    assert len(names) == min(3, len(CONFIGS)) and names[0] == BY_PLATFORM[ONE_PREFIX][0]


def test_build_locally_list_with_a_misspelt_glob_lists_the_closest_not_every_config() -> None:
    glob = f"{_misspelt(ONE_PREFIX)}*"
    result = _build_locally("--list", glob)
    assert result.stdout == ""
    assert _closest_to_glob(result, glob)[0] == BY_PLATFORM[ONE_PREFIX][0]


def test_build_locally_list_shows_only_what_a_glob_matches() -> None:
    result = _build_locally("--list", OS_GLOB)
    assert result.returncode == 0, result.stderr
    listed = [line.split()[-1] for line in result.stdout.splitlines()]
    assert listed == OS_CONFIGS


def test_render_with_a_misspelt_glob_lists_the_closest_too() -> None:
    glob = f"{_misspelt(ONE_PREFIX)}*"
    names = _closest_to_glob(_tools("render", glob), glob)
    assert names[0] == BY_PLATFORM[ONE_PREFIX][0]


def test_render_takes_a_label() -> None:
    result = _tools("render", LABELS[ONE], "--json")
    assert result.returncode == 0, result.stderr
    by_name = _tools("render", ONE, "--json")
    assert result.stdout == by_name.stdout


def test_check_config_takes_a_label(tmp_path: Path) -> None:
    # rendered first, so only the empty directory fails; an unknown label would fail first
    result = _tools("check", "--config", LABELS[ONE], str(tmp_path))
    assert result.returncode == 2
    assert "holds no .conda or .tar.bz2 packages" in result.stderr


def test_build_locally_takes_a_label_and_a_label_filter(tmp_path: Path) -> None:
    config = _need_linux()
    platform = LABELS[config].split()[0]
    result = _build_locally(LABELS[config], "--dry-run", env=_with_an_engine(tmp_path))
    assert result.returncode == 0, result.stderr
    assert f"CONFIG={config}" in result.stdout
    listed = _build_locally("--list", "--filter", f"{platform} *")
    on_platform = [c.name for c in MATRIX if c.platform == platform]
    assert [line.split()[-1] for line in listed.stdout.splitlines()] == on_platform


def test_runners_filter_takes_a_label_glob() -> None:
    platform = LABELS[ONE].split()[0]
    result = _tools("runners", "--filter", f"{platform[:-1]}* *", "--json")
    assert result.returncode == 0, result.stderr
    builds = json.loads(result.stdout)["build"]
    assert [b["config"] for b in builds] == [
        c.name for c in MATRIX if c.platform.startswith(platform[:-1])
    ]
    assert [b["label"] for b in builds] == [LABELS[b["config"]] for b in builds]
