"""Which GitHub Actions runner builds and which tests each config (.github/workflows/build.yml).

The labels a build job runs on come from, in order:

1. ``--labels`` (the workflow's ``runner_labels`` input, else the repository
   variable ``RUNNER_LABELS``): ``PLATFORM=LABEL,LABEL ...`` rules, PLATFORM being
   the platform a config *builds on* (conda-forge.yml's ``build_platform``: the
   linux-aarch64 configs cross-compile on linux-64) or a glob such as ``linux-*``;
2. the config's own ``github_actions_labels`` (from recipe/conda_build_config.yaml
   through the rerender), read the way conda-smithy reads them;
3. GitHub's hosted image for that platform.

A fork outside the conda-forge organisation has none of conda-forge's runners, so its
jobs would queue forever on step 2's labels: with ``--owner`` not ``conda-forge`` and no
``--labels``, step 2 is skipped (``fallback_hosted``) and the workflow says so in its job
summary.

GitHub stops hosted jobs after 360 minutes; self-hosted runners get the
conda-forge.yml ``github_actions.timeout_minutes``.

CUDA packages need a GPU only for their tests (pytorch-cpu-feedstock#314).  With
``--gpu-labels`` rules for a config's target platform, its build job skips the
tests and a separate job on those labels tests the built packages; without them
the tests run where the build ran, as on conda-forge.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tools.foundation.errors import UserError
from tools.localbuild.schedule.facts import ConfigFacts
from tools.smithy.forge import read_forge_settings

# GitHub-hosted images per build platform (conda-smithy picks the same families).
HOSTED = {
    "linux-64": "ubuntu-24.04",
    "linux-aarch64": "ubuntu-24.04-arm",
    "osx-64": "macos-15-intel",
    "osx-arm64": "macos-15",
    "win-64": "windows-2022",
}
# conda-smithy's `self-hosted@LABEL` adds these generic labels of a platform's runners.
SELF_HOSTED = {
    "linux-64": ("linux", "x64"),
    "linux-aarch64": ("linux", "ARM64"),
    "osx-64": ("macOS", "x64"),
    "osx-arm64": ("macOS", "arm64"),
    "win-64": ("windows", "x64"),
}
HOSTED_LIMIT_MINUTES = 360  # GitHub cancels jobs on its own runners after six hours
DEFAULT_TIMEOUT_MINUTES = 360  # conda-smithy's default github_actions.timeout_minutes
_HOSTED_IMAGE = re.compile(r"^(ubuntu|windows|macos)-[A-Za-z0-9.-]+$")
_RULE = re.compile(r"^([a-z0-9*?\[\]-]+)=([^=\s]+)$")
_LABEL = re.compile(r"^[A-Za-z0-9@._:/+-]+$")
NO_TEST = "-e EXTRA_CB_OPTIONS=--no-test"


@dataclass(frozen=True)
class LabelRule:
    platform: str  # a subdir or a glob over subdirs
    labels: tuple[str, ...]


@dataclass(frozen=True)
class BuildJob:
    config: str
    label: str  # the job's name on GitHub: the config's short label (tools/foundation/selection.py)
    short: str  # artifact names: conda-smithy's short config name
    os: str  # linux, osx, win: which build step of the workflow runs
    build_platform: str
    runs_on: tuple[str, ...]
    hosted: bool
    timeout_minutes: int
    docker_run_args: str  # CONDA_FORGE_DOCKER_RUN_ARGS for the build
    tests: str  # "here" or "gpu job"
    fell_back: bool = False  # its own labels named runners a fork lacks: hosted instead

    def to_json(self) -> dict[str, object]:
        return {
            "config": self.config,
            "label": self.label,
            "short": self.short,
            "os": self.os,
            "build_platform": self.build_platform,
            "runs_on": list(self.runs_on),
            "hosted": self.hosted,
            "timeout": self.timeout_minutes,
            "docker_run_args": self.docker_run_args,
            "tests": self.tests,
            "fell_back": self.fell_back,
        }


@dataclass(frozen=True)
class TestJob:
    config: str
    label: str
    short: str
    runs_on: tuple[str, ...]
    timeout_minutes: int
    docker_image: str

    def to_json(self) -> dict[str, object]:
        return {
            "config": self.config,
            "label": self.label,
            "short": self.short,
            "runs_on": list(self.runs_on),
            "timeout": self.timeout_minutes,
            "docker_image": self.docker_image,
        }


@dataclass(frozen=True)
class ForgeCi:
    """What of conda-forge.yml the workflow needs."""

    build_platform: Mapping[str, str]  # linux-aarch64 -> linux-64
    timeout_minutes: int

    @classmethod
    def from_mapping(cls, data: Mapping[str, object]) -> ForgeCi:
        gha = data.get("github_actions") or {}
        timeout = gha.get("timeout_minutes") if isinstance(gha, dict) else None
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)):
            raise UserError(
                f"conda-forge.yml github_actions.timeout_minutes: {timeout!r} is not a whole "
                "number of minutes"
            )
        return cls(
            build_platform={
                k.replace("_", "-"): v.replace("_", "-")
                for k, v in read_forge_settings(data).build_platform.items()
            },
            timeout_minutes=timeout or DEFAULT_TIMEOUT_MINUTES,
        )

    def build_of(self, target: str) -> str:
        return self.build_platform.get(target, target)


def short_name(config: str) -> str:
    """conda-smithy's short config name (artifact names stay well under GitHub's limits)."""
    digest = hashlib.sha256(config.encode("utf-8")).hexdigest()[:8]
    return config if len(config) < 49 else f"{config[:40]}_h{digest}"


def parse_rules(text: str | None, what: str) -> tuple[LabelRule, ...]:
    """``linux-64=self-hosted,linux,x64 win-*=self-hosted,windows`` (spaces, ``;`` or newlines)."""
    rules = []
    for part in re.split(r"[\s;]+", (text or "").strip()):
        if not part:
            continue
        match = _RULE.match(part)
        labels = tuple(label for label in (match.group(2) if match else "").split(",") if label)
        if not match or not labels or not all(_LABEL.match(label) for label in labels):
            raise UserError(
                f"{what}: {part!r} is not PLATFORM=LABEL[,LABEL...] "
                "(e.g. linux-64=self-hosted,linux,x64)"
            )
        platform = match.group(1)
        if not any(fnmatch.fnmatchcase(known, platform) for known in HOSTED):
            raise UserError(
                f"{what}: {platform!r} matches no platform; use one of {', '.join(HOSTED)} "
                "or a glob such as linux-*"
            )
        rules.append(LabelRule(platform, labels))
    return tuple(rules)


NAMESPACE_LINUX_OPTIONS = ";container.privileged=true;container.mount-scratch=true"


def _rule_for(rules: Sequence[LabelRule], platform: str) -> tuple[str, ...] | None:
    for rule in rules:
        if fnmatch.fnmatchcase(platform, rule.platform):
            return rule.labels
    return None


def expand_labels(
    labels: Sequence[str], build_platform: str, *, short: str, run_id: str | None
) -> tuple[str, ...]:
    """conda-smithy's meaning of github_actions_labels, for a runs-on list."""
    hosted = HOSTED.get(build_platform)
    if not labels or tuple(labels) in (("hosted",), ("default",)):
        if hosted is None:
            raise UserError(f"no GitHub-hosted runner builds {build_platform}; give labels for it")
        return (hosted,)
    result = []
    if any(label.startswith("self-hosted@") for label in labels):
        result = [label.removeprefix("self-hosted@") for label in labels]
        result += [*SELF_HOSTED.get(build_platform, ()), "self-hosted"]
    else:
        result = list(labels)
    if run_id:
        # cirun starts one machine per job; a unique label keeps two jobs off one machine.
        result = [
            f"{label}--{run_id}-{short}" if label.startswith("cirun-") else label
            for label in result
        ]
    # Namespace's Linux runners start the job in a container; conda-smithy asks for a
    # privileged one with the scratch disk mounted, which the docker build inside needs.
    result = [
        f"{label}{NAMESPACE_LINUX_OPTIONS}"
        if label.startswith("namespace-profile-") and "-on-linux-" in label
        else label
        for label in result
    ]
    return tuple(dict.fromkeys(result))


