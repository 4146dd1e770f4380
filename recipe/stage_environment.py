"""Whether a stage's build environment would rewrite the configured tree's cache.

PyTorch's cmake/EnvVarForwarding.cmake (2.13's and 2.15's alike) copies environment
variables into CMakeCache.txt on every configure, overwriting what is cached: every name
that starts with BUILD_, USE_ or CMAKE_ or ends with EXITCODE / EXITCODE__TRYRUN_OUTPUT,
plus a fixed list of passthrough names and aliases. The rule is read from the source's own
cmake/EnvVarForwarding.cmake ($SRC_DIR) where it has one, so that a name or prefix a new
release adds is checked; the list below (2.15's) serves a source without the file. Each
pytorch output configures the
tree the compile stage built again (scikit-build-core does so on every `pip install`), so
a variable that differs there rewrites the cache and can recompile libtorch for one Python
while the libtorch package holds the other build. build.sh and bld.bat record what the
compile stage exported and refuse a later stage whose environment would change it.

Values are compared with the stage's own locations replaced by placeholders ($PREFIX,
$BUILD_PREFIX, $SRC_DIR): each output's host prefix is a new directory (rattler-build) or
the same path recreated (conda-build), and the configured tree follows it either way. On
Windows a location is also replaced where it is spelled with forward slashes, as bld.bat
hands CMake its CUDA paths. A variable a later stage leaves unset is fine: the forwarding
only writes what is set.

Usage:
  python stage_environment.py record FILE           (the compile stage)
  python stage_environment.py compare FILE --stage NAME [--fix WHAT_TO_DO]
Exit 0: the same; 1: differences, in one `error:` line; 2: bad input (no record).
Standard library only (it runs in the build environment).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

#: The forwarding rule of cmake/EnvVarForwarding.cmake.
FORWARDED_PATTERN = re.compile(r"^(BUILD_|USE_|CMAKE_)|(EXITCODE|EXITCODE__TRYRUN_OUTPUT)$")
#: The names it forwards besides the pattern (_ENV_PASSTHROUGH, the environment side of
#: _ENV_ALIASES and _LOW_PRIORITY_ALIASES), as pytorch/pytorch has them in 2.15.
FORWARDED_NAMES = frozenset(
    {
        "ATEN_THREADING",
        "BLAS",
        "CAFFE2_USE_MSVC_STATIC_RUNTIME",
        "CUDAHOSTCXX",
        "CUDACXX",
        "CUDA_HOST_COMPILER",
        "CUDA_NVCC_EXECUTABLE",
        "CUDA_SEPARABLE_COMPILATION",
        "CUDNN_INCLUDE_DIR",
        "CUDNN_LIBRARY",
        "CUDNN_LIB_DIR",
        "CUDNN_ROOT",
        "EXPERIMENTAL_SINGLE_THREAD_POOL",
        "FLASH_ATTENTION_MAX_JOBS",
        "INSTALL_TEST",
        "INTEL_MKL_DIR",
        "INTEL_OMP_DIR",
        "MKLDNN_CPU_RUNTIME",
        "MKL_THREADING",
        "MSVC_Z7_OVERRIDE",
        "Numa_INCLUDE_DIR",
        "Numa_LIBRARIES",
        "ONNX_ML",
        "ONNX_NAMESPACE",
        "OPENSSL_ROOT_DIR",
        "SELECTED_OP_LIST",
        "STATIC_DISPATCH_BACKEND",
        "TORCH_CUDA_ARCH_LIST",
        "TORCH_XPU_ARCH_LIST",
        "TRACING_BASED",
        "UBSAN_FLAGS",
        "WERROR",
        "WITH_BLAS",
    }
)
#: The source's forwarding module, relative to $SRC_DIR.
FORWARDING_FILE = "cmake/EnvVarForwarding.cmake"
# The selecting expression of the module's Python snippet: re.compile(r"..."), or a call
# given the name as well, re.match(r"...", name).
_SELECT = re.compile(r"""re\.(?:compile|match|search)\(\s*r?(["'])(?P<pattern>.+?)\1\s*[,)]""")
# The lists the module loops over (foreach(_var IN LISTS _ENV_PASSTHROUGH)), or items.
_FOREACH = re.compile(r"foreach\s*\(\s*\w+\s+IN\s+(?P<kind>LISTS|ITEMS)\s+(?P<args>[^)]*)\)", re.I)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Rule(NamedTuple):
    """Which environment variables the forwarding copies into the cache, and from where."""

    pattern: re.Pattern[str]
    names: frozenset[str]
    source: str

    def selects(self, name: str) -> bool:
        return bool(self.pattern.search(name)) or name in self.names


#: The rule of a source without the module (the hand copy above).
HAND_RULE = Rule(FORWARDED_PATTERN, FORWARDED_NAMES, "recipe/stage_environment.py")

#: Where the stage's own directories appear in values, longest first when replaced.
LOCATIONS = ("BUILD_PREFIX", "PREFIX", "SRC_DIR")
#: CMAKE_ARGS entries build.sh gives each Python its own value for on purpose (cross
#: builds: the target's SOABI and headers); cmake_cache retarget-python moves the
#: cache's entries with them.
PER_PYTHON_ARGS = ("-DTORCH_PYTHON_SOABI=", "-DPython_INCLUDE_DIR=")


class StageError(ValueError):
    """Bad input: one line naming the file and what to do."""


def read_forwarding(text: str) -> tuple[str | None, list[str]]:
    """What a cmake/EnvVarForwarding.cmake text states, comments left out: the expression its
    Python snippet selects names with (None without one) and the names of the lists it loops
    over, in the file's order (for an alias "ENV_NAME=CMAKE_NAME", the environment's side).
    tools/bump/knobs.py loads this file by path and reads a new release's module with it."""
    code = re.sub(r"#[^\n]*", "", text)
    select = _SELECT.search(code)
    names: list[str] = []
    for loop in _FOREACH.finditer(code):
        if loop["kind"].upper() == "ITEMS":
            names += loop["args"].split()
            continue
        for variable in loop["args"].split():
            block = re.search(rf"\bset\(\s*{re.escape(variable)}\s+(?P<items>[^)]*)\)", code)
            names += block["items"].split() if block else []
    cleaned = (name.strip("\"'").split("=", 1)[0] for name in names)
    return (select["pattern"] if select else None), [n for n in cleaned if _NAME.match(n)]


def rule_from_text(text: str, source: str) -> Rule:
    """The forwarding rule a cmake/EnvVarForwarding.cmake text states (read_forwarding)."""
    expression, names = read_forwarding(text)
    if expression is None:
        raise StageError(
            f'{source}: no re.compile(r"...") selecting the forwarded names; '
            "recipe/stage_environment.py cannot tell what reaches the cache: teach "
            "read_forwarding this file's form"
        )
    try:
        pattern = re.compile(expression)
    except re.error as err:
        raise StageError(f"{source}: the forwarding expression does not compile ({err})") from None
    return Rule(pattern, frozenset(names), source)


def rule_for(environ: Mapping[str, str]) -> Rule:
    """The rule of the source in $SRC_DIR, or the hand copy when it has no module."""
    source = Path(environ.get("SRC_DIR") or ".") / FORWARDING_FILE
    if not source.is_file():
        return HAND_RULE
    return rule_from_text(source.read_text(encoding="utf-8", errors="replace"), str(source))


def forwarded(environ: Mapping[str, str], rule: Rule | None = None) -> dict[str, str]:
    """The variables the forwarding would copy into the cache, locations as placeholders
    (``rule``: the source's, ``rule_for(environ)``, unless given)."""
    rule = rule_for(environ) if rule is None else rule
    places = sorted(
        (
            (spelling, f"${name}")
            for name in LOCATIONS
            if environ.get(name)
            for spelling in {environ[name], environ[name].replace("\\", "/")}
        ),
        key=lambda pair: -len(pair[0]),
    )
    found: dict[str, str] = {}
    for name, value in environ.items():
        if not rule.selects(name):
            continue
        if name == "CMAKE_ARGS":
            value = " ".join(w for w in value.split() if not w.startswith(PER_PYTHON_ARGS))
        for path, placeholder in places:
            value = value.replace(path, placeholder)
        found[name] = value
    return dict(sorted(found.items()))


def differences(recorded: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    """What `now` would write into the cache that the compile stage did not."""
    found = []
    for name, value in now.items():
        if name not in recorded:
            found.append(f"{name}='{value}' is set here but was not in the compile stage")
        elif recorded[name] != value:
            found.append(f"{name}='{value}' here but '{recorded[name]}' in the compile stage")
    return found


def record(path: Path, environ: Mapping[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(forwarded(environ), indent=1) + "\n", encoding="utf-8")
    partial.replace(path)


def load(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StageError(
            f"{path} does not exist; the compile stage of recipe/build.sh (recipe\\bld.bat) "
            "writes it before configuring (run the compile stage first, in the same work "
            "directory)"
        ) from None
    except json.JSONDecodeError as err:
        raise StageError(f"{path}: line {err.lineno}: not JSON ({err.msg})") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise StageError(f"{path} is not a table of names to strings; rerun the compile stage")
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stage_environment.py", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("record").add_argument("file", type=Path)
    compare = sub.add_parser("compare")
    compare.add_argument("file", type=Path)
    compare.add_argument("--stage", required=True)
    compare.add_argument("--fix", help="what to do, appended to the error line")
    args = parser.parse_args(argv)
    try:
        if args.command == "record":
            record(args.file, os.environ)
            print(f"stage_environment.py: forwarding rule from {rule_for(os.environ).source}")
            return 0
        found = differences(load(args.file), forwarded(os.environ))
    except StageError as err:
        print(f"stage_environment.py: error: {err}", file=sys.stderr)
        return 2
    if not found:
        return 0
    print(
        f"stage_environment.py: error: the {args.stage} stage's environment would rewrite "
        f"the cache the compile stage configured (cmake/EnvVarForwarding.cmake): "
        + "; ".join(found)
        + (f"; {args.fix}" if args.fix else ""),
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
