"""Compiles, imports and calls a small C++ extension with torch.utils.cpp_extension.

Run by the `pytorch` output's tests in meta.yaml, in an environment holding only what a user
would install to build extensions (pytorch, a C++ compiler, ninja): the JIT path
(`load_inline`) that `BuildExtension` users share compiles against torch/extension.h, which
includes pybind11, sleef and fmt headers this recipe takes from the system instead of
shipping upstream's copies. A missing run requirement shows up here as a compiler error.

Exits 0 when the extension works, 1 when it does not (with the compiler's first error);
standard library and torch only.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile

import torch
from torch.utils import cpp_extension

SOURCE = r"""
#include <torch/extension.h>

// A tensor op through ATen, and a plain value back through pybind11.
torch::Tensor scaled_ramp(int64_t n, double factor) {
    return torch::arange(n, torch::kFloat64) * factor;
}

std::string torch_version() { return TORCH_VERSION; }
"""

FUNCTIONS = ["scaled_ramp", "torch_version"]


def first_error(text: str) -> str:
    """The compiler's first error line, or the last line when there is none."""
    for line in text.splitlines():
        if re.search(r"\berror\b", line):
            return line.strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def build(build_dir: str, verbose: bool):
    return cpp_extension.load_inline(
        name="cf_check_cpp_extension",
        cpp_sources=[SOURCE],
        functions=FUNCTIONS,
        build_directory=build_dir,
        verbose=verbose,
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="show the compiler commands")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cf-cpp-extension-") as build_dir:
        try:
            module = build(build_dir, args.verbose)
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            output = getattr(exc, "output", None) or str(exc)
            if isinstance(output, bytes):
                output = output.decode(errors="replace")
            print(f"FAIL build: {first_error(output)}")
            return 1
        values = module.scaled_ramp(4, 0.5).tolist()
        version = module.torch_version()
    if values != [0.0, 0.5, 1.0, 1.5]:
        print(f"FAIL call: scaled_ramp(4, 0.5) returned {values}")
        return 1
    if not torch.__version__.startswith(version):
        print(f"FAIL headers: TORCH_VERSION {version!r} does not match {torch.__version__!r}")
        return 1
    print(f"ok   cpp_extension: built and imported against torch {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