def is_hosted(runs_on: Sequence[str]) -> bool:
    return len(runs_on) == 1 and bool(_HOSTED_IMAGE.match(runs_on[0]))


def timeout_for(runs_on: Sequence[str], forge: ForgeCi) -> int:
    if is_hosted(runs_on):
        return min(forge.timeout_minutes, HOSTED_LIMIT_MINUTES)
    return forge.timeout_minutes


def has_gpu(runs_on: Sequence[str]) -> bool:
    """conda-smithy's rule: a label that mentions a GPU means the machine has one."""
    return any("gpu" in label.lower() for label in runs_on)


def image_for_tests(facts: ConfigFacts) -> str | None:
    """The image to test in, on a machine of the target platform.

    A cross-compiled linux-aarch64 config names the x86_64 build image; conda-forge
    publishes the same image for aarch64 under the matching name.
    """
    image = facts.docker_image
    if image and facts.target_platform == "linux-aarch64":
        image = image.replace("linux-anvil-x86_64", "linux-anvil-aarch64")
    return image


CONDA_FORGE = "conda-forge"


def fallback_note(builds: Sequence[BuildJob], owner: str) -> str | None:
    """The job summary's word on a fork's jobs moved to GitHub's runners, or None."""
    moved = [b for b in builds if b.fell_back]
    if not moved:
        return None
    return (
        f"{owner} is not the {CONDA_FORGE} organisation and sets no RUNNER_LABELS, so "
        f"{len(moved)} of {len(builds)} build job(s) whose configs ask for {CONDA_FORGE}'s "
        "runners run on GitHub's hosted runners instead (at most 6 hours each, no GPU). "
        "To build on your own machines, set the repository variable RUNNER_LABELS "
        "(e.g. `linux-64=self-hosted,linux,x64`) or the runner_labels input."
    )


