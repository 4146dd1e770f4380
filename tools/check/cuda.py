"""CUDA packages link the CUDA runtime of their config, carry the device code the recipe
asks for (and no other), and link magma only where chosen."""

from __future__ import annotations

import posixpath
import re

from tools.check.context import Context, is_torch
from tools.check.expectations import build_string_cuda_major, build_string_flavor
from tools.check.fatbin import DeviceCode
from tools.check.findings import Finding, failed, member_path, passed, warned
from tools.render.cuda_archs import Promise, parse_arch_list, runnable

_CUDART = re.compile(r"^libcudart\.so\.(\d+)$")
_CUDA_LIBS = re.compile(r"^lib(?:cudart|cuda|cublas|cublasLt|cudnn|nvrtc|nccl)\.so")
_MAGMA = re.compile(r"^libmagma(?:_sparse)?\.so")
LINALG_LIBRARY = "libtorch_cuda_linalg.so"
CUDA_LIBRARY = "libtorch_cuda.so"
#: The first release whose wheels link native-AOT kernels into libtorch_cuda
#: (pytorch#194242, #194243: a post-install stage 2 relinks torch_cuda with them).
NATIVE_AOT_SINCE = (2, 15)
_RELEASE = re.compile(r"^(\d+)\.(\d+)")


