"""conda-forge.yml is read through one loader that checks it as conda-smithy does: one line
naming the file, the line, the key or value and the closest valid spelling."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.foundation.errors import UserError
from tools.smithy.forge_yml import load_forge_yml

ROOT = Path(__file__).resolve().parent.parent


def _with(tmp_path: Path, old: str, new: str) -> Path:
    """This repository's conda-forge.yml with one edit, in a folder of its own."""
    text = (ROOT / "conda-forge.yml").read_text()
    assert old in text
    (tmp_path / "conda-forge.yml").write_text(text.replace(old, new, 1))
    return tmp_path


def _own(tmp_path: Path, text: str) -> Path:
    """A conda-forge.yml of the test's own (for keys this feedstock's may not have: a fork
    that builds linux-64 alone has no build_platform section)."""
    (tmp_path / "conda-forge.yml").write_text(text)
    return tmp_path


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if needle in line)


def _error(root: Path) -> str:
    with pytest.raises(UserError) as caught:
        load_forge_yml(root)
    return str(caught.value)


def test_the_feedstocks_own_conda_forge_yml_is_valid() -> None:
    assert load_forge_yml(ROOT)["conda_build_tool"] == "conda-build"


def test_a_misspelt_enum_value_names_the_key_line_and_closest_value(tmp_path: Path) -> None:
    root = _with(tmp_path, "conda_build_tool: conda-build", "conda_build_tool: rattler_build")
    line = _line_of(root / "conda-forge.yml", "conda_build_tool:")
    assert _error(root) == (
        f"{root / 'conda-forge.yml'}:{line}: conda_build_tool: 'rattler_build' is not a valid "
        "value; did you mean 'rattler-build'?"
    )


def test_a_misspelt_top_level_key_names_its_line_and_the_closest_key(tmp_path: Path) -> None:
    root = _with(tmp_path, "conda_build_tool:", "conda_build_tol:")
    line = _line_of(root / "conda-forge.yml", "conda_build_tol:")
    assert _error(root) == (
        f"{root / 'conda-forge.yml'}:{line}: unknown key 'conda_build_tol'; "
        "did you mean 'conda_build_tool'?"
    )


def test_a_misspelt_nested_key_names_its_section(tmp_path: Path) -> None:
    root = _with(tmp_path, "timeout_minutes:", "timeout_minute:")
    line = _line_of(root / "conda-forge.yml", "timeout_minute:")
    assert _error(root).endswith(
        f":{line}: github_actions: unknown key 'timeout_minute'; did you mean 'timeout_minutes'?"
    )


def test_a_build_platform_typo_is_hinted_in_conda_forge_ymls_spelling(tmp_path: Path) -> None:
    root = _own(tmp_path, "build_platform:\n  linux_aarch64: linux64\n")
    line = _line_of(root / "conda-forge.yml", "linux_aarch64: linux64")
    message = _error(root)
    assert message.startswith(
        f"{root / 'conda-forge.yml'}:{line}: build_platform.linux_aarch64: 'linux64' is not a "
        "valid value; did you mean 'linux_64'?"
    )
    assert "linux-64" not in message


def test_a_build_platform_key_that_is_no_platform_is_refused(tmp_path: Path) -> None:
    root = _own(tmp_path, "build_platform:\n  osx64: osx_arm64\n")
    assert "build_platform: unknown key 'osx64'; did you mean 'osx_64'?" in _error(root)


def test_a_provider_typo_names_the_closest_ci_service(tmp_path: Path) -> None:
    root = _own(tmp_path, "provider:\n  linux_64: github_actions\n  win_64: github_action\n")
    line = _line_of(root / "conda-forge.yml", "win_64: github_action")
    assert _error(root).endswith(
        f":{line}: provider.win_64: 'github_action' is not a valid value; "
        "did you mean 'github_actions'?"
    )


def test_several_problems_report_the_first_and_count_the_rest(tmp_path: Path) -> None:
    root = _with(tmp_path, "conda_build_tool: conda-build", "conda_build_tool: rattler_build")
    text = (root / "conda-forge.yml").read_text().replace("test: native", "tst: native")
    (root / "conda-forge.yml").write_text(text)
    assert _error(root).endswith("did you mean 'rattler-build'? (and 1 more)")


def test_a_value_with_nothing_close_lists_what_is_allowed(tmp_path: Path) -> None:
    root = _with(tmp_path, "test: native_and_emulated", "test: sometimes")
    assert _error(root).endswith(
        "test: 'sometimes' is not a valid value; one of all, native, native_and_emulated, None"
    )
