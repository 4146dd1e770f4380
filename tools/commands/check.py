"""``python -m tools check``: verify built packages before anyone uploads them."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = (
    "check built packages (.conda/.tar.bz2, a directory, a prefix or a wheel) "
    "like PyTorch's binary checks"
)

EPILOG = """\
checks (the "check" field of each finding):
  archive.member          no absolute, '..' or escaping members or links
  prefix.files            every file a prefix's conda-meta record lists is present
  binary.formats          how many ELF, Mach-O and PE files each package had read (--json:
                          "counts"); a Mach-O/PE file that does not parse fails, a binary of
                          a format no check reads or of another platform's format warns
  elf.read                every ELF member parses
  elf.machine             ELF files match the package's subdir (x86_64, aarch64 ...)
  elf.needed              NEEDED resolves via RUNPATH in the packages, to glibc/driver
                          libraries, or to a known provider among the run dependencies
                          (for a wheel: a library a wheel of its Requires-Dist ships)
  elf.runpath             RUNPATH/RPATH entries are $ORIGIN-relative, inside the prefix
  elf.glibc, elf.glibcxx, elf.cxxabi
                          highest symbol versions required, against the config's
                          c_stdlib_version and cxx_compiler_version
  macho.arch              Mach-O files hold the subdir's slice (x86_64 / arm64)
  macho.minos             LC_BUILD_VERSION minos <= the config's MACOSX_DEPLOYMENT_TARGET
                          (a wheel without --config: its macosx_X_Y tag)
  macho.install-name      dylibs are named @rpath/<name>
  macho.load-dylib        LC_LOAD_DYLIB resolves via LC_RPATH in the packages, to a run
                          dependency or to macOS; /usr/lib/libc++ (conda), /usr/local,
                          /opt/homebrew and other absolute paths fail
  macho.rpath             LC_RPATH entries are @loader_path-relative, inside the prefix
  macho.signature         arm64 files are signed and the signature matches the load commands
  macho.openmp            one OpenMP runtime, llvm-openmp's libomp.dylib; none bundled
  pe.machine              PE files match the package's subdir (AMD64 for win-64)
  pe.imports              imported DLLs resolve to the package (importer's folder,
                          Library/bin, torch/lib), a run dependency or Windows
  pe.crt                  the UCRT and vc14_runtime's VCRUNTIME140/MSVCP140 only: no debug
                          runtime, no msvcrt.dll (MinGW) or older MSVCR
  abi.cxx11               TorchConfig.cmake's _GLIBCXX_USE_CXX11_ABI matches libtorch_cpu.so
  abi.static-libstdcxx    no libstdc++ definitions inside torch libraries
  python.abi              one Python ABI (3.14 with the GIL, or 3.14t free-threaded) told by
                          the extension suffixes, the wheel tag or python_abi dependency, the
                          compiled code (CPython refcounting it calls, pythonXY[t].dll) and,
                          with --config, the Pythons the config builds pytorch for
  layout.expected-files   each output ships the libraries the recipe tests for
  layout.overlap          no path shipped by two differently named packages of one config
  layout.torch-lib-links  site-packages/torch/lib links resolve into $PREFIX/lib
  layout.pyc              no bytecode for another Python
  layout.build-prefix     no build-machine paths in text files
  layout.dependency-owned no file a conda-forge package owns (oneDNN's dnnl.h, cpuinfo.h ...):
                          fail when the owner is a run dependency, warn otherwise; checked
                          dependency packages count with their exact file lists
  cuda.runtime            libcudart.so.N matches the config's CUDA major; CPU links no CUDA
  cuda.magma              magma linked only by libtorch_cuda_linalg, per flavour
  cuda.fatbin             SASS and PTX in each .nv_fatbin (a DLL's .nv_fatb) against the
                          config's row of recipe/cuda_arch_lists.txt: a missing entry fails,
                          code the row did not ask for warns; SASS its GPUs cannot run (a
                          warning)
  cuda.native-aot         from 2.15 on, whether libtorch_cuda.so holds native-AOT kernels;
                          without them (the recipe's TORCH_NATIVE_AOT=0) a warning naming
                          the difference from upstream's wheel
  metadata.depends, metadata.constrains, metadata.run-exports
                          info/index.json and run_exports.json against the rendered recipe
                          (with --config only)
  metadata.output         with --config: each conda package is an output the config builds

which findings are shown:
  --only CHECK[,CHECK]  only these checks (repeatable); a family name (elf, layout, ...)
                        takes all of its checks
  --status STATUS       only findings with this status (fail, warn or pass; repeatable);
                        it filters what is printed, not what is counted: the summary line
                        and the exit status count every finding --only and --baseline leave
  --baseline PATH       leave out what the baseline (an upstream wheel, packages, a
                        directory or a prefix) has too, and report as fixed (pass) what it
                        has and ours do not.  A finding is in the baseline when the baseline
                        has a warn or fail of the same check for the corresponding file;
                        files correspond where they land in an installed torch: a wheel's
                        torch/lib/x.so is a conda package's lib/x.so and
                        lib/pythonX.Y/site-packages/torch/lib/x.so (bin/, include/ and
                        share/ likewise).  A finding about a whole package is in the baseline
                        when the baseline has the same check with the same detail.

PATH may be a directory: it is searched recursively for .conda/.tar.bz2 files directly
in it and in channel subdirectories (linux-64/, noarch/ ...), so build_artifacts/ works
and its pkg_cache/ (downloaded dependencies) is left out.

The report groups findings by check, the worst first, each headed by its counts (at
most 10 rows per status; --json lists all).  Status words are fail, warn and pass, as in
the JSON; they are coloured only on a terminal and never when NO_COLOR is set.

--json prints a list of objects {"check", "status", "path", "detail"} (binary.formats'
also "counts": {"ELF", "Mach-O", "PE", "unread"}); status is
"pass", "warn" or "fail"; path is PACKAGE or PACKAGE:MEMBER (or a MEMBER shared by
several packages, for layout.overlap).
With --config, packages built for another platform than the config's are refused (exit 2).

exit status: 0 no failure among the shown checks; 1 at least one failure that --only and
--baseline leave (also when --status hides it); 2 unusable input (a path, --config,
--only or --recipe-dir that cannot be used; an unknown config lists the three closest
names, an ambiguous one every match, one per line).
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument(
        "paths",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="a package, a directory of packages, an installed prefix, or a wheel",
    )
    parser.add_argument(
        "--config",
        metavar="CONFIG",
        help="the .ci_support config whose render supplies the expectations: full name, "
        "NAME.yaml, unique prefix, or a variant YAML path",
    )
    parser.add_argument(
        "--recipe-dir",
        metavar="DIR",
        help="recipe to render --config with (default: <repo>/recipe)",
    )
    parser.add_argument(
        "--baseline",
        metavar="PATH",
        type=Path,
        action="append",
        default=[],
        help="report only what differs from this wheel, package, directory or prefix "
        "(repeatable; see below)",
    )
    parser.add_argument(
        "--only",
        metavar="CHECK[,CHECK]",
        action="append",
        default=[],
        help="run and show only these checks or families (repeatable)",
    )
    parser.add_argument(
        "--status",
        choices=("fail", "warn", "pass"),
        action="append",
        default=[],
        help="show only findings with this status (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print findings as JSON")


def run(args: argparse.Namespace) -> int:
    import os
    import sys

    from tools.check import CHECK_IDS, load, resolve_only, run_checks
    from tools.check.baseline import compare
    from tools.check.expectations import Expectations, from_rendered, with_arch_list
    from tools.check.findings import any_failed
    from tools.check.report import failure_message, to_json, to_text, use_colour
    from tools.foundation.errors import ProblemsFound

    only = None
    if args.only:
        only = resolve_only(item for value in args.only for item in value.split(",") if item)
    expect = Expectations()
    if args.config:
        expect = from_rendered(_render(args.config, args.recipe_dir), config=args.config)
        expect = with_arch_list(expect, _recipe(args.recipe_dir))
    elif args.recipe_dir:
        _recipe(args.recipe_dir)  # a wrong --recipe-dir is an error even when unused
    packages = load(args.paths)
    findings = run_checks(packages, expect, only)
    notes = []
    if args.baseline:
        baseline_packages = load(args.baseline)
        compared = compare(
            findings, packages, run_checks(baseline_packages, expect, only), baseline_packages
        )
        findings = list(compared.new)
        notes.append(
            f"baseline: {len(compared.hidden)} finding(s) left out because "
            f"{', '.join(str(p) for p in args.baseline)} has them too"
        )
    counted = findings
    if args.status:
        findings = [f for f in findings if f.status in args.status]
    if args.json:
        print(to_json(findings))
        for note in notes:  # the document stays a list of findings; people read stderr
            print(note, file=sys.stderr)
    else:
        colour = use_colour(sys.stdout, os.environ)
        text = to_text(
            findings,
            check_order=CHECK_IDS,
            colour=colour,
            notes=notes,
            counted=counted,
            status_filter=args.status,
        )
        print(text)
    if any_failed(counted):
        raise ProblemsFound(failure_message(counted))
    return 0


def _recipe(value: str | None):
    from tools.foundation.repo import recipe_dir

    return recipe_dir(value)


def _render(config: str, recipe: str | None):
    from tools.foundation.repo import find_root
    from tools.render.config import render_config

    root = find_root()
    return render_config(config, root=root, recipe_dir=_recipe(recipe) if recipe else None)
