"""Where files are: per-output contents, overlaps, torch/lib links, stray .pyc, leaks."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from tools.check.archive import Package
from tools.check.context import Context, is_torch, package_python
from tools.check.expectations import build_string_cuda_major
from tools.check.findings import Finding, failed, member_path, passed

IDS = (
    "layout.expected-files",
    "layout.overlap",
    "layout.torch-lib-links",
    "layout.pyc",
    "layout.build-prefix",
)

_SITE_TORCH_LIB = re.compile(r"^lib/python\d+\.\d+/site-packages/torch/lib/(?P<rest>.+)$")
_PYC = re.compile(r"(?:^|/)__pycache__/[^/]+\.(?:cpython|cp)-?(?P<tag>\d{2,3})[^/]*\.pyc$")

LIBTORCH_LIBS = ("c10", "shm", "torch", "torch_cpu", "torch_global_deps")
LIBTORCH_CUDA_LIBS = ("c10_cuda", "caffe2_nvrtc", "torch_cuda")
# Files another output owns (the recipe's tests assert their absence too).
FOREIGN_FILES: dict[str, tuple[tuple[str, str], ...]] = {
    "libtorch": (
        ("lib/libtorch_python.so", "pytorch"),
        ("lib/libtorch_cuda_linalg.so", "libtorch-cuda-linalg"),
    ),
}


def expected_files(package: Package, cuda_major: int | None, python: str | None) -> tuple[str, ...]:
    """Glob patterns each Linux output must ship (the recipe's own test list)."""
    if package.name == "libtorch":
        libs = LIBTORCH_LIBS + (LIBTORCH_CUDA_LIBS if cuda_major else ())
        return (*(f"lib/lib{lib}.so" for lib in libs), "share/cmake/Torch/TorchConfig.cmake")
    if package.name == "libtorch-cuda-linalg":
        return ("lib/libtorch_cuda_linalg.so",)
    if package.name == "pytorch":
        site = f"lib/python{python}/site-packages" if python else "lib/python*/site-packages"
        tag = python.replace(".", "") if python else "*"
        return (
            "lib/libtorch_python.so",
            f"{site}/torch/__init__.py",
            f"{site}/torch/_C.cpython-{tag}*.so",
        )
    return ()


def check_expected_files(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        if package.kind != "conda" or not package.subdir.startswith("linux"):
            continue
        cuda = ctx.expect.cuda_major
        if cuda is None:
            cuda = build_string_cuda_major(package.build)
        patterns = expected_files(package, cuda, package_python(package, ctx.expect))
        foreign = FOREIGN_FILES.get(package.name, ())
        if not patterns and not foreign:
            continue
        paths = [m.path for m in package.members]
        missing = [p for p in patterns if not fnmatch.filter(paths, p)]
        for pattern in missing:
            findings.append(failed("layout.expected-files", package.label, f"missing {pattern}"))
        for path, owner in foreign:
            if path in paths:
                findings.append(
                    failed(
                        "layout.expected-files",
                        package.label,
                        f"ships {path}, which belongs to {owner}",
                    )
                )
        if not missing and not any(path in paths for path, _ in foreign):
            findings.append(
                passed(
                    "layout.expected-files",
                    package.label,
                    f"all {len(patterns)} expected files present",
                )
            )
    return findings


def check_overlap(ctx: Context) -> list[Finding]:
    """Packages of one config are installed together: none may ship another's path.

    Packages with the same name are alternatives (one per Python, magma and
    nomagma) and are never installed together, so they may share paths.
    """
    findings: list[Finding] = []
    for group in ctx.groups().values():
        if len({p.name for p in group}) < 2:
            continue
        owners: dict[str, list[Package]] = {}
        for package in group:
            for member in package.members:
                if member.kind != "dir":
                    owners.setdefault(member.path, []).append(package)
        clashes = 0
        for path, packages in sorted(owners.items()):
            names = sorted({p.name for p in packages})
            if len(names) > 1:
                clashes += 1
                labels = ", ".join(sorted({p.label for p in packages}))
                findings.append(
                    failed("layout.overlap", path, f"shipped by {len(names)} packages: {labels}")
                )
        if not clashes:
            findings.append(
                passed(
                    "layout.overlap",
                    _group_label(group),
                    f"no path shipped by two of {len(group)} packages",
                )
            )
    return findings


def _group_label(group: Sequence[Package]) -> str:
    return ", ".join(sorted(p.label for p in group))


def check_torch_lib_links(ctx: Context) -> list[Finding]:
    """site-packages/torch/lib entries that duplicate $PREFIX/lib are links into it."""
    findings: list[Finding] = []
    for package in ctx.analysed():
        if package.kind == "wheel" or package.name != "pytorch":
            continue
        tree = ctx.tree_for(package)
        bad = links = 0
        for member in package.members:
            match = _SITE_TORCH_LIB.match(member.path)
            if not match or member.kind == "dir":
                continue
            links += member.kind == "symlink"
            where = member_path(package.label, member.path)
            if member.kind == "symlink":
                resolved = tree.resolve(member.path)
                if resolved is None:
                    bad += 1
                    findings.append(
                        failed(
                            "layout.torch-lib-links",
                            where,
                            f"link to {member.target} resolves to no file in the packages",
                        )
                    )
                elif not resolved.startswith("lib/") or "/site-packages/" in resolved:
                    bad += 1
                    findings.append(
                        failed(
                            "layout.torch-lib-links",
                            where,
                            f"link resolves to {resolved}, not into $PREFIX/lib",
                        )
                    )
            elif tree.get(f"lib/{match['rest']}") is not None:
                bad += 1
                findings.append(
                    failed(
                        "layout.torch-lib-links",
                        where,
                        f"a copy of lib/{match['rest']}; it should be a link to it",
                    )
                )
        if links and not bad:
            findings.append(
                passed(
                    "layout.torch-lib-links",
                    package.label,
                    f"{links} torch/lib links resolve into $PREFIX/lib; no copies of its files",
                )
            )
    return findings


def check_pyc(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        python = package_python(package, ctx.expect)
        if python is None:
            continue
        tag = python.replace(".", "")
        pycs = [m.path for m in package.members if m.path.endswith(".pyc")]
        foreign = [p for p in pycs if (m := _PYC.search(p)) and m["tag"] != tag]
        for path in foreign:
            findings.append(
                failed(
                    "layout.pyc",
                    member_path(package.label, path),
                    f"bytecode for another Python (package is for {python})",
                )
            )
        if pycs and not foreign:
            findings.append(
                passed(
                    "layout.pyc", package.label, f"{len(pycs)} .pyc files, all for Python {python}"
                )
            )
    return findings


def check_build_prefix(ctx: Context) -> list[Finding]:
    """Build-machine paths in text files, except the host prefix conda relocates."""
    findings: list[Finding] = []
    for package in ctx.analysed():
        if not (is_torch(package) or package.kind == "conda"):
            continue
        leaks = 0
        for path, strings in sorted(package.prefix_strings.items()):
            placeholder = package.placeholders.get(path)
            stray = [s for s in strings if not (placeholder and s.startswith(placeholder))]
            if stray:
                leaks += 1
                shown = ", ".join(stray[:2]) + (
                    f" (+{len(stray) - 2} more)" if len(stray) > 2 else ""
                )
                findings.append(
                    failed(
                        "layout.build-prefix",
                        member_path(package.label, path),
                        f"build-machine path left in a text file: {shown}",
                    )
                )
        if not leaks:
            findings.append(
                passed(
                    "layout.build-prefix",
                    package.label,
                    "no build-machine paths in text files (relocatable ones excepted)",
                )
            )
    return findings
