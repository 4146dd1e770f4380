"""Free-threaded 3.14t without conda-forge's python314t migration: ``tools layout`` and
``tools check``'s python.abi refuse upstream's cp314t wheel where no config builds 3.14t and
name both ABIs of an extension built for the other one; the bot settings the migration's
rebuilds use validate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.cli import REPO
from helpers.python314t import C_314, check_python_abi, python_abi_part, tools

from tools.foundation.errors import UserError
from tools.smithy.forge_yml import load_forge_yml


@pytest.fixture(scope="module")
def python_part(upstream_cp314t_wheel: Path) -> Path:
    return python_abi_part(upstream_cp314t_wheel)


BOT = """\
bot:
  # conda-forge's python314t rebuilds of the release branches (pytorch-cpu-feedstock#533, #534)
  abi_migration_branches:
  - v2.11.x
  - v2.10.x
  {key}: {value}
"""


def test_bot_settings_for_the_migration_validate(tmp_path) -> None:
    text = (REPO / "conda-forge.yml").read_text()
    (tmp_path / "conda-forge.yml").write_text(text + BOT.format(key="automerge", value="false"))
    assert load_forge_yml(tmp_path)["bot"]["abi_migration_branches"] == ["v2.11.x", "v2.10.x"]


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("abi_migration_branch", "[v2.9.x]", "did you mean 'abi_migration_branches'?"),
        ("check_solvable", "[true]", "expected true or false"),
    ],
)
def test_a_bot_setting_the_bot_would_refuse_is_one_line(tmp_path, key, value, problem) -> None:
    text = (REPO / "conda-forge.yml").read_text()
    (tmp_path / "conda-forge.yml").write_text(text + BOT.format(key=key, value=value))
    with pytest.raises(UserError) as raised:
        load_forge_yml(tmp_path)
    message = str(raised.value)
    assert "\n" not in message and problem in message
    line = len(text.splitlines()) + 6
    assert message.startswith(f"{tmp_path / 'conda-forge.yml'}:{line}: bot")


def test_layout_of_the_cp314t_wheel_fails_where_no_config_builds_314t(
    upstream_cp314t_wheel,
) -> None:
    result = tools("layout", str(upstream_cp314t_wheel), cwd=REPO)
    assert result.returncode == 1
    [line] = [line for line in result.stdout.splitlines() if line.startswith("python ABI:")]
    assert "a wheel for Python 3.14t (free-threaded), but the config builds pytorch for" in line
    assert line.endswith(", 3.14") and "wheel tag cp314-cp314t" in line


def test_layout_names_both_abis_of_a_gil_extension_in_a_cp314t_wheel(
    upstream_cp314t_wheel,
) -> None:
    from dataclasses import replace

    from tools.layout.replay import Replay, check_python
    from tools.layout.wheel import read_wheel

    wheel = read_wheel(upstream_cp314t_wheel)
    torch = {k.replace(".cpython-314t-", ".cpython-314-"): v for k, v in wheel.torch.items()}
    result = Replay(wheel.platform)
    check_python(replace(wheel, torch=torch), ["3.14", "3.14t"], result)
    [problem] = result.problems
    assert problem.path == C_314
    assert "Python 3.14 (with the GIL) in a wheel for 3.14t (free-threaded)" in problem.detail
    assert "wheel tag cp314-cp314t" in problem.detail


def test_check_of_the_cp314t_wheel_fails_on_a_config_without_314t(python_part) -> None:
    [finding] = check_python_abi(python_part, REPO)
    assert finding["status"] == "fail"
    assert "a package for Python 3.14t (free-threaded), but config" in finding["detail"]
    assert "python314t migration" in finding["detail"]


def test_a_conda_package_for_314t_holding_a_gil_extension_fails_naming_both() -> None:
    from tools.check import run_checks
    from tools.check.archive import Member, Package

    site = "lib/python3.14t/site-packages/torch"
    package = Package(
        source=Path("pytorch-2.13.0-cpu_generic_py314_hc71a66a_3.conda"),
        kind="conda",
        name="pytorch",
        version="2.13.0",
        build="cpu_generic_py314_hc71a66a_3",
        subdir="linux-64",
        depends=("python_abi 3.14.* *_cp314t",),
        members=(Member(f"{site}/_C.cpython-314-x86_64-linux-gnu.so", "file", 1),),
    )
    [finding] = run_checks([package], only={"python.abi"})
    assert finding.status == "fail"
    assert finding.detail.startswith(
        "an extension for Python 3.14 (with the GIL) in a package for 3.14t (free-threaded) "
        "(python_abi 3.14.* *_cp314t)"
    )
