"""conda-smithy's view of conda-forge.yml: what the job split and the builds need of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# conda-smithy's default Linux image when neither the variant nor conda-forge.yml names one;
# .scripts/run_docker_build.sh carries the same value for builds run without a config.
FALLBACK_DOCKER_IMAGE = "quay.io/condaforge/linux-anvil-comp7"

# conda-forge.yml ``conda_build_tool`` that builds a v1 recipe.yaml (CFEP-14). Every other value
# (conda-build, its solver variants, mambabuild) builds meta.yaml with conda-build; which of
# them a build supports is the build scripts' to say (.scripts/build_steps.sh).
RATTLER_BUILD = "rattler-build"


def build_tool_of(data: Mapping[str, Any]) -> str:
    """conda-forge.yml's ``conda_build_tool`` (default conda-build)."""
    value = data.get("conda_build_tool")
    return "conda-build" if value is None else str(value)


def uses_rattler_build(data: Mapping[str, Any]) -> bool:
    """Whether the feedstock builds a v1 recipe.yaml with rattler-build (CFEP-14)."""
    return build_tool_of(data) == RATTLER_BUILD


@dataclass(frozen=True)
class ForgeSettings:
    """What of conda-forge.yml the job split needs."""

    build_platform: Mapping[str, str] = field(default_factory=dict)  # linux_aarch64 -> linux_64
    providers: Mapping[str, str | None] = field(default_factory=dict)
    github_actions: bool = False
    os_version: Mapping[str, str] = field(default_factory=dict)
    fallback_image: str = FALLBACK_DOCKER_IMAGE
    build_tool: str = "conda-build"

    def build_of(self, platform_arch: str) -> str:
        return self.build_platform.get(platform_arch, platform_arch)

    def platforms(self) -> list[str]:
        found = []
        for plat in ("linux_64", "osx_64", "win_64"):
            if self.providers.get(plat, "azure") not in (None, "None", False):
                found.append(plat)
        for plat, provider in self.providers.items():
            if plat not in found and provider not in (None, "None", False):
                found.append(plat)
        return sorted(found)


def read_forge_settings(data: Mapping[str, Any]) -> ForgeSettings:
    providers = dict(data.get("provider") or {})
    gha = any(v == "github_actions" for v in providers.values()) or bool(
        (data.get("github_actions") or {}).get("self_hosted")
    )
    docker = data.get("docker") or {}
    return ForgeSettings(
        build_platform={str(k): str(v) for k, v in (data.get("build_platform") or {}).items()},
        providers=providers,
        github_actions=gha,
        os_version={str(k): str(v) for k, v in (data.get("os_version") or {}).items() if v},
        fallback_image=str(docker.get("fallback_image") or FALLBACK_DOCKER_IMAGE),
        build_tool=build_tool_of(data),
    )
