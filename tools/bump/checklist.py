"""The last stage: what only a person can decide, from what the earlier stages found: patches
to refresh or drop, a backend the build scripts do not know, build options and environment
knobs the scripts leave at upstream's default, the C++ standard consumers now need, configs
below the oldest CUDA the source accepts, licence files the source lacks, pins that moved, a
CUDA release the configs do not build, Pythons above the supported range."""

from __future__ import annotations

from collections.abc import Sequence

from tools.bump.backend import Backend
from tools.bump.licences import Licences
from tools.bump.patches import PatchResult
from tools.bump.source import CudaMinimum
from tools.bump.wheel import PythonRange, WheelFacts


def setuptools_only(result: PatchResult) -> bool:
    """The patch changes only setup.py's build machinery (setup.py, tools/setup_helpers/),
    which a scikit-build-core build never runs: PyTorch's 0003 (CMAKE_ARGS to the first
    configure) is one."""
    return bool(result.targets) and all(
        t == "setup.py" or t.startswith("tools/setup_helpers/") for t in result.targets
    )


def patch_items(results: Sequence[PatchResult], backend: Backend) -> list[str]:
    items = []
    for result in results:
        if setuptools_only(result) and backend.kind == "scikit-build-core":
            items.append(
                f"drop {result.name}: it patches only {', '.join(result.targets)} (setup.py's "
                "build), which a scikit-build-core source does not run; the build scripts "
                "need nothing from it there"
            )
        elif result.applies:
            continue
        elif result.already_applied:
            items.append(f"drop {result.name}: the new source already carries it")
        else:
            items.append(f"refresh {result.describe()}")
    return items


def backend_items(backend: Backend) -> list[str]:
    if backend.kind is None:
        return [f"teach recipe/build.sh and recipe/bld.bat this source: {backend.declared}"]
    return []


def python_items(pythons: PythonRange, requires_python: str | None, origin: str) -> list[str]:
    """``origin``: where ``requires_python`` came from (the archive's pyproject.toml, or the
    wheel's METADATA when the source declares none)."""
    items = []
    if requires_python is None:
        items.append(
            "Python: neither the new source's pyproject.toml nor a wheel states "
            "requires-python; the recipes' skips were left as they are"
        )
    elif not pythons.known and not pythons.rejected_above:
        items.append(
            f"Python: the recipes' skips were left as they are (Requires-Python "
            f"{requires_python} from {origin}, and no python list in .ci_support/)"
        )
    if pythons.rejected_above:
        items.append(
            f"Python {', '.join(pythons.rejected_above)}: upstream's Requires-Python "
            f"{requires_python} ({origin}) rejects them; skip them by hand or keep them"
        )
    return items


def wheel_items(
    facts: WheelFacts | None, cuda_versions: Sequence[str], moved: Sequence[str]
) -> list[str]:
    if facts is None:
        return [
            "no --wheel: the CUDA release of upstream's wheel and the pins were not compared; "
            "run `python -m tools drift --wheel torch-VERSION-....whl` once the wheel is out"
        ]
    items = []
    if facts.cuda is not None:
        same_major = [v for v in cuda_versions if v.split(".")[0] == facts.cuda.major]
        if not same_major:
            items.append(
                f"CUDA {facts.cuda.major}: upstream builds with {facts.cuda.text}, and no "
                "configuration builds that CUDA major (a conda-forge migration adds it)"
            )
        elif facts.cuda.version not in same_major:
            items.append(
                f"CUDA: upstream builds with {facts.cuda.version} "
                f"({facts.cuda.text.split(';')[0]}), "
                f"the CUDA {facts.cuda.major} configurations with {', '.join(same_major)}; "
                "check the release notes for what needs the newer toolkit"
            )
    items += [f"pin {line}" for line in moved]
    return items


def option_items(options: Sequence[str]) -> list[str]:
    if not options:
        return []
    return [
        f"build options the scripts leave at upstream's default ({len(options)}): "
        f"{', '.join(options)}; set the new ones in recipe/build.sh and recipe/bld.bat "
        "or leave them"
    ]


def knob_items(knobs: dict[str, str]) -> list[str]:
    """``knobs``: {name: the file that reads it} for the knobs no build script names."""
    if not knobs:
        return []
    named = ", ".join(f"{name} ({where})" for name, where in sorted(knobs.items()))
    return [
        f"environment knobs the new source's CMake reads that neither build script names "
        f"({len(knobs)}): {named}; set them in recipe/build.sh and recipe/bld.bat or leave "
        "them at upstream's default"
    ]


def cxx_items(standard: int | None) -> list[str]:
    """recipe/cmake_test follows the installed release's standard by itself; what is left for
    a person is the packages that build against libtorch."""
    if standard is None:
        return []
    return [
        f"C++{standard}: the new TorchConfig.cmake requires cxx_std_{standard} of every "
        f"consumer (recipe/cmake_test builds with it by itself); packages that build against "
        f"libtorch need a C++{standard} compiler"
    ]


def cuda_floor_items(minimum: CudaMinimum | None, below: dict[str, Sequence[str]]) -> list[str]:
    """``below``: {CUDA version: the configs that build it} under the source's minimum."""
    return [
        f"CUDA {version}: the new source's CMake requires CUDA {minimum.version} or newer "
        f"({minimum.where}), and {len(configs)} config(s) build {version}: "
        f"{', '.join(configs)}; drop them (a CUDA migration in the pinning) before this release"
        for version, configs in below.items()
    ]


def licence_items(licences: Licences) -> list[str]:
    items = []
    if licences.missing:
        items.append(
            f"licence files the recipes list that the new source lacks "
            f"({len(licences.missing)}): {', '.join(licences.missing)}; conda-build and "
            "rattler-build stop on each: drop or rename them in recipe/meta.yaml and "
            "recipe/recipe-v1.yaml"
        )
    if licences.unlisted:
        items.append(
            f"licence files the new source's pyproject.toml declares (license-files) that the "
            f"recipes do not list ({len(licences.unlisted)}): {', '.join(licences.unlisted)}; "
            "list those of code the packages ship"
        )
    return items
