"""Which engine builds this run: the first rung of the ladder that answers, or the one
``--engine`` forces.

1. a container engine (docker or podman, ``DOCKER_EXECUTABLE``): conda-forge's way;
2. the conda-build on PATH, running ``.scripts/build_steps.sh`` here (``--native``);
3. the embedded engine: py-rattler-build, from the toolkit's own requirements, building the
   v1 recipe on this machine (``engines/rattler.py``).

Every run says which rung it took, and why the ones above it were passed over, in one line.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Literal

from tools.foundation.errors import CommandError, UserError
from tools.foundation.proc import call
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.records.provenance import NO_PACKAGE_COMMIT, engine_version

Builder = Literal["docker", "conda-build", "rattler-build"]  # options.BUILDERS, in order

# The distribution the embedded engine comes from (requirements.txt).
EMBEDDED_DISTRIBUTION = "py-rattler-build"


@dataclass(frozen=True)
class Chosen:
    builder: Builder
    version: str | None  # the container engine's (`info`) or py-rattler-build's
    line: str  # what the run says first

    @property
    def provenance(self) -> str:
        """The engine as summary.json's provenance records it."""
        if self.builder == "docker":
            return f"docker {self.version or 'version unknown'}"
        if self.builder == "conda-build":
            return "conda-build (no container)"
        return f"rattler-build {self.version} (embedded, no container; {NO_PACKAGE_COMMIT})"


def probe_container(engine: ContainerEngine, env: Mapping[str, str]) -> str | None:
    """Refuse an engine that does not answer; else its version, as `info` prints it."""
    engine.resolve(env)
    try:
        result = call(
            *engine.info_argv(), env=env, capture=True, check=False, quiet=True, timeout=60
        )
    except CommandError as exc:
        raise engine.not_running(str(exc)) from None
    if result.returncode != 0:
        detail = (result.stderr.strip().splitlines() or [""])[-1]
        raise engine.not_running(detail[:200])
    return engine_version(result.stdout)


def probe_conda_build(env: Mapping[str, str], flag: str = "--engine conda-build") -> None:
    """``flag``: how the person asked for conda-build (``--native`` or ``--engine
    conda-build``), named in the refusal."""
    if shutil.which("conda-build", path=env.get("PATH")) is None:
        raise UserError(
            f"{flag} needs conda-build on PATH: `conda env create -f "
            "environment.yml` then `conda activate pytorch-feedstock-build`"
        )


def probe_embedded() -> str:
    try:
        return metadata.version(EMBEDDED_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise UserError(
            f"the embedded engine needs {EMBEDDED_DISTRIBUTION}: "
            "`python -m pip install -r requirements.txt`"
        ) from None


def choose(
    forced: Builder | None,
    engine: ContainerEngine,
    env: Mapping[str, str],
    *,
    debug: bool = False,
    flag: str | None = None,
) -> Chosen:
    """The engine of this run; ``forced`` (``--engine``, or ``--native``: ``flag`` says which
    the person typed) is probed alone and refused when it does not answer, else the first
    rung that answers wins."""
    chosen = _choose(forced, engine, env, flag or f"--engine {forced}")
    if debug and chosen.builder == "rattler-build":
        raise UserError(
            "--debug opens conda-build's debug shell, and the embedded engine has no "
            f"conda-build ({chosen.line.removeprefix('engine: ')}); add --engine docker or "
            "--engine conda-build"
        )
    return chosen


def _choose(
    forced: Builder | None, engine: ContainerEngine, env: Mapping[str, str], flag: str
) -> Chosen:
    if forced == "docker":
        version = probe_container(engine, env)
        return Chosen("docker", version, f"engine: {_container(engine, version)} ({flag})")
    if forced == "conda-build":
        probe_conda_build(env, flag)
        return Chosen("conda-build", None, f"engine: conda-build on PATH, no container ({flag})")
    if forced == "rattler-build":
        version = probe_embedded()
        return Chosen("rattler-build", version, f"engine: {_embedded(version)} ({flag})")
    passed: list[str] = []
    try:
        version = probe_container(engine, env)
    except UserError as exc:
        passed.append(_why_not(str(exc)))
    else:
        return Chosen("docker", version, f"engine: {_container(engine, version)}")
    try:
        probe_conda_build(env)
    except UserError:
        passed.append("no conda-build on PATH")
    else:
        line = f"engine: conda-build on PATH, no container ({passed[0]})"
        return Chosen("conda-build", None, line)
    try:
        version = probe_embedded()
    except UserError as exc:
        raise UserError(f"no engine builds here: {'; '.join(passed)}; and {exc}") from None
    return Chosen("rattler-build", version, f"engine: {_embedded(version)} ({'; '.join(passed)})")


def _container(engine: ContainerEngine, version: str | None) -> str:
    return f"{engine.name} {version or '(version unknown)'}, the conda-forge container"


def _embedded(version: str) -> str:
    return f"rattler-build {version}, embedded (py-rattler-build), on this machine, no container"


def _why_not(message: str) -> str:
    """The container engine's refusal, cut to the reason (its hint is for a forced engine)."""
    return message.removeprefix("no container engine: ").split("; ")[0]
