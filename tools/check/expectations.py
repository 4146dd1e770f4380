"""What one config promises about its packages: the checks' point of comparison.

Expectations come from the toolkit's render of a ``.ci_support`` config
(:func:`from_rendered`) or are written out explicitly (tests, other tools).
Without a config the checks fall back to what a package says about itself
(its build string), and comparisons that need the config are reported as such.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from tools.recipe.namespace import python_label


@dataclass(frozen=True)
class OutputExpectation:
    name: str
    run: tuple[str, ...] = ()
    run_constrained: tuple[str, ...] = ()
    declares_run_exports: bool = False
    python: str | None = None  # "3.12" for per-Python outputs
    python_abi: str | None = None  # "3.14t" for a free-threaded Python, else as python
    build_string: str | None = None
    cuda_linalg_flavor: str | None = None  # "magma" / "nomagma" for libtorch-cuda-linalg


@dataclass(frozen=True)
class Expectations:
    config: str | None = None
    subdir: str | None = None  # the config's target platform: "linux-64", "osx-arm64" ...
    c_stdlib_version: str | None = None  # "2.17"; on macOS the deployment target, "12.0"
    # MACOSX_DEPLOYMENT_TARGET: the oldest macOS the packages promise to run on ("12.0")
    macos_deployment_target: str | None = None
    cxx_compiler_version: str | None = None  # "14"
    cuda_compiler_version: str | None = None  # "12.9", or "None" for CPU builds
    cuda_linalg_flavor: str | None = None  # "magma" / "nomagma"
    cuda_arch_list: str | None = None  # the config's TORCH_CUDA_ARCH_LIST (recipe's row)
    outputs: tuple[OutputExpectation, ...] = field(default=())

    @property
    def cuda_major(self) -> int | None:
        """The CUDA major version, 0 for a CPU config, None when unknown."""
        return cuda_major(self.cuda_compiler_version)

    def output_for(
        self, name: str, python: str | None, build: str | None = None
    ) -> OutputExpectation | None:
        """The rendered output a package was built from: same build string, else same name
        (and Python)."""
        exact = [o for o in self.outputs if o.name == name and build and o.build_string == build]
        if exact:
            return exact[0]
        candidates = [o for o in self.outputs if o.name == name]
        if python is not None and len(candidates) > 1:
            candidates = [o for o in candidates if o.python == python] or candidates
        return candidates[0] if candidates else None


class RenderedOutputLike(Protocol):
    name: str
    build_string: str
    skip: bool
    requirements: Mapping[str, Sequence[str]]
    run_exports: object
    variant: Mapping[str, str]


def cuda_major(version: str | None) -> int | None:
    if version is None:
        return None
    if version in ("None", "none", ""):
        return 0
    match = re.match(r"(\d+)", version)
    return int(match.group(1)) if match else None


def python_minor(value: str | None) -> str | None:
    """``3.12.* *_cpython`` → ``3.12``."""
    if not value:
        return None
    match = re.match(r"\s*(\d+)\.(\d+)", str(value))
    return f"{match.group(1)}.{match.group(2)}" if match else None


def _declares(run_exports: object) -> bool:
    if run_exports is None:
        return False
    if isinstance(run_exports, Mapping):
        return any(bool(v) for v in run_exports.values())
    if isinstance(run_exports, (list, tuple)):
        return bool(run_exports)
    return bool(run_exports)


def from_rendered(outputs: Iterable[RenderedOutputLike], config: str | None = None) -> Expectations:
    """Expectations for one config from ``tools.render.config.render_config``'s records."""
    kept = [o for o in outputs if not o.skip]
    variant: Mapping[str, str] = kept[0].variant if kept else {}
    # One config builds both linalg flavours; the flavour is per output.
    flavors = {_scalar(o.variant.get("cuda_linalg_flavor")) for o in kept}
    subdirs = [o.subdir for o in kept if getattr(o, "subdir", "noarch") != "noarch"]
    subdir = subdirs[0] if subdirs else None
    c_stdlib_version = _scalar(variant.get("c_stdlib_version"))
    return Expectations(
        config=config,
        subdir=subdir,
        c_stdlib_version=c_stdlib_version,
        # conda-forge's osx configs set both to one value (c_stdlib macosx_deployment_target)
        macos_deployment_target=_scalar(variant.get("MACOSX_DEPLOYMENT_TARGET"))
        or (c_stdlib_version if subdir and subdir.startswith("osx-") else None),
        cxx_compiler_version=_scalar(variant.get("cxx_compiler_version")),
        cuda_compiler_version=_scalar(variant.get("cuda_compiler_version")),
        cuda_linalg_flavor=flavors.pop() if len(flavors) == 1 else None,
        outputs=tuple(
            OutputExpectation(
                name=o.name,
                run=tuple(o.requirements.get("run", ())),
                run_constrained=tuple(o.requirements.get("run_constrained", ())),
                declares_run_exports=_declares(o.run_exports),
                python=python_minor(_scalar(o.variant.get("python"))),
                python_abi=python_label(_scalar(o.variant.get("python")) or "") or None,
                build_string=o.build_string,
                cuda_linalg_flavor=_scalar(o.variant.get("cuda_linalg_flavor")),
            )
            for o in kept
        ),
    )


def with_arch_list(expect: Expectations, recipe_dir: Path) -> Expectations:
    """``expect`` with the config's TORCH_CUDA_ARCH_LIST from the recipe's arch lists."""
    from tools.render.cuda_archs import arch_list

    found = arch_list(recipe_dir, expect.cuda_compiler_version, expect.subdir)
    return replace(expect, cuda_arch_list=found)


def _scalar(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return str(value[0]) if value else None
    return str(value)


# ------------------------------------------------------------ build-string hints


def build_string_cuda_major(build: str) -> int | None:
    """``cuda129_mkl_h…`` → 12, ``cpu_generic_…`` → 0, anything else → None."""
    match = re.match(r"cuda(\d+?)(\d)(?:_|$)", build)
    if match:
        return int(match.group(1))
    if build.startswith("cpu_") or build == "cpu":
        return 0
    return None


def build_string_flavor(build: str) -> str | None:
    tokens = build.split("_")
    if "nomagma" in tokens:
        return "nomagma"
    if "magma" in tokens:
        return "magma"
    return None


def build_string_python(build: str) -> str | None:
    match = re.search(r"(?:^|_)py(\d)(\d+)(?:_|h|$)", build)
    return f"{match.group(1)}.{match.group(2)}" if match else None
