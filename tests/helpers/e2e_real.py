"""What the real-engine end-to-end tests (tests/test_e2e_real_engine*.py) share: the two
configs they build, one build of a throw-away feedstock, and readers of what it left."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.conda_packages import bytecode_outside_site_packages
from helpers.e2e_feedstock import CPU as _CPU
from helpers.e2e_feedstock import CUDA as _CUDA
from helpers.e2e_feedstock import PYTHONS, E2EFeedstock
from helpers.minitorch.support import SETUPTOOLS
from helpers.recipe_release import current

# The two configs built (e2e_feedstock says which); a tailored matrix without one skips.
CPU = _CPU.name if _CPU else ""
CUDA = _CUDA.name if _CUDA else ""
CUDA_VERSION = _CUDA.cuda if _CUDA else ""
VERSION = current().version  # the recipe's: PKG_VERSION reaches torch.__version__


def built(
    tmp_path_factory: pytest.TempPathFactory,
    channel: Path,
    glob: str,
    layout: str = SETUPTOOLS,
    *,
    embedded: bool,
    by_command: bool = False,
) -> E2EFeedstock:
    tmp = tmp_path_factory.mktemp("e2e")
    if embedded:
        # Switched, so `tools check --config` renders the recipe the engine built (the
        # toolkit renders meta.yaml on a feedstock that is not, whose hashes differ);
        # by_command: with `python -m tools switch` (E2EFeedstock.make_embedded)
        fs = E2EFeedstock.make_embedded(
            tmp, glob, channel, layout, switched=True, by_command=by_command
        )
        fs.commit()  # a delegate's checkout: the records name its commit
    else:
        fs = E2EFeedstock.make(tmp, glob, channel, layout)
    result = fs.build()
    fs.stderr = result.stderr
    logs = sorted(fs.artifacts.glob("*-log.txt"))
    tail = "\n".join(logs[0].read_text().splitlines()[-60:]) if logs else result.stderr
    assert result.returncode == 0, f"build-locally.py {fs.config} failed:\n{tail}"
    return fs


def packages_of(fs: E2EFeedstock) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(fs.artifacts.glob("*/*.conda")):
        name = path.name.rsplit("-", 2)[0]
        found.setdefault(name, []).append(path.name)
    return found


def python_tags() -> list[str]:
    return ["py" + p.split(".*")[0].replace(".", "") for p in PYTHONS]


def ninja_objects(log: Path) -> dict[str, int]:
    """Each object in a .ninja_log with the mtime of its latest build."""
    objects: dict[str, int] = {}
    for line in log.read_text().splitlines()[1:]:
        _start, _end, mtime, output, _hash = line.split("\t")
        if output.endswith(".o"):
            objects[output.split(".dir/", 1)[-1]] = int(mtime)
    return objects


def launched_objects(fs: E2EFeedstock) -> list[str]:
    """The object of every compile the build ran, in every output: the container's ccache
    is the compiler launcher (tests/fixtures/fake_docker/container_bin/ccache logs it in the
    --ccache folder)."""
    log = Path(fs.args[fs.args.index("--ccache") + 1]) / "fake-ccache-launches.txt"
    objects = []
    for line in log.read_text().splitlines():
        words = line.split()
        if "-o" in words and "CMakeScratch" not in line:  # not CMake's compiler probes
            objects.append(words[words.index("-o") + 1].split(".dir/", 1)[-1])
    return objects


def records_of(fs: E2EFeedstock) -> dict[str, dict]:
    """The built packages' index.json records, as the channel serves them."""
    repodata = json.loads((fs.artifacts / "linux-64" / "repodata.json").read_text())
    return {**repodata.get("packages", {}), **repodata.get("packages.conda", {})}


def stray_bytecode(fs: E2EFeedstock) -> dict[str, list[str]]:
    """Each package's bytecode outside site-packages (none is asked for)."""
    return {
        path.name: stray
        for path in sorted(fs.artifacts.glob("*/*.conda"))
        if (stray := bytecode_outside_site_packages(path))
    }


def tools(fs: E2EFeedstock, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools", *args],
        cwd=fs.root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )


#: Findings that come only from a stand-in: (check, pattern over path + detail, reason).
STAND_IN_FINDINGS = (
    (
        "elf.needed",
        r"lib(c?blas|lapack)\.so resolves nowhere",
        "the miniature's BLAS stand-ins have unversioned sonames (libcblas.so; conda-forge's "
        "is libcblas.so.3), which the check's provider table (libcblas.so.*) does not name",
    ),
    (
        "elf.needed",
        r"lib(stdc\+\+\.so\.6|gcc_s\.so\.1|gomp\.so\.1) is not in the packages",
        "the compiler stand-ins run the machine's gcc and carry no run_exports on "
        "libstdcxx/libgcc, which conda-forge's compiler packages add (libgcc brings "
        "_openmp_mutex, whose libgomp libtorch_cpu's OpenMP kernels load)",
    ),
    (
        "elf.glibc",
        r"above GLIBC_2\.\d+ allowed by c_stdlib_version",
        "compiled against the machine's glibc 2.36; sysroot_linux-64 is an empty stand-in",
    ),
    (
        "abi.cxx11",
        r"has 0 cxx11 and 0 old-ABI symbols",
        "the miniature's libraries define no c10/at/torch functions taking std:: types",
    ),
)


def unexplained(findings: list[dict]) -> list[dict]:
    left = []
    known = STAND_IN_FINDINGS
    for finding in findings:
        text = f"{finding['path']} {finding['detail']}"
        if finding["status"] == "pass":
            continue
        if any(c == finding["check"] and re.search(p, text) for c, p, _ in known):
            continue
        left.append(finding)
    return left


def check_left(fs: E2EFeedstock) -> list[dict]:
    """`tools check` on the built packages, with the expectations of the variant the engine
    built: the findings no stand-in explains (at least one check passed)."""
    config = fs.variant_as_built()
    result = tools(fs, "check", "build_artifacts", "--config", config, "--json")
    assert result.returncode in (0, 1), result.stderr
    findings = json.loads(result.stdout)
    assert any(f["status"] == "pass" for f in findings)
    return unexplained(findings)


def run_python(prefix: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(prefix / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(prefix)},
    )


def cuda_elves(fs: E2EFeedstock) -> dict[str, object]:
    from tools.check import load

    found = {}
    for package in load([fs.artifacts]):
        for path, info in package.elves.items():
            if info.device_code:
                found[f"{package.name}:{package.build.split('_')[1]}:{path}"] = info
    return found


def check_pins(fs: E2EFeedstock) -> None:
    # pin_subpackage("libtorch", exact=True): pytorch needs only the libtorch this very build
    # made, whatever other libtorch a channel holds. libtorch-cuda-linalg admits only libtorch
    # builds of its version, variant and build number: its pin leaves out the hash, which
    # conda-build does not know yet when it renders linalg (recipe/README.md, "Outputs").
    records = records_of(fs)
    [libtorch] = [r for r in records.values() if r["name"] == "libtorch"]
    version = re.escape(libtorch["version"])
    exact = re.compile(rf"^libtorch ==?{version} {libtorch['build']}$")
    hashless = re.escape(re.sub(r"_h[0-9a-f]{7}_", "_h*_", libtorch["build"]))
    admits = re.compile(rf"^libtorch ==?{version} {hashless}$")
    for name, record in records.items():
        if record["name"] == "pytorch":
            assert any(exact.match(d) for d in record["depends"]), (name, record["depends"])
        if record["name"] == "libtorch-cuda-linalg":
            assert any(admits.match(c) for c in record["constrains"]), (name, record["constrains"])
