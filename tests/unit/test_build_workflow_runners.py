"""Where the build workflow runs each config: its jobs per config (python -m tools runners)."""

from __future__ import annotations

import json
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

REPO = Path(__file__).resolve().parents[2]
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
