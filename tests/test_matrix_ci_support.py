"""matrix: .ci_support generation and checking, in conda-smithy's layout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fixtures.cli import run_tools
from fixtures.forge_lines import set_forge_line

from tools.rerender import dump_config

FIXTURES = Path(__file__).parent / "fixtures" / "recipes"
REPO = Path(__file__).resolve().parent.parent


def tools(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run_tools(*args, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.fixture
def feedstock(tmp_path: Path) -> Path:
    dest = tmp_path / "torchlike"
    shutil.copytree(FIXTURES / "torchlike", dest)
    return dest


def test_dump_matches_conda_smithys_layout_byte_for_byte(reference_dir):
    files = sorted((reference_dir / "ci_support").glob("*.yaml"))
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


def test_write_lists_each_file_as_added_updated_or_removed(feedstock):
    folder = feedstock / ".ci_support"
    deleted, edited = sorted(folder.glob("linux_64_*.yaml"))[:2]
    deleted.unlink()
    edited.write_text(edited.read_text() + "extra:\n- 1\n")
    (folder / "linux_64_gone.yaml").write_text("target_platform:\n- linux-64\n")
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--write", cwd=feedstock)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()[:-1]) == [
        f"added: .ci_support/{deleted.name}",
        "removed: .ci_support/linux_64_gone.yaml",
        f"updated: .ci_support/{edited.name}",
    ]
    assert result.stdout.splitlines()[-1].endswith("; 3 file(s) changed")


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
    from tools.rerender import locate_pinning

    shutil.copytree(FIXTURES / "pinning-mini", tmp_path / "env")
    found = locate_pinning(None, {"CONDA_PREFIX": str(tmp_path / "env")})
    assert found.cbc == tmp_path / "env" / "conda_build_config.yaml"
    assert found.migrations_dir == tmp_path / "env" / "share" / "conda-forge" / "migrations"


def test_a_pinning_file_without_migrations_dir_is_accepted(tmp_path):
    from tools.rerender import locate_pinning

    cbc = tmp_path / "cbc.yaml"
    cbc.write_text("zlib:\n  - 1\n")
    found = locate_pinning(str(cbc), {})
    assert found.cbc == cbc and found.migrations_dir is None


def test_commands_work_from_a_subdirectory_of_the_feedstock(feedstock):
    result = tools("explain", cwd=feedstock / "recipe")
    assert result.returncode == 0, result.stderr
    assert "libtoy-linalg (magma, nomagma)" in result.stdout


# -- provider lines: conda-smithy looks up the provider of the platform a target is built on ----


def _set_provider(feedstock: Path, line: str, value: str, build_platform: str = "") -> None:
    path = feedstock / "conda-forge.yml"
    text = path.read_text()
    assert f"  {line}: github_actions\n" in text or f"  {line}:" not in text
    text = text.replace(f"  {line}: github_actions\n", "")
    text = text.replace("provider:\n", f"provider:\n  {line}: {value}\n")
    if build_platform:
        text = text.replace("build_platform:\n", f"build_platform:\n  {build_platform}\n")
    path.write_text(text)


def test_a_null_provider_of_a_cross_compiled_target_keeps_its_jobs_and_says_why(feedstock):
    # linux_aarch64 is built on linux_64, so conda-smithy (_get_platforms_of_provider) reads
    # `provider: linux_64` and both aarch64 configs stay
    _set_provider(feedstock, "linux_aarch64", "null")
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--check", cwd=feedstock)
    assert result.returncode == 0, result.stdout + result.stderr
    (warning,) = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert "`provider: linux_aarch64: null` has no effect" in warning
    assert "`provider: linux_64: github_actions` decides" in warning
    assert "delete `build_platform: linux_aarch64: linux_64`" in warning


def test_a_target_cross_compiled_on_an_enabled_platform_builds_without_its_own_line(feedstock):
    _set_provider(feedstock, "osx_64", "null", build_platform="osx_64: osx_arm64")
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--json", cwd=feedstock)
    assert result.returncode == 0, result.stderr
    jobs = json.loads(result.stdout)["jobs"]
    assert {j["build_platform"] for j in jobs if j["platform"] == "osx-64"} == {"osx-arm64"}


def test_a_null_provider_of_the_build_platform_drops_its_cross_targets_too(feedstock):
    _set_provider(feedstock, "linux_64", "null")
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--json", cwd=feedstock)
    assert result.returncode == 0, result.stderr
    platforms = {j["platform"] for j in json.loads(result.stdout)["jobs"]}
    assert "linux-64" not in platforms and "linux-aarch64" not in platforms
    # the aarch64 line asks for a build the linux_64 line prevents: said, not obeyed
    assert "`provider: linux_aarch64: github_actions` has no effect" in result.stderr


def test_osx_64_null_on_this_feedstock_matches_a_real_rerender(repo_root, pinning_dir, tmp_path):
    # a real conda smithy rerender with this line keeps both osx-64 configs (osx-64 is built
    # on osx_arm64 here), so .ci_support stays as it was
    dest = tmp_path / "pytorch-feedstock"
    for name in ("recipe", ".ci_support"):
        shutil.copytree(repo_root / name, dest / name)
    forge = dest / "conda-forge.yml"
    shutil.copy(repo_root / "conda-forge.yml", forge)
    # the lines this needs, whatever a fork's file says (it may build no osx at all); this
    # feedstock's own file has them, and its committed .ci_support is the one they make
    before = forge.read_text()
    set_forge_line(forge, "build_platform", "osx_64", "osx_arm64")
    set_forge_line(forge, "provider", "osx_arm64", "github_actions")
    if yaml.safe_load(forge.read_text()) != yaml.safe_load(before):
        written = tools("matrix", "--pinning", str(pinning_dir), "--write", cwd=dest)
        assert written.returncode == 0, written.stdout + written.stderr
    set_forge_line(forge, "provider", "osx_64", "null")
    result = tools("matrix", "--pinning", str(pinning_dir), "--check", cwd=dest)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "`provider: osx_arm64: github_actions` decides" in result.stderr


def test_closed_migration_says_why_it_goes_and_how_to_keep_it(feedstock):
    unknown = feedstock / ".ci_support" / "migrations" / "python315.yaml"
    unknown.write_text("migrator_ts: 1790000000\n__migrator:\n  migration_number: 1\n")
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--write", cwd=feedstock)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    at = lines.index("removed: .ci_support/migrations/python315.yaml (a closed migration)")
    assert lines[at + 1].startswith(
        "    the pinning has no open migration named python315.yaml, so conda-smithy takes it "
        "for a closed migration and deletes it"
    )
    assert "update the pinning" in lines[at + 1] and "`use_local: true`" in lines[at + 1]
    assert not unknown.exists()


def test_a_migration_the_pinning_carries_with_another_timestamp_says_so(feedstock):
    mine = feedstock / ".ci_support" / "migrations" / "python314.yaml"
    mine.write_text("migrator_ts: 1\n__migrator:\n  migration_number: 1\n")
    result = tools("matrix", "--pinning", str(FIXTURES / "pinning-mini"), "--check", cwd=feedstock)
    assert result.returncode == 1
    assert "    the pinning's python314.yaml has migrator_ts " in result.stdout
    assert "this one 1, so conda-smithy takes it for a closed migration" in result.stdout
