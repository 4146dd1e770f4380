"""Where the Wine tests of recipe/bld.bat run (issue 42): .ci/run installs what they need on
CI; elsewhere their absence is one skip naming the Debian packages, and with CI set a failure."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from fixtures.wine import machine

ROOT = Path(__file__).resolve().parents[1]


def _without(monkeypatch: pytest.MonkeyPatch, tool: str) -> None:
    real = shutil.which
    monkeypatch.setattr(machine.shutil, "which", lambda name: None if name == tool else real(name))


@pytest.mark.parametrize("tool", ["wine", machine.MINGW_GCC])
def test_without_wine_or_mingw_the_tests_skip_naming_the_apt_packages(
    monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    monkeypatch.delenv("CI", raising=False)
    _without(monkeypatch, tool)
    with pytest.raises(pytest.skip.Exception) as skipped:
        machine.require_wine()
    assert f"apt-get install -y {' '.join(machine.APT_PACKAGES)}" in str(skipped.value)
    assert tool in str(skipped.value)


def test_on_ci_a_missing_wine_fails_instead_of_skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    _without(monkeypatch, "wine")
    with pytest.raises(pytest.fail.Exception):
        machine.require_wine()


def test_ci_run_installs_the_packages_the_wine_tests_name() -> None:
    text = (ROOT / ".ci" / "run").read_text()
    (listed,) = re.findall(r"^wine_packages=\(([^)]*)\)$", text, flags=re.MULTILINE)
    assert tuple(listed.split()) == machine.APT_PACKAGES
    assert 'apt-get install -y -q "${wine_packages[@]}"' in text
