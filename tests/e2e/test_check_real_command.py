"""``python -m tools check`` as a command on the split 2.13.0 wheel
(tests/helpers/check_real_split.py): its JSON, report and exit status, an installed
prefix, --config, the upstream wheel itself and --baseline against it."""

from __future__ import annotations

import json
import subprocess

import pytest
from conda_package_handling import api as cph
from helpers.check_real_split import (
    HOST_PLACEHOLDER,
    RUNTIME_DEPS,
    TEST_ONLY_LIBS,
    Built,
    _failures,
    built_packages,
)
from helpers.cli import run_tools

from tools.check import load, run_checks

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def built(torch_wheel, tests_cache_dir, tmp_path_factory) -> Built:
    return built_packages(torch_wheel, tests_cache_dir, tmp_path_factory)


# ------------------------------------------------------------------ the command


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tools("check", *args, timeout=600)


def test_command_json_lists_findings_and_exits_1_on_a_failure(built):
    result = _cli("--json", str(built.absolute_runpath))
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    assert all(set(f) >= {"check", "status", "path", "detail"} for f in findings)
    assert any(f["check"] == "elf.runpath" and f["status"] == "fail" for f in findings)


def test_command_prints_a_report_and_exits_0_when_nothing_fails(built, tmp_path):
    meta = next(p for p in built.clean if p.name.startswith("pytorch-cpu-"))
    result = _cli(str(meta))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "archive.member: 1 pass"
    assert result.stdout.splitlines()[-1].startswith("summary: 0 fail, 0 warn, ")


def test_command_reads_a_directory_of_packages(built):
    result = _cli("--json", str(built.missing_lib.parent))
    assert result.returncode == 1
    assert any(f["check"] == "elf.needed" for f in json.loads(result.stdout))


# ------------------------------------------------------------------ installed prefix


def test_installed_prefix_is_checked_against_its_whole_environment(built, tmp_path):
    prefix = tmp_path / "env"
    (prefix / "conda-meta").mkdir(parents=True)
    for package_file in built.clean[:2]:  # libtorch and pytorch, as conda would install them
        cph.extract(str(package_file), dest_dir=str(prefix), components=["pkg"])
        name, version, build = package_file.name[: -len(".conda")].rsplit("-", 2)
        files = sorted(
            p.relative_to(prefix).as_posix()
            for p in prefix.rglob("*")
            if (p.is_file() or p.is_symlink())
            and not p.relative_to(prefix).as_posix().startswith(("conda-meta/", "info/"))
        )
        owned = set().union(
            *(
                set(json.loads(r.read_text())["files"])
                for r in (prefix / "conda-meta").glob("*.json")
            )
        )
        (prefix / "conda-meta" / f"{name}-{version}-{build}.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "version": version,
                    "build": build,
                    "subdir": "linux-64",
                    "depends": list(RUNTIME_DEPS),
                    "files": [f for f in files if f not in owned],
                }
            )
        )
    findings = run_checks(load([prefix]))
    assert {f.path for f in findings if f.check == "elf.needed" and f.status == "pass"} == {
        f"{prefix}[libtorch]",
        f"{prefix}[pytorch]",
    }
    assert [f.status for f in findings if f.check == "layout.torch-lib-links"] == ["pass"]
    assert [f for f in findings if f.status == "fail" and f.check != "abi.static-libstdcxx"] == []


# ------------------------------------------------------------------ --config


def test_config_render_supplies_stdlib_and_requirements(built, reference_dir):
    config = (
        reference_dir
        / "ci_support"
        / (
            "linux_64_blas_implgenericc_stdlib_version2.17channel_targetsconda-forge_main"
            "cuda_compiler_versionNoneis_rcFalse.yaml"
        )
    )
    result = _cli("--json", "--config", str(config), str(built.clean[0].parent))
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    # The upstream wheel is manylinux_2_28; this config promises glibc 2.17.
    assert any(
        f["check"] == "elf.glibc"
        and f["status"] == "fail"
        and "c_stdlib_version 2.17" in f["detail"]
        for f in findings
    )
    assert {"metadata.depends", "metadata.constrains", "metadata.run-exports"} <= {
        f["check"] for f in findings
    }
    assert any(
        f["check"] == "elf.glibcxx" and "cxx_compiler_version" in f["detail"] for f in findings
    )


# ------------------------------------------------------------------ upstream wheel


def test_upstream_wheel_test_binaries_leak_build_machine_runpaths(torch_wheel):
    findings = run_checks(load([torch_wheel]))
    runpath = _failures(findings, "elf.runpath")
    # BUILD_TEST binaries carry MKL's /lib/intel64 search paths; the libraries do not.
    assert runpath and all("/lib/intel64" in f.detail for f in runpath)
    assert not any(":torch/lib/" in f.path for f in runpath)
    glibc = [f for f in findings if f.check == "elf.glibc"]
    assert [f.status for f in glibc] == ["pass"] and "manylinux_2_28" in glibc[0].detail
    # devtoolset's static libstdc++ pieces are expected in a wheel: warned, not failed
    assert {f.status for f in findings if f.check == "abi.static-libstdcxx"} == {"warn"}


# ------------------------------------------------------------------ --baseline


def _json_of(*args: str) -> list[dict]:
    return json.loads(_cli("--json", *args).stdout)


def test_baseline_wheel_leaves_out_the_runpaths_of_upstreams_own_test_binaries(built, torch_wheel):
    ours = [*map(str, built.clean), str(built.upstream_tests)]
    wheel_alone = _json_of("--only", "elf.runpath", str(torch_wheel))
    upstream = [f for f in wheel_alone if f["status"] == "fail"]
    alone = [f for f in _json_of("--only", "elf.runpath", *ours) if f["status"] == "fail"]
    assert len(alone) == len(upstream) > 0  # 69 for torch 2.13.0+cpu
    assert all("/lib/intel64" in f["detail"] for f in alone)

    compared = _cli("--json", "--baseline", str(torch_wheel), *ours)
    failing = [f for f in json.loads(compared.stdout) if f["status"] == "fail"]
    assert not [f for f in failing if f["check"] == "elf.runpath"]
    # What is left is a real difference: test_jit needs test-only libraries the split drops.
    assert failing and {f["check"] for f in failing} == {"elf.needed"}
    assert all(f["path"].endswith("site-packages/torch/bin/test_jit") for f in failing)
    assert {f["detail"].split()[0] for f in failing} <= set(TEST_ONLY_LIBS)
    assert compared.returncode == 1


def test_baseline_wheel_still_shows_a_runpath_the_wheel_has_clean(built, torch_wheel):
    result = _cli("--json", "--baseline", str(torch_wheel), str(built.absolute_runpath))
    assert result.returncode == 1, result.stderr
    failing = [f for f in json.loads(result.stdout) if f["status"] == "fail"]
    assert [(f["check"], f["path"].split(":", 1)[1]) for f in failing] == [
        ("elf.runpath", "lib/libc10.so")
    ]
    assert HOST_PLACEHOLDER in failing[0]["detail"]


def test_report_counts_overflowing_rows_inside_their_check(built):
    text = _cli("--only", "elf.runpath", str(built.upstream_tests)).stdout.splitlines()
    header = next(i for i, line in enumerate(text) if line.startswith("elf.runpath: "))
    more = next(i for i, line in enumerate(text) if "more fail (--json lists all)" in line)
    assert header == 0 and more == header + 21