def check_cuda_runtime(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        if not is_torch(package) or not package.elves:
            continue
        expected = ctx.expect.cuda_major
        source = f"cuda_compiler_version {ctx.expect.cuda_compiler_version}"
        if expected is None:
            expected = build_string_cuda_major(package.build)
            source = f"build string {package.build}"
        if expected is None:
            continue
        bad = 0
        majors: set[str] = set()
        for path, info in sorted(package.elves.items()):
            where = member_path(package.label, path)
            for needed in info.needed:
                match = _CUDART.match(needed)
                if expected == 0 and _CUDA_LIBS.match(needed):
                    bad += 1
                    findings.append(
                        failed("cuda.runtime", where, f"CPU build ({source}) links {needed}")
                    )
                elif match:
                    majors.add(match.group(1))
                    if int(match.group(1)) != expected:
                        bad += 1
                        findings.append(
                            failed(
                                "cuda.runtime",
                                where,
                                f"links {needed}, but {source} means libcudart.so.{expected}",
                            )
                        )
        if not bad:
            if expected == 0:
                detail = f"CPU build ({source}): no CUDA libraries linked"
            elif majors:
                detail = f"links libcudart.so.{'/'.join(sorted(majors))} as {source} requires"
            else:
                detail = f"no libcudart linked ({source})"
            findings.append(passed("cuda.runtime", package.label, detail))
    return findings


def check_magma(ctx: Context) -> list[Finding]:
    findings: list[Finding] = []
    for package in ctx.analysed():
        if not is_torch(package) or not package.elves:
            continue
        for path, info in sorted(package.elves.items()):
            where = member_path(package.label, path)
            magma = sorted(n for n in info.needed if _MAGMA.match(n))
            if posixpath.basename(path) != LINALG_LIBRARY:
                if magma:
                    findings.append(
                        failed(
                            "cuda.magma",
                            where,
                            f"links {', '.join(magma)}; only {LINALG_LIBRARY} may use magma",
                        )
                    )
                continue
            output = ctx.expect.output_for(package.name, None, package.build)
            flavor = (
                (output.cuda_linalg_flavor if output else None)
                or ctx.expect.cuda_linalg_flavor
                or build_string_flavor(package.build)
            )
            if flavor is None:
                continue
            if flavor == "magma" and not magma:
                findings.append(
                    failed("cuda.magma", where, "magma flavour, but libmagma is not linked")
                )
            elif flavor == "nomagma" and magma:
                findings.append(
                    failed("cuda.magma", where, f"nomagma flavour, but links {', '.join(magma)}")
                )
            else:
                findings.append(
                    passed(
                        "cuda.magma",
                        where,
                        f"{flavor} flavour: libmagma {'linked' if magma else 'not linked'}",
                    )
                )
    return findings


def check_fatbins(ctx: Context) -> list[Finding]:
    """The config's TORCH_CUDA_ARCH_LIST is held both ways in every torch ELF file with
    device code: SASS for each entry and PTX for each +PTX entry, or a failure; device code
    the list did not ask for, a warning naming it (a build that ignored the list, e.g. one
    that took nvcc's CUDAARCHS, is not the package its config says). SASS that the config's
    CUDA version cannot run on its platform is reported too. Without a config (an upstream
    wheel) the device code is listed as a fact."""
    expect = ctx.expect
    promise = parse_arch_list(expect.cuda_arch_list) if expect.cuda_arch_list else None
    cuda = expect.cuda_compiler_version
    can_run = runnable(cuda, expect.subdir) if cuda and expect.subdir else None
    findings: list[Finding] = []
    for package in ctx.analysed():
        if not is_torch(package):
            continue
        # ELF's .nv_fatbin, and PE's .nv_fatb (its name cut to 8 characters: tools/check/pe.py)
        with_code = {**package.elves, **package.pes}
        for path, info in sorted(with_code.items()):
            if not info.device_code:
                continue
            where = member_path(package.label, path)
            held = " ".join(str(code) for code in info.device_code)
            if promise is None:
                findings.append(passed("cuda.fatbin", where, f"holds {held} (no config)"))
                continue
            findings.extend(_against_the_list(where, info.device_code, promise))
            sass = {code.arch for code in info.device_code if code.kind == "sass"}
            idle = sorted(a for a in sass if can_run is not None and a not in can_run)
            if idle:
                names = ", ".join(f"sm_{a}" for a in idle)
                detail = f"SASS for {names}, which no {expect.subdir} GPU runs with CUDA {cuda}"
                findings.append(warned("cuda.fatbin", where, detail))
    return findings


def _against_the_list(where: str, codes: tuple[DeviceCode, ...], promise: Promise) -> list[Finding]:
    """The fail/pass verdict on what the list asks for, and a warning on what it did not."""
    sass = {code.arch for code in codes if code.kind == "sass"}
    ptx = {code.arch for code in codes if code.kind == "ptx"}
    asked = [c for c in codes if c.arch in (promise.sass if c.kind == "sass" else promise.ptx)]
    extra = [c for c in codes if c not in asked]
    missing = [f"no SASS for sm_{a}" for a in sorted(promise.sass - sass)]
    missing += [f"no PTX for compute_{a}" for a in sorted(promise.ptx - ptx)]
    findings: list[Finding] = []
    if missing:
        held = " ".join(str(code) for code in codes)
        asks = f"which TORCH_CUDA_ARCH_LIST {promise.text} asks for"
        detail = f"{'; '.join(missing)}, {asks} (holds {held})"
        findings.append(failed("cuda.fatbin", where, detail))
    else:
        wanted = " ".join(str(code) for code in asked)
        findings.append(passed("cuda.fatbin", where, f"holds {wanted}, as {promise.text} asks"))
    if extra:
        names = ", ".join(str(code) for code in extra)
        findings.append(
            warned("cuda.fatbin", where, f"{names}: not in this config's list {promise.text}")
        )
    return findings


def check_native_aot(ctx: Context) -> list[Finding]:
    """Whether libtorch_cuda holds native-AOT kernels, as upstream's wheels from 2.15 on do.
    The recipe opts out (TORCH_NATIVE_AOT=0, recipe/README.md "Native AOT kernels"), so a
    package without them is the expected difference from upstream's wheel: reported as a
    warning, never a failure. Releases before 2.15 have none to compare."""
    findings: list[Finding] = []
    for package in ctx.analysed():
        release = _RELEASE.match(package.version)
        if not is_torch(package) or release is None:
            continue
        if tuple(map(int, release.groups())) < NATIVE_AOT_SINCE:
            continue
        for path, info in sorted(package.elves.items()):
            if posixpath.basename(path) != CUDA_LIBRARY or not info.device_code:
                continue
            where = member_path(package.label, path)
            if info.native_aot:
                detail = f"holds native-AOT kernels from {', '.join(info.native_aot)}"
                findings.append(passed("cuda.native-aot", where, detail))
            else:
                detail = (
                    "no native-AOT kernels, unlike upstream's wheel (whose libtorch_cuda "
                    "holds build/native_aot/topk/aot_topk_cuda.cpp objects): built with "
                    'TORCH_NATIVE_AOT=0, see recipe/README.md, "Native AOT kernels"'
                )
                findings.append(warned("cuda.native-aot", where, detail))
    return findings
