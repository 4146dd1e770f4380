"""The C++ ABI torch promises (TorchConfig.cmake) against the one it ships.

Mirrors PyTorch's own binary check: a cxx11-ABI build exports many symbols
spelled with std::__cxx11::basic_string/list and none with the old spellings,
and the reverse for an old-ABI build.  A torch library must also not carry
libstdc++ itself (statically linked std:: definitions, pytorch#133437).
"""

from __future__ import annotations

import posixpath
import re

from tools.check.archive import Package
from tools.check.context import Context, is_torch
from tools.check.findings import Finding, failed, member_path, passed, warned
from tools.check.rules import each_package, verdict

IDS = ("abi.cxx11", "abi.static-libstdcxx")

_ABI_FLAG = re.compile(r"_GLIBCXX_USE_CXX11_ABI=([01])")
# Thresholds of PyTorch's check_binary_symbols.py: enough evidence that the
# library really uses one ABI, not a handful of stray symbols.
MIN_CXX11_SYMBOLS = 100
MIN_OLD_ABI_SYMBOLS = 1000


def declared_abi(torch_config: str) -> int | None:
    """The ``_GLIBCXX_USE_CXX11_ABI`` value TorchConfig.cmake hands to consumers."""
    values = set(_ABI_FLAG.findall(torch_config))
    if len(values) == 1:
        return int(values.pop())
    return None if not values else -1


def _torch_configs(packages: list[Package]) -> list[tuple[Package, str, str]]:
    return [
        (p, path, text)
        for p in packages
        for path, text in sorted(p.texts.items())
        if posixpath.basename(path) == "TorchConfig.cmake"
    ]


def check_cxx11_abi(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for group in ctx.groups().values():
        torch_cpu = [
            (p, path, info)
            for p in group
            for path, info in sorted(p.elves.items())
            if posixpath.basename(path) == "libtorch_cpu.so"
        ]
        if not torch_cpu:
            continue
        configs = _torch_configs(group)
        for package, path, info in torch_cpu:
            where = member_path(package.label, path)
            if configs:
                cfg_pkg, cfg_path, text = configs[0]
                declared = declared_abi(text)
                if declared == -1:
                    findings.append(
                        failed(
                            "abi.cxx11",
                            member_path(cfg_pkg.label, cfg_path),
                            "sets _GLIBCXX_USE_CXX11_ABI to both 0 and 1",
                        )
                    )
                    continue
                source = (
                    f"{cfg_path} sets _GLIBCXX_USE_CXX11_ABI={declared}"
                    if declared is not None
                    else f"{cfg_path} sets no _GLIBCXX_USE_CXX11_ABI (compilers default to 1)"
                )
                expected = 1 if declared is None else declared
            else:
                source, expected = (
                    "no TorchConfig.cmake in the packages; assuming the default, 1",
                    1,
                )
            counts = (
                f"{info.cxx11_symbols} cxx11 and {info.old_abi_symbols} old-ABI symbols "
                "in c10/at/torch/caffe2"
            )
            if expected == 1:
                ok = info.old_abi_symbols == 0 and info.cxx11_symbols >= MIN_CXX11_SYMBOLS
            else:
                ok = info.cxx11_symbols == 0 and info.old_abi_symbols >= MIN_OLD_ABI_SYMBOLS
            if ok:
                findings.append(passed("abi.cxx11", where, f"{source}; {counts}"))
            else:
                findings.append(
                    failed("abi.cxx11", where, f"{source}, but libtorch_cpu.so has {counts}")
                )
    return findings


def check_static_libstdcxx(ctx: Context) -> list[Finding]:
    return each_package(ctx, _static_libstdcxx, lambda p: is_torch(p) and p.elves)


def _static_libstdcxx(package: Package) -> list[Finding]:
    problems = []
    for path, info in sorted(package.elves.items()):
        if not info.std_definitions:
            continue
        detail = (
            f"defines {info.std_definitions} libstdc++ symbols (statically linked), "
            f"e.g. {', '.join(info.std_definition_sample[:3])}"
        )
        where = member_path(package.label, path)
        if package.kind == "wheel":
            # Upstream wheels are built with devtoolset, whose libstdc++_nonshared.a
            # links newer std:: pieces in on purpose.
            detail += " (expected from devtoolset-built wheels)"
            problems.append(warned("abi.static-libstdcxx", where, detail))
        else:
            problems.append(failed("abi.static-libstdcxx", where, detail))
    detail = f"no std:: definitions in {len(package.elves)} ELF files"
    return verdict("abi.static-libstdcxx", package, problems, detail)
