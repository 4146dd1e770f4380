"""What one ``.ci_support`` config says about how heavy it is and where it may run.

Sharding (``shard``) and the GitHub Actions matrix (``runners``) both need the
same few keys of a config, read once into a frozen record.  The file is
machine-written by a rerender, so a missing key means "not set", never an error;
a file that is not a mapping of lists is an error naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ConfigFacts:
    name: str
    target_platform: str  # linux-64, linux-aarch64, osx-64, osx-arm64, win-64
    cuda: str | None  # cuda_compiler_version, None for CPU configs
    pythons: int  # how many pytorch outputs the megabuild makes
    labels: tuple[str, ...]  # github_actions_labels, () when the config names none
    docker_image: str | None

    @property
    def os(self) -> str:
        return self.target_platform.split("-", 1)[0]


def _first(value: object) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return None if value is None else str(value)


def _platform_from_name(name: str) -> str:
    """conda-smithy names start with the subdir: ``linux_aarch64_...`` is linux-aarch64."""
    os_name, _, rest = name.partition("_")
    arch = rest.split("_", 1)[0]
    return f"{os_name}-{arch}"


def facts_from_mapping(name: str, data: Mapping[str, object]) -> ConfigFacts:
    cuda = _first(data.get("cuda_compiler_version"))
    pythons = data.get("python")
    labels = data.get("github_actions_labels")
    return ConfigFacts(
        name=name,
        target_platform=_first(data.get("target_platform")) or _platform_from_name(name),
        cuda=None if cuda in (None, "None") else cuda,
        pythons=len(pythons) if isinstance(pythons, list) and pythons else 1,
        labels=tuple(str(label) for label in labels) if isinstance(labels, list) else (),
        docker_image=_first(data.get("docker_image")),
    )


def read_facts(path: Path) -> ConfigFacts:
    """The facts of one variant file; a damaged or empty one is an error naming it (the same
    words every command uses: tools.recipe.variant_config.parse_variant_file)."""
    from tools.foundation.files import read_user_file
    from tools.recipe.variant_config import parse_variant_file

    return facts_from_mapping(path.stem, parse_variant_file(read_user_file(path), str(path)))
