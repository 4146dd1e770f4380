"""Where files are: per-output contents, overlaps, torch/lib links, stray .pyc, leaks."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

from tools.check.archive import Package
from tools.check.context import Context, is_torch, package_python
from tools.check.expectations import build_string_cuda_major
from tools.check.findings import Finding, failed, member_path, passed
from tools.check.rules import each_package, verdict

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
    return each_package(
        ctx,
        lambda package: _expected_files(package, ctx),
        lambda p: p.kind == "conda" and p.subdir.startswith("linux"),
    )


def _expected_files(package: Package, ctx: Context) -> list[Finding]:
    cuda = ctx.expect.cuda_major
    if cuda is None:
        cuda = build_string_cuda_major(package.build)
    patterns = expected_files(package, cuda, package_python(package, ctx.expect))
    foreign = FOREIGN_FILES.get(package.name, ())
    if not patterns and not foreign:
        return []
    paths = [m.path for m in package.members]
    problems = [
        failed("layout.expected-files", package.label, f"missing {pattern}")
        for pattern in patterns
        if not fnmatch.filter(paths, pattern)
    ]
    problems += [
        failed("layout.expected-files", package.label, f"ships {path}, which belongs to {owner}")
        for path, owner in foreign
        if path in paths
    ]
    detail = f"all {len(patterns)} expected files present"
    return verdict("layout.expected-files", package, problems, detail)


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
    return each_package(
        ctx,
        lambda package: _torch_lib_links(package, ctx),
        lambda p: p.kind != "wheel" and p.name == "pytorch",
    )


def _torch_lib_links(package: Package, ctx: Context) -> list[Finding]:
    tree = ctx.tree_for(package)
    problems = []
    links = 0
    for member in package.members:
        match = _SITE_TORCH_LIB.match(member.path)
        if not match or member.kind == "dir":
            continue
        links += member.kind == "symlink"
        where = member_path(package.label, member.path)
        if member.kind == "symlink":
            resolved = tree.resolve(member.path)
            if resolved is None:
                why = f"link to {member.target} resolves to no file in the packages"
            elif not resolved.startswith("lib/") or "/site-packages/" in resolved:
                why = f"link resolves to {resolved}, not into $PREFIX/lib"
            else:
                continue
        elif tree.get(f"lib/{match['rest']}") is not None:
            why = f"a copy of lib/{match['rest']}; it should be a link to it"
        else:
            continue
        problems.append(failed("layout.torch-lib-links", where, why))
    detail = f"{links} torch/lib links resolve into $PREFIX/lib; no copies of its files"
    return verdict("layout.torch-lib-links", package, problems, detail if links else None)


def check_pyc(ctx: Context) -> list[Finding]:
    return each_package(ctx, lambda package: _pyc(package, ctx))


def _pyc(package: Package, ctx: Context) -> list[Finding]:
    python = package_python(package, ctx.expect)
    if python is None:
        return []
    tag = python.replace(".", "")
    pycs = [m.path for m in package.members if m.path.endswith(".pyc")]
    problems = [
        failed(
            "layout.pyc",
            member_path(package.label, path),
            f"bytecode for another Python (package is for {python})",
        )
        for path in pycs
        if (m := _PYC.search(path)) and m["tag"] != tag
    ]
    detail = f"{len(pycs)} .pyc files, all for Python {python}" if pycs else None
    return verdict("layout.pyc", package, problems, detail)


def check_build_prefix(ctx: Context) -> list[Finding]:
    """Build-machine paths in text files, except the host prefix conda relocates."""
    return each_package(ctx, _build_prefix, lambda p: is_torch(p) or p.kind == "conda")


def _build_prefix(package: Package) -> list[Finding]:
    problems = []
    for path, strings in sorted(package.prefix_strings.items()):
        placeholder = package.placeholders.get(path)
        stray = [s for s in strings if not (placeholder and s.startswith(placeholder))]
        if stray:
            shown = ", ".join(stray[:2]) + (f" (+{len(stray) - 2} more)" if len(stray) > 2 else "")
            problems.append(
                failed(
                    "layout.build-prefix",
                    member_path(package.label, path),
                    f"build-machine path left in a text file: {shown}",
                )
            )
    detail = "no build-machine paths in text files (relocatable ones excepted)"
    return verdict("layout.build-prefix", package, problems, detail)
