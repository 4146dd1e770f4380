"""The packaging stages of recipe/build.sh and recipe/bld.bat, replayed on a wheel's files.

The rules are recipe/package_files.py's, loaded from the recipe folder: the same functions
the build scripts run (`plan_libtorch`, `plan_pytorch`), here over the wheel's file list
instead of a build's tree. Which conda-forge package owns which path comes from
tools/check/owned.py's ``OWNERS`` (what ``tools check`` reports as layout.dependency-owned):
a path libtorch would install that a host requirement of the libtorch output owns is the
build script's "already exists" stop.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from tools.check.owned import owner_by_pattern
from tools.foundation.errors import UserError
from tools.foundation.repo import recipe_script
from tools.layout.wheel import Wheel

LIBTORCH, LINALG, PYTORCH = "libtorch", "libtorch-cuda-linalg", "pytorch"
# A path tied to one Python: an extension module's ABI tag, Python source or bytecode, a
# versioned Python folder or site-packages, torch_python itself.
PYTHON_BOUND = re.compile(
    r"\.cpython-\d|\.cp3\d+-|\.abi3\.|\.pyd$|\.pyc?$|(^|/)python3(\.\d+)?/"
    r"|(^|/)site-packages/|(^|/)(lib)?torch_python\."
)


def load_rules(recipe_dir: Path) -> ModuleType:
    return recipe_script(recipe_dir, "package_files.py", "the recipe's file rules")


@dataclass(frozen=True)
class Problem:
    # "stops the build", "in two outputs", "in no output", "python-bound", "licence", "warning"
    kind: str
    path: str
    detail: str


@dataclass
class Replay:
    platform: str
    # output -> $PREFIX path (site-packages/torch/... for pytorch's torch/) -> size
    contents: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))
    links: dict[str, int] = field(default_factory=dict)  # pytorch's links to libtorch files
    left_to_host: list[tuple[str, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def fails(self) -> bool:
        return any(p.kind != "warning" for p in self.problems)


def replay(
    wheel: Wheel,
    rules: ModuleType,
    host: Mapping[str, Sequence[str]],
    licence_files: Sequence[str] | None,
) -> Replay:
    """``host``: output name -> its host requirement names (outputs the config builds);
    ``licence_files``: the recipe's license_file list when it is this wheel's release."""
    platform = wheel.platform
    result = Replay(platform)
    tests = []
    for rel in rules.unreleased(sorted(wheel.tree), platform):
        if rules.install_test_file(rel):
            tests.append(rel)  # upstream builds with INSTALL_TEST=1, the recipe with 0
        else:
            result.problems.append(Problem("stops the build", rel, rules.unreleased_error(rel)))
    if tests:
        result.notes.append(
            f"{len(tests)} files of upstream's C++ tests (INSTALL_TEST=1; the recipe builds"
            " with 0) go to no output"
        )
    libtorch = rules.plan_libtorch(sorted(wheel.tree), platform)
    if not libtorch:
        result.problems.append(
            Problem("stops the build", "install tree", "holds no files for libtorch")
        )
    for rel, dest in libtorch:
        result.contents[LIBTORCH][dest] = wheel.tree[rel]
        owner = owner_by_pattern(dest)
        if owner is not None and owner in host.get(LIBTORCH, ()):
            result.problems.append(
                Problem("stops the build", dest, rules.clobber_error(f"$PREFIX/{dest}"))
            )
        elif owner is not None:
            result.problems.append(
                Problem("warning", dest, f"{owner} owns this path (not a host requirement)")
            )
    placed = {rel for rel, _ in libtorch}
    for rel in sorted(wheel.tree):
        name = rel.rpartition("/")[2]
        # libtorch-cuda-linalg installs the library the compile stage stashed (Linux CUDA).
        if rel.startswith("lib/") and name.startswith("libtorch_cuda_linalg.") and LINALG in host:
            result.contents[LINALG][rel] = wheel.tree[rel]
            placed.add(rel)
    in_prefix = set(result.contents[LIBTORCH]) | set(result.contents.get(LINALG, {}))
    plan = rules.plan_pytorch(sorted(wheel.torch), in_prefix.__contains__, platform)
    _pytorch(wheel, rules, plan, result)
    _unplaced(wheel, rules, placed, plan, result)
    _two_outputs(result)
    _python_independent(result)
    _licences(wheel, licence_files, result)
    return result


def _pytorch(wheel: Wheel, rules: ModuleType, plan, result: Replay) -> None:
    if not any(rules.is_library(rel, result.platform) for rel, _ in plan.python_libraries):
        result.problems.append(
            Problem("stops the build", "torch/lib", "pip install left no torch_python library")
        )
    for rel in plan.strays:
        error = rules.stray_error(f"torch/{rel}", result.platform)
        result.problems.append(Problem("stops the build", f"torch/{rel}", error))
    moved = set()
    for rel, dest in plan.python_libraries:
        result.contents[PYTORCH][dest] = wheel.torch[rel]
        if rules.is_windows(result.platform) and rel.lower().endswith(".dll"):
            moved.add(rel)
    duplicates = {rel for rel, _ in plan.duplicates}
    # Windows' vendored static libraries: in no package, as in conda-forge's.
    dropped = {rel for rel, _ in plan.dropped} | set(plan.static)
    result.left_to_host.extend((f"torch/{rel}", owner) for rel, owner in plan.dropped)
    for rel, size in wheel.torch.items():
        if rel in moved or rel in dropped:
            continue
        if rel in duplicates:
            if not rules.is_windows(result.platform):
                result.links[f"site-packages/torch/{rel}"] = size
            continue
        result.contents[PYTORCH][f"site-packages/torch/{rel}"] = size


def _unplaced(wheel: Wheel, rules: ModuleType, placed: set[str], plan, result: Replay) -> None:
    kept = {p.removeprefix("site-packages/torch/") for p in result.contents[PYTORCH]}
    kept |= {rel for rel, _ in plan.python_libraries}
    unreleased = set(rules.unreleased(sorted(wheel.tree), result.platform))
    for rel in sorted(wheel.tree):
        if rel in placed or rel in kept or rel in plan.static or rel in unreleased:
            continue
        owner = rules.host_owner(rel)
        if owner is not None:
            if (f"torch/{rel}", owner) not in result.left_to_host:
                result.left_to_host.append((rel, owner))
            continue
        result.problems.append(Problem("in no output", rel, "no output ships this file"))


def _two_outputs(result: Replay) -> None:
    owners: dict[str, list[str]] = defaultdict(list)
    for output, files in result.contents.items():
        for path in files:
            owners[path].append(output)
    for path, outputs in sorted(owners.items()):
        if len(outputs) > 1:
            result.problems.append(Problem("in two outputs", path, " and ".join(outputs)))


def _python_independent(result: Replay) -> None:
    # libtorch (and libtorch-cuda-linalg) is built once and installed beside every Python's
    # pytorch package: a file tied to one Python there would serve the others wrongly.
    for output in (LIBTORCH, LINALG):
        for path in sorted(result.contents.get(output, {})):
            if PYTHON_BOUND.search(path):
                result.problems.append(
                    Problem(
                        "python-bound",
                        path,
                        f"{output} serves every Python; a file tied to one belongs in the "
                        "pytorch output (the rules in recipe/package_files.py)",
                    )
                )


def _licences(wheel: Wheel, licence_files: Sequence[str] | None, result: Replay) -> None:
    if licence_files is None:
        return
    for listed in licence_files:
        # A file at the source root (NOTICE) is in every release's archive; the wheel lists
        # only what setup.py names as License-File.
        if "/" in listed and listed not in wheel.licenses:
            result.problems.append(
                Problem(
                    "licence",
                    listed,
                    "meta.yaml's license_file lists it; the release's wheel has no such "
                    "License-File (conda-build stops at a missing licence file)",
                )
            )
    listed = set(licence_files)
    new = sorted(f for f in wheel.licenses if f.startswith("third_party/") and f not in listed)
    if new:
        result.notes.append(
            f"{len(new)} third_party licence file(s) the wheel lists and meta.yaml does not "
            "(vendored code the recipe takes from conda packages, or new): "
            + ", ".join(new[:8])
            + (" ..." if len(new) > 8 else "")
        )


LICENSE_BLOCK = re.compile(r"^  license_file:\n((?:    - .*\n)+)", re.M)


def licence_list(meta_text: str, source: str) -> list[str]:
    found = LICENSE_BLOCK.search(meta_text)
    if found is None:
        raise UserError(f"{source}: no about/license_file list")
    return [line.split("- ", 1)[1].split("#")[0].strip() for line in found.group(1).splitlines()]


def check_python(wheel: Wheel, pythons: Sequence[str], result: Replay) -> None:
    """The wheel's Python ABI, from its tag and its extension modules' suffixes, against
    the ``pythons`` the config builds pytorch for (``3.14t``: free-threaded): a wheel of an
    ABI the config has no pytorch for, or whose modules disagree with its tag, fails
    (tools/check/python_abi.py holds the same to built packages)."""
    from tools.check.python_abi import describe, extension_abi, wheel_tag_abi

    tag, tag_text = wheel_tag_abi(wheel.path.name)
    modules = {f"torch/{rel}": extension_abi(rel) for rel in sorted(wheel.torch)}
    modules = {path: abi for path, abi in modules.items() if abi}
    for path, abi in modules.items():
        if tag and abi != tag:
            result.problems.append(
                Problem(
                    "python ABI",
                    path,
                    f"an extension for Python {describe(abi)} in a wheel for {describe(tag)} "
                    f"({tag_text}): neither ABI loads the other's extensions",
                )
            )
    abi = tag or next(iter(modules.values()), None)
    if abi is None:
        return
    told = ", ".join([tag_text, *modules] if tag_text else modules)
    if pythons and abi not in pythons:
        result.problems.append(
            Problem(
                "python ABI",
                told,
                f"a wheel for Python {describe(abi)}, but the config builds pytorch for "
                f"{', '.join(pythons)}",
            )
        )
    else:
        result.notes.append(f"Python {describe(abi)}: {told}; the config builds pytorch for it")
