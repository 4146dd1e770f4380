"""matrix: .ci_support generation and checking, in conda-smithy's layout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fixtures.cli import run_tools

from tools.ci_support import dump_config

FIXTURES = Path(__file__).parent / "fixtures" / "recipes"
REPO = Path(__file__).resolve().parent.parent


def tools(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tools(*args, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.fixture
def feedstock(tmp_path: Path) -> Path:
    dest = tmp_path / "torchlike"
    shutil.copytree(FIXTURES / "torchlike", dest)
    return dest


def test_dump_matches_conda_smithys_layout_byte_for_byte(shared_dir):
    files = sorted((shared_dir / "reference" / "ci_support" / "2026-08").glob("*.yaml"))
    assert len(files) == 16
    for path in files:
        text = path.read_text()
        assert dump_config(yaml.load(text, Loader=yaml.BaseLoader)) == text, path.name


def test_yaml_booleans_and_numbers_are_written_like_conda_smithy():
    text = dump_config(
        {
            "b": ["true"],
            "a": ["12.0", "None", "False", "3.9.* *netlib"],
            "pin_run_as_build": {"python": {"min_pin": "x.x", "max_pin": "x.x"}},
        }
    )
    assert text == (
        "a:\n- '12.0'\n- None\n- 'False'\n- 3.9.* *netlib\nb:\n- true\n"
        "pin_run_as_build:\n  python:\n    min_pin: x.x\n    max_pin: x.x\n"
    )


def test_committed_fixture_ci_support_is_up_to_date(feedstock):
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--check", cwd=feedstock)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "up to date (11 CI jobs)" in result.stdout


def test_check_reports_a_hand_edited_file_and_exits_1(feedstock):
    target = next((feedstock / ".ci_support").glob("osx_arm64_*.yaml"))
    target.write_text(target.read_text() + "extra:\n- 1\n")
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--check", cwd=feedstock)
    assert result.returncode == 1
    assert f"changed: .ci_support/{target.name}" in result.stdout
    assert result.stderr.startswith("problems: 1 difference(s) in .ci_support")


def test_write_regenerates_deleted_configs_and_removes_closed_migrations(feedstock, tmp_path):
    closed = feedstock / ".ci_support" / "migrations" / "oldthing.yaml"
    closed.write_text("migrator_ts: 1600000000\n__migrator:\n  migration_number: 1\n")
    victim = next((feedstock / ".ci_support").glob("linux_64_*12.9*.yaml"))
    expected = victim.read_text()
    victim.unlink()
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--write", cwd=feedstock)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == expected
    assert not closed.exists()
    assert (feedstock / ".ci_support" / "migrations" / "localzlib.yaml").exists()


def test_job_split_uses_keys_every_output_uses_at_top_level(feedstock):
    names = sorted(p.stem for p in (feedstock / ".ci_support").glob("*.yaml"))
    assert (
        "linux_64_blas_implmklc_compiler_version14cuda_compiler_version12.9cxx_compiler_version14"
        in names
    )
    # python and linalg_flavor are used by single outputs only: they stay inside one job
    assert not any("python" in n or "linalg_flavor" in n for n in names)
    config = yaml.safe_load((feedstock / ".ci_support" / f"{names[0]}.yaml").read_text())
    assert config["linalg_flavor"] == ["magma", "nomagma"]
    assert config["python"][-1] == "3.14.* *_cp314"


def test_a_python_used_at_top_level_splits_jobs_and_skipped_pythons_vanish(tmp_path):
    # checked against conda smithy rerender: the same 8 files, byte for byte
    dest = tmp_path / "pyext"
    shutil.copytree(FIXTURES / "pyext", dest)
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--check", cwd=dest)
    assert result.returncode == 0, result.stdout + result.stderr
    names = sorted(p.stem for p in (dest / ".ci_support").glob("*.yaml"))
    assert names[:2] == ["linux_64_python3.12.____cpython", "linux_64_python3.13.____cp313"]
    assert len(names) == 8 and not any("3.11" in n for n in names)


def test_without_pinning_one_line_says_what_to_pass(feedstock):
    env_prefix = feedstock / "no-such-prefix"
    env = dict(os.environ, PYTHONPATH=str(REPO), CONDA_PREFIX=str(env_prefix))
    result = subprocess.run(
        [sys.executable, "-m", "tools", "matrix", "--check"],
        cwd=feedstock,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "pass --pinning PATH" in result.stderr


def test_committed_ci_support_of_the_feedstock_is_up_to_date(repo_root, pinning_dir):
    if not (repo_root / "recipe" / "meta.yaml").is_file():
        pytest.skip("the recipe is not written yet")
    result = tools("matrix", "--pinning", str(pinning_dir), "--check", cwd=repo_root)
    assert result.returncode == 0, result.stdout + result.stderr


def test_installed_pinning_is_found_through_conda_prefix(tmp_path):
    from tools.ci_support import locate_pinning

    shutil.copytree(FIXTURES / "pinning-mini", tmp_path / "env")
    found = locate_pinning(None, {"CONDA_PREFIX": str(tmp_path / "env")})
    assert found.cbc == tmp_path / "env" / "conda_build_config.yaml"
    assert found.migrations_dir == tmp_path / "env" / "share" / "conda-forge" / "migrations"


def test_a_pinning_file_without_migrations_dir_is_accepted(tmp_path):
    from tools.ci_support import locate_pinning

    cbc = tmp_path / "cbc.yaml"
    cbc.write_text("zlib:\n  - 1\n")
    found = locate_pinning(str(cbc), {})
    assert found.cbc == cbc and found.migrations_dir is None


def test_commands_work_from_a_subdirectory_of_the_feedstock(feedstock):
    result = tools("explain", cwd=feedstock / "recipe")
    assert result.returncode == 0, result.stderr
    assert "libtoy-linalg (magma, nomagma)" in result.stdout