def plan_jobs(
    facts: Sequence[ConfigFacts],
    forge: ForgeCi,
    *,
    labels: Sequence[LabelRule] = (),
    gpu_labels: Sequence[LabelRule] = (),
    run_id: str | None = None,
    label_of: Mapping[str, str] | None = None,
    fallback_hosted: bool = False,
) -> tuple[tuple[BuildJob, ...], tuple[TestJob, ...]]:
    """``fallback_hosted``: configs that no ``labels`` rule covers build on GitHub's hosted
    runners even when their own github_actions_labels name other runners."""
    for rule in gpu_labels:
        if not rule.platform.startswith("linux-"):
            raise UserError(
                f"--gpu-labels {rule.platform}: GPU test jobs run Linux CUDA packages in the "
                "conda-forge container; other platforms test where they build"
            )
    builds, tests = [], []
    for fact in facts:
        short = short_name(fact.name)
        label = (label_of or {}).get(fact.name, fact.name)
        build_platform = forge.build_of(fact.target_platform)
        chosen = _rule_for(labels, build_platform)
        own = fact.labels if chosen is None else ()
        fell_back = (
            fallback_hosted
            and chosen is None
            and not is_hosted(expand_labels(own, build_platform, short=short, run_id=None))
        )
        runs_on = expand_labels(
            chosen if chosen is not None else () if fell_back else own,
            build_platform,
            short=short,
            run_id=run_id,
        )
        run_args = []
        if build_platform.startswith("linux-") and has_gpu(runs_on):
            run_args.append("--gpus all")
        gpu = _rule_for(gpu_labels, fact.target_platform) if fact.cuda else None
        split = gpu is not None and not has_gpu(runs_on) and fact.os == "linux"
        if split:
            image = image_for_tests(fact)
            if image is None:
                raise UserError(f".ci_support/{fact.name}.yaml names no docker_image to test in")
            gpu_runs_on = expand_labels(gpu, fact.target_platform, short=short, run_id=run_id)
            run_args.append(NO_TEST)
            tests.append(
                TestJob(
                    config=fact.name,
                    label=label,
                    short=short,
                    runs_on=gpu_runs_on,
                    timeout_minutes=timeout_for(gpu_runs_on, forge),
                    docker_image=image,
                )
            )
        builds.append(
            BuildJob(
                config=fact.name,
                label=label,
                short=short,
                os=build_platform.split("-", 1)[0],
                build_platform=build_platform,
                runs_on=runs_on,
                hosted=is_hosted(runs_on),
                timeout_minutes=timeout_for(runs_on, forge),
                docker_run_args=" ".join(run_args),
                tests="gpu job" if split else "here",
                fell_back=fell_back,
            )
        )
    return tuple(builds), tuple(tests)
