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
  elf.read                every ELF member parses (Mach-O/PE packages: a warning)
  elf.machine             ELF files match the package's subdir (x86_64, aarch64 ...)
  elf.needed              NEEDED resolves via RUNPATH in the packages, to glibc/driver
                          libraries, or to a known provider among the run dependencies
  elf.runpath             RUNPATH/RPATH entries are $ORIGIN-relative, inside the prefix
  elf.glibc, elf.glibcxx, elf.cxxabi
                          highest symbol versions required, against the config's
                          c_stdlib_version and cxx_compiler_version
  abi.cxx11               TorchConfig.cmake's _GLIBCXX_USE_CXX11_ABI matches libtorch_cpu.so
  abi.static-libstdcxx    no libstdc++ definitions inside torch libraries
  layout.expected-files   each output ships the libraries the recipe tests for
  layout.overlap          no path shipped by two differently named packages of one config
  layout.torch-lib-links  site-packages/torch/lib links resolve into $PREFIX/lib
  layout.pyc              no bytecode for another Python
  layout.build-prefix     no build-machine paths in text files
  cuda.runtime            libcudart.so.N matches the config's CUDA major; CPU links no CUDA
  cuda.magma              magma linked only by libtorch_cuda_linalg, per flavour
  metadata.depends, metadata.constrains, metadata.run-exports
                          info/index.json and run_exports.json against the rendered recipe
                          (with --config only)
  metadata.output         with --config: each conda package is an output the config builds

--json prints a list of objects {"check", "status", "path", "detail"}; status is
"pass", "warn" or "fail"; path is PACKAGE or PACKAGE:MEMBER.
With --config, packages built for another platform than the config's are refused (exit 2).
exit status: 0 no failures, 1 at least one failure, 2 unusable input.
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
        help="a .ci_support config (name or path) whose render supplies the expectations",
    )
    parser.add_argument("--json", action="store_true", help="print findings as JSON")


def run(args: argparse.Namespace) -> int:
    from tools.check import check
    from tools.check.expectations import Expectations, from_rendered
    from tools.check.findings import any_failed, counts
    from tools.check.report import to_json, to_table
    from tools.errors import ProblemsFound

    expect = Expectations()
    if args.config:
        expect = from_rendered(_render(args.config), config=args.config)
    findings = check(args.paths, expect)
    print(to_json(findings) if args.json else to_table(findings))
    if any_failed(findings):
        raise ProblemsFound(f"{counts(findings)['fail']} check(s) failed")
    return 0


def _render(config: str):
    from tools.render import render_config

    return render_config(config)
