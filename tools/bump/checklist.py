"""Stage 7: what only a person can decide, from what the earlier stages found: patches to
refresh or drop, a backend the build scripts do not know, build options the scripts leave at
upstream's default, pins that moved, a CUDA release the configs do not build, Pythons above
the supported range."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from tools.bump.backend import Backend
from tools.bump.patches import PatchResult
from tools.bump.wheel import PythonRange, WheelFacts

_OPTION = re.compile(r"^\s*(?:cmake_dependent_)?option\(\s*(?P<name>[A-Z][A-Z0-9_]*)", re.M)


def new_options(cmakelists: Path, scripts: Sequence[Path]) -> list[str]:
    """Options the source's top-level CMakeLists.txt declares that no build script names."""
    if not cmakelists.is_file():
        return []
    declared = dict.fromkeys(m["name"] for m in _OPTION.finditer(cmakelists.read_text("utf-8")))
    named = "\n".join(p.read_text("utf-8") for p in scripts if p.is_file())
    return [name for name in declared if not re.search(rf"\b{name}\b", named)]


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


def wheel_items(
    facts: WheelFacts | None,
    pythons: PythonRange,
    cuda_versions: Sequence[str],
    moved: Sequence[str],
) -> list[str]:
    if facts is None:
        return [
            "no --wheel: the Python range, the CUDA release and the pins were not compared; "
            "run `python -m tools drift --wheel torch-VERSION-....whl` once the wheel is out"
        ]
    items = []
    if not pythons.known and not pythons.rejected_above:
        items.append(
            f"Python: the recipes' skips were left as they are (Requires-Python "
            f"{facts.requires_python or 'absent'}, and no python list in .ci_support/)"
        )
    if pythons.rejected_above:
        items.append(
            f"Python {', '.join(pythons.rejected_above)}: upstream's Requires-Python "
            f"{facts.requires_python} rejects them; skip them by hand or keep them"
        )
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
