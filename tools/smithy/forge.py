"""conda-smithy's view of conda-forge.yml: what the job split and the builds need of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.foundation.errors import UserError

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


# conda-smithy's default ``conda_build.zstd_compression_level`` (its schema's default), the
# level .scripts/build_steps.sh falls back to when conda-forge.yml names none.
DEFAULT_ZSTD_LEVEL = 16
# The levels zstd takes (its negative "fast" levels are no choice for a package).
ZSTD_LEVELS = range(1, 23)


def zstd_level_of(data: Mapping[str, Any]) -> int:
    """The zstd level of the feedstock's .conda packages: conda-forge.yml's
    ``conda_build.zstd_compression_level``, as build_steps.sh hands it to conda-build
    (``.condarc``) and rattler-build (``--package-format conda:LEVEL``); 16 when unset.
    Every engine and every repack packs at this level: read it here, nowhere else."""
    value = (data.get("conda_build") or {}).get("zstd_compression_level")
    if value is None:
        return DEFAULT_ZSTD_LEVEL
    if isinstance(value, bool) or not isinstance(value, int) or value not in ZSTD_LEVELS:
        raise UserError(
            f"conda-forge.yml conda_build.zstd_compression_level: {value!r} is not a zstd "
            f"level; write a whole number from {ZSTD_LEVELS[0]} to {ZSTD_LEVELS[-1]}"
        )
    return value


def pkg_format_of(data: Mapping[str, Any]) -> str:
    """conda-forge.yml's ``conda_build.pkg_format`` as conda-build reads it: "2" (.conda,
    the default) or "1" (.tar.bz2, which conda-build also calls "tar")."""
    value = (data.get("conda_build") or {}).get("pkg_format")
    return "1" if str(value) in ("1", "tar") else "2"


@dataclass(frozen=True)
class ForgeSettings:
    """What of conda-forge.yml the job split needs."""

    build_platform: Mapping[str, str] = field(default_factory=dict)  # linux_aarch64 -> linux_64
    providers: Mapping[str, str | None] = field(default_factory=dict)
    github_actions: bool = False
    os_version: Mapping[str, str] = field(default_factory=dict)
    fallback_image: str = FALLBACK_DOCKER_IMAGE
    build_tool: str = "conda-build"
    # where noarch packages are built (conda-smithy's default: one build, on linux_64); on the
    # other platforms the CI-job split leaves them out (``_get_platforms_of_provider``)
    noarch_platforms: tuple[str, ...] = ("linux_64",)

    def build_of(self, platform_arch: str) -> str:
        return self.build_platform.get(platform_arch, platform_arch)

    def provider_key(self, platform_arch: str) -> str:
        """The provider line that decides whether ``platform_arch`` builds: conda-smithy
        (``_get_platforms_of_provider``) looks up the platform it is *built on*, so a
        cross-compiled target follows its build platform's line; a 64-bit build platform
        follows a legacy OS-wide line (``provider: osx: ...``) when that one is set."""
        build = self.build_of(platform_arch)
        system, _, arch = build.partition("_")
        if arch == "64" and _enabled(self.providers.get(system)):
            return system
        return build

    def provider_of(self, platform_arch: str) -> Any:
        key = self.provider_key(platform_arch)
        return self.providers[key] if key in self.providers else DEFAULT_PROVIDERS.get(key)

    def platforms(self) -> list[str]:
        """The target platforms conda-smithy writes CI jobs for: every platform it knows or
        conda-forge.yml cross-compiles, whose deciding provider line is not null."""
        targets = set(SMITHY_PLATFORMS) | set(self.build_platform)
        return sorted(t for t in targets if _enabled(self.provider_of(t)))

    def ignored_provider_lines(self) -> list[str]:
        """One warning per provider line that cannot take effect and would change the outcome
        if it did: its platform is cross-compiled, so its build platform's line decides."""
        found = []
        for key, value in self.providers.items():
            decider = self.provider_key(key)
            effective = self.provider_of(key)
            if key not in SMITHY_PLATFORMS or decider == key or _same(value, effective):
                continue
            build = self.build_of(key)
            message = (
                f"conda-forge.yml: `provider: {key}: {_shown(value)}` has no effect: {key} is "
                f"built on {build} (`build_platform: {key}: {build}`), so "
                f"`provider: {decider}: {_shown(effective)}` decides, as in conda-smithy"
            )
            if not _enabled(value):
                message += (
                    f"; to stop building {key}, delete `build_platform: {key}: {build}` "
                    "(or skip it in the recipe)"
                )
            found.append(message)
        return found


# conda-smithy's default ``build_platform`` keys (conda_smithy/data/conda-forge.yml): the
# targets it considers before conda-forge.yml adds any.
SMITHY_PLATFORMS = (
    "emscripten_wasm32",
    "freebsd_64",
    "linux_32",
    "linux_64",
    "linux_aarch64",
    "linux_armv6l",
    "linux_armv7l",
    "linux_ppc64",
    "linux_ppc64le",
    "linux_riscv64",
    "linux_s390x",
    "osx_64",
    "osx_arm64",
    "wasi_wasm32",
    "win_32",
    "win_64",
    "win_arm64",
    "zos_z",
)

# conda-smithy's default providers (the same file): only these three build unless
# conda-forge.yml names a provider.
DEFAULT_PROVIDERS = {"linux_64": "github_actions", "osx_64": "azure", "win_64": "github_actions"}


def _enabled(provider: Any) -> bool:
    """conda-smithy reads null (and an empty list) as "not built"; "None"/false as written
    by hand count as null too."""
    if isinstance(provider, (list, tuple)):
        return any(_enabled(p) for p in provider)
    return provider not in (None, "None", "none", False, "")


def _same(left: Any, right: Any) -> bool:
    return _enabled(left) == _enabled(right) and (not _enabled(left) or left == right)


def _shown(provider: Any) -> str:
    return "null" if provider is None else str(provider)


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
        noarch_platforms=tuple(str(p) for p in _as_list(data.get("noarch_platforms", "linux_64"))),
    )


def _as_list(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]
