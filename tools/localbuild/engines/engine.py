"""The container engine: docker or podman, chosen like conda-smithy does (``DOCKER_EXECUTABLE``).

Every difference between the two engines lives in this module.  The engine
itself is started by ``.scripts/run_docker_build.sh``; build-locally only
probes it, stops a container on Ctrl-C and prunes its own stopped containers.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tools.foundation.errors import UserError

EngineName = Literal["docker", "podman"]

# What DOCKER_EXECUTABLE may name (its basename): the engines, and podman's remote client.
ENGINES: dict[str, EngineName] = {"docker": "docker", "podman": "podman", "podman-remote": "podman"}

# Containers we start carry this label, so `--prune` removes ours and nobody else's.
LABEL = "org.conda-forge.build-locally=1"

# Said when --engine docker forced the engine (without it the ladder goes on to the next rung);
# --dry-run refuses a missing engine as the run does (it probes, like the run).
NO_ENGINE_HINT = (
    "or leave out --engine docker to build with the conda-build on PATH or the embedded engine"
)


@dataclass(frozen=True)
class ContainerEngine:
    name: EngineName
    executable: str  # as given in DOCKER_EXECUTABLE; the .scripts receive it unchanged

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ContainerEngine:
        """The engine DOCKER_EXECUTABLE names: docker or podman, or a path to one of them.

        The scripts run ``$DOCKER_EXECUTABLE info``, ``pull`` and ``run``; any other program
        there would be run with those arguments, so it is refused.
        """
        executable = env.get("DOCKER_EXECUTABLE") or "docker"
        base = Path(executable).name
        if base.lower().endswith(".exe"):
            base = base[: -len(".exe")]
        if base not in ENGINES:
            raise UserError(
                f"DOCKER_EXECUTABLE={executable}: not docker or podman (nor a path to one); "
                "set it to docker, podman or the full path of either"
            )
        name = ENGINES[base]
        return cls(name=name, executable=executable)

    def resolve(self, env: Mapping[str, str]) -> str:
        """The engine's full path, or a UserError saying there is no engine."""
        found = shutil.which(self.executable, path=env.get("PATH"))
        if found is None:
            raise UserError(
                f"no container engine: `{self.executable}` is not on PATH; install Docker or "
                f"Podman, {NO_ENGINE_HINT}"
            )
        return found

    def info_argv(self) -> list[str]:
        # podman needs no daemon, so `info` failing there means a broken install,
        # not a stopped service; the same message fits both.
        return [self.executable, "info"]

    def not_running(self, detail: str) -> UserError:
        what = "Docker daemon is not reachable" if self.name == "docker" else "podman does not work"
        tail = f" ({detail})" if detail else ""
        return UserError(
            f"no container engine: `{self.executable} info` failed, the {what}{tail}; "
            f"start it, {NO_ENGINE_HINT}"
        )

    def run_args(self, container: str, *, remove: bool) -> list[str]:
        """Extra `run` options, handed over through CONDA_FORGE_DOCKER_RUN_ARGS.

        Named and labelled so Ctrl-C can stop exactly this container and --prune
        only touches ours.  `--rm` unless debugging: a finished PyTorch container
        holds tens of GB, and --debug users want to keep theirs.
        """
        args = ["--name", container, "--label", LABEL]
        if remove:
            args.append("--rm")
        return args

    def stop_argv(self, container: str, grace_seconds: int = 10) -> list[str]:
        # `-t` is accepted by both; docker >= 25 renamed the long form to --timeout.
        return [self.executable, "stop", "-t", str(grace_seconds), container]

    def kill_argv(self, container: str) -> list[str]:
        return [self.executable, "kill", container]

    def prune_argv(self) -> list[str]:
        return [self.executable, "container", "prune", "--force", "--filter", f"label={LABEL}"]
