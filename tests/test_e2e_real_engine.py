"""The main job end to end on a real build engine (issues 22 and 35).

`python build-locally.py CONFIG` in a throw-away copy of this feedstock
(tests/fixtures/e2e_feedstock.py), two ways, both with py-rattler-build as the engine
(tools/localbuild/engines/rattler.py):

- the CUDA config through the container path: the feedstock switched to rattler-build,
  tests/fixtures/fake_docker as the container engine, .scripts/build_steps.sh inside;
- the CPU config, in both layouts of the miniature, through the embedded engine, as a user
  without Docker runs it: no engine flag and no container engine or conda-build on PATH,
  the stand-in channel as the one `--channel`, the miniature packed as PyTorch's release
  archive in a `--source-cache` (the recipe's URL unchanged, its sha256 the miniature's),
  `--ccache` through the ccache on PATH (the fake one, which counts compiles). The
  feedstock is switched to rattler-build there too, so that `tools check --config`
  renders the recipe the engine built (tests/test_build_locally_embedded.py drives the
  engine on recipe-v1.yaml beside meta.yaml, as this repository has it).

The v1 recipe builds the miniature (tests/fixtures/minitorch) against the stand-in channel
(tests/fixtures/standin_channel). Then the packages are checked with `python -m tools
check`, solved and installed with py-rattler, imported, and libtorch's cmake_test is built
against the installed prefix.

Narrowed for 2 cores: two Pythons (3.12, the megabuild's, and 3.13), one CPU and one CUDA
config (generic BLAS) of the setup.py layout (PyTorch <= 2.13), and the CPU config once more
with the miniature's scikit-build-core layout (PyTorch >= 2.14), whose host environments
each hold their own scikit-build-core. Three builds in all: the container path's CPU build
went when the embedded one came, as the CUDA build takes the same .scripts path and the CPU
one proved nothing beside it. The CUDA config (the newest CUDA version) is compiled by the
real nvcc of its version with the recipe's architecture list and links the real libcudart,
libcublas and libcusolver: the stand-in channel makes conda-forge's CUDA packages from
NVIDIA's wheels.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from fixtures.e2e_feedstock import CPU as _CPU
from fixtures.e2e_feedstock import CUDA as _CUDA
from fixtures.e2e_feedstock import (
    PYTHONS,
    REPO,
    E2EFeedstock,
    bytecode_outside_site_packages,
    e2e_channel,
)
from fixtures.e2e_feedstock import install as _install
from fixtures.e2e_feedstock import solve as _solve
from fixtures.minitorch.support import (
    CORE_OBJECTS,
    EXTENSION,
    PYTHON_BOUND_OBJECTS,
    SCIKIT_BUILD_CORE,
    SETUPTOOLS,
)
from fixtures.recipe_release import current

from tools.render.cuda_archs import parse_arch_list, read_rows, set_name

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="builds linux-64 packages"),
]

# The two configs built (e2e_feedstock says which); a tailored matrix without one skips.
CPU = _CPU.name if _CPU else ""
CUDA = _CUDA.name if _CUDA else ""
CUDA_VERSION = _CUDA.cuda if _CUDA else ""
VERSION = current().version  # the recipe's: PKG_VERSION reaches torch.__version__


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    return e2e_channel(tmp_path_factory)


def _built(
    tmp_path_factory, channel: Path, glob: str, layout: str = SETUPTOOLS, *, embedded: bool
) -> E2EFeedstock:
    tmp = tmp_path_factory.mktemp("e2e")
    if embedded:
        # Switched, so `tools check --config` renders the recipe the engine built (the
        # toolkit renders meta.yaml on a feedstock that is not, whose hashes differ).
        fs = E2EFeedstock.make_embedded(tmp, glob, channel, layout, switched=True)
        fs.commit()  # a delegate's checkout: the records name its commit
    else:
        fs = E2EFeedstock.make(tmp, glob, channel, layout)
    result = fs.build()
    fs.stderr = result.stderr
    logs = sorted(fs.artifacts.glob("*-log.txt"))
    tail = "\n".join(logs[0].read_text().splitlines()[-60:]) if logs else result.stderr
    assert result.returncode == 0, f"build-locally.py {fs.config} failed:\n{tail}"
    return fs


@pytest.fixture(scope="module")
def cpu(tmp_path_factory, channel: Path) -> E2EFeedstock:
    return _built(tmp_path_factory, channel, CPU, embedded=True)


@pytest.fixture(scope="module")
def cuda(tmp_path_factory, channel: Path) -> E2EFeedstock:
    return _built(tmp_path_factory, channel, CUDA, embedded=False)


@pytest.fixture(scope="module")
def cuda_tested(tmp_path_factory, channel: Path) -> tuple[E2EFeedstock, str]:
    """The CUDA config through the embedded engine, as a user without Docker runs it, with the
    engine's test phase on (issues 44 and 50): the megabuild's Python alone, every test of the
    recipe run as it stands (libtorch's library list and cmake_test, libtorch-cuda-linalg's
    patchelf and torch.cuda.has_magma checks, pytorch's check_torch.py, check_cpp_extension.py,
    the consumer projects and the pytest slice over the miniature's test/). pytorch
    run-depends on __cuda, which the engine's test environments get without a GPU here."""
    tmp = tmp_path_factory.mktemp("e2e")
    fs = E2EFeedstock.make_embedded(
        tmp, CUDA, channel, switched=True, pythons=PYTHONS[:1], options=""
    )
    result = fs.build()
    logs = sorted(fs.artifacts.glob("*-log.txt"))
    tail = "\n".join(logs[0].read_text().splitlines()[-80:]) if logs else result.stderr
    return fs, "" if result.returncode == 0 else f"exit {result.returncode}:\n{tail}"


@pytest.fixture(scope="module")
def cpu_skbuild(tmp_path_factory, channel: Path) -> E2EFeedstock:
    return _built(tmp_path_factory, channel, CPU, SCIKIT_BUILD_CORE, embedded=True)


def _packages(fs: E2EFeedstock) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(fs.artifacts.glob("*/*.conda")):
        name = path.name.rsplit("-", 2)[0]
        found.setdefault(name, []).append(path.name)
    return found


def _python_tags() -> list[str]:
    return ["py" + p.split(".*")[0].replace(".", "") for p in PYTHONS]


# ------------------------------------------------------------------ the builds


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
def test_cpu_megabuild_leaves_every_output_with_checksums_and_summary(which, request) -> None:
    cpu = request.getfixturevalue(which)
    packages = _packages(cpu)
    assert sorted(packages) == ["libtorch", "pytorch", "pytorch-cpu"]
    assert [t for t in _python_tags() if any(f"_{t}_" in p for p in packages["pytorch"])] == (
        _python_tags()
    )
    sums = (cpu.artifacts / "SHA256SUMS").read_text()
    for names in packages.values():
        for name in names:
            assert name in sums
    summary = (cpu.artifacts / "summary.json").read_text()
    assert '"status": "done"' in summary


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
def test_without_docker_the_embedded_engine_builds_and_says_so_first(which, request) -> None:
    fs = request.getfixturevalue(which)
    first = fs.stderr.splitlines()[0]
    assert first.startswith("engine: rattler-build") and "embedded" in first, fs.stderr[:500]
    assert "no conda-build on PATH" in first
    record = json.loads((fs.artifacts / "summary.json").read_text())["configs"][fs.config]
    assert "embedded" in record["provenance"]["engine"]
    # The one thing the engine cannot do, said in the record rather than left out.
    assert "packages carry no commit" in record["provenance"]["engine"], record
    # --ccache: the build compiled through the ccache on PATH, whose statistics are recorded.
    assert record["ccache"] == {"hits": 8, "misses": 2, "hit_rate": 0.8}, record


def test_verify_says_the_embedded_engines_packages_carry_no_commit_not_that_they_differ(
    cpu,
) -> None:
    # Before: each package "from another commit: it embeds none".
    result = cpu.review("verify", "build_artifacts", timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    packages = [line for line in result.stdout.splitlines() if line.startswith("FAIL linux-64/")]
    assert packages and all("embeds no commit, as its record says" in p for p in packages), (
        result.stdout
    )
    assert "tampered" not in result.stdout and "another commit" not in result.stdout


def test_the_embedded_engines_log_holds_the_build_scripts_whole_output(cpu) -> None:
    # Before: on success the log held rattler-build's solve and nothing the script printed
    # (py-rattler-build keeps it in the work folder's conda_build.log).
    log = (cpu.artifacts / f"{cpu.config}-log.txt").read_text()
    assert "--- the build script's output (bld/" in log
    assert "Building CXX object" in log or "cmake" in log.lower(), log[-3000:]
    record = json.loads((cpu.artifacts / "summary.json").read_text())["configs"][cpu.config]
    assert record["provenance"]["tests"] == "skipped: --no-test in EXTRA_CB_OPTIONS"


def test_the_report_names_each_package_without_a_commit_and_no_unknown_image(cpu) -> None:
    # Before: the commit cell named the first package only, and "image unknown".
    report = cpu.review("report", timeout=600)
    assert report.returncode == 0, report.stderr
    assert "image none for 1 config(s) built outside a container." in report.stdout
    [row] = [line for line in report.stdout.splitlines() if line.startswith("| linux-64 ")]
    cell = "⚠️ none (its engine embeds none, as the record says): "
    names = sorted(p.name for p in cpu.artifacts.glob("linux-64/*.conda"))
    assert cell in row and all(name in row for name in names), row


def test_an_embedded_batch_passes_verify_with_allow_other_engine_and_says_so(cpu) -> None:
    """The review's own checks all pass on an untouched embedded batch; `tools check` is the
    real one, its findings on the miniature's stand-ins (STAND_IN_FINDINGS) explained."""
    # Before: every package "embeds no commit", whatever the flag.
    from tools.localbuild.review.verify import verify

    def check(config: str, packages: list[Path]):
        # the expectations of the variant the engine built, as the test of `tools check` has
        as_built = cpu.variant_as_built()
        result = _tools(cpu, "check", *map(str, packages), "--config", as_built, "--json")
        left = _unexplained(json.loads(result.stdout))
        shown = tuple(f"{f['check']} {f['path']}: {f['detail']}" for f in left)
        return (f"{len(left)} unexplained finding(s)", shown) if left else None

    said: list[str] = []
    code = verify(cpu.root, cpu.artifacts, None, say=said.append, check=check,
                  allow_other_engine=True)  # fmt: skip
    assert code == 0, said
    *notes, verdict = said
    assert notes[0].startswith("NOTE --allow-other-engine: 1 config(s) not built as conda-forge's")
    assert notes[1].startswith("NOTE tests did not run: linux-64 ")
    assert verdict.startswith("verified: ") and "carry no commit" in verdict, verdict


def test_a_record_rewritten_to_claim_the_container_fails_as_an_engine_lie(cpu, tmp_path) -> None:
    """The record of an embedded build edited to say conda-forge's container built it."""
    # Before: each package "embeds no commit", as if the record told the truth.
    posted = tmp_path / "posted"
    shutil.copytree(cpu.artifacts / "linux-64", posted / "linux-64")
    with zipfile.ZipFile(cpu.artifacts / "log_files.zip") as archive:
        archive.extractall(posted)
    summary = json.loads((posted / "summary.json").read_text())
    source = summary["configs"][cpu.config]["provenance"]
    source.update(engine="docker 27.3.1", ci_engine=True, image="quay.io/condaforge/x:alma10")
    (posted / "summary.json").write_text(json.dumps(summary))
    result = cpu.review("verify", str(posted), "--allow-other-engine", timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
    claim = "the record claims conda-forge's CI engine (docker 27.3.1), but its log says it was "
    assert any(
        f.startswith("FAIL engine: linux-64 ")
        and f.endswith(claim + "built by the embedded engine")
        for f in fails
    ), fails
    lies = [f for f in fails if f.startswith("FAIL engine: linux-64/")]
    assert lies and all("embeds none, as the embedded engine's packages do" in f for f in lies)
    assert not any("embeds no commit, as its record says" in f for f in fails)


def test_a_cuda_config_passes_its_test_phase_through_the_embedded_engine(cuda_tested) -> None:
    # Before: no CONDA_OVERRIDE_CUDA through the embedded engine, so the test environments of
    # pytorch and pytorch-gpu (run-depending on __cuda) did not solve on a machine without a
    # GPU, and the build failed in its test phase.
    fs, failure = cuda_tested
    assert not failure, failure
    log = (fs.artifacts / f"{fs.config}-log.txt").read_text()
    assert "--test native" in log  # the engine ran every package's tests
    assert f"env CONDA_OVERRIDE_CUDA: {CUDA_VERSION}" in log
    assert sorted(_packages(fs)) == ["libtorch", "libtorch-cuda-linalg", "pytorch", "pytorch-gpu"]
    assert not list(fs.artifacts.glob("broken/*"))


def test_cuda_build_leaves_both_linalg_flavours(cuda) -> None:
    packages = _packages(cuda)
    assert sorted(packages) == ["libtorch", "libtorch-cuda-linalg", "pytorch", "pytorch-gpu"]
    flavours = sorted(p.split("_")[1] for p in packages["libtorch-cuda-linalg"])
    assert flavours == ["magma", "nomagma"]
    assert len(packages["pytorch"]) == len(PYTHONS)
    assert (cuda.artifacts / "SHA256SUMS").is_file() and (cuda.artifacts / "summary.json").is_file()


def _ninja_objects(log: Path) -> dict[str, int]:
    """Each object in a .ninja_log with the mtime of its latest build."""
    objects: dict[str, int] = {}
    for line in log.read_text().splitlines()[1:]:
        _start, _end, mtime, output, _hash = line.split("\t")
        if output.endswith(".o"):
            objects[output.split(".dir/", 1)[-1]] = int(mtime)
    return objects


def _launched_objects(fs: E2EFeedstock) -> list[str]:
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


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
def test_megabuild_compiles_the_core_once(which, request) -> None:
    cpu = request.getfixturevalue(which)
    # The staging output's .ninja_log: the core compiled there ...
    [staging_log] = cpu.artifacts.glob("build_cache/*/work_dir/build/.ninja_log")
    staged = _ninja_objects(staging_log)
    assert set(CORE_OBJECTS) <= set(staged), sorted(staged)
    # ... the last output's (--keep-build) inherited it and rebuilt only the bindings ...
    # (rattler-build_libtorch_<id>, or without the id under --no-build-id, which --ccache sets)
    [output_log] = cpu.artifacts.glob("bld/rattler-build_libtorch*/work/build/.ninja_log")
    again = sorted(o for o, mtime in _ninja_objects(output_log).items() if staged.get(o) != mtime)
    extension = [EXTENSION] if which == "cpu_skbuild" else []
    assert again == sorted([*PYTHON_BOUND_OBJECTS, *extension])
    # ... and across every output, each core object compiled exactly once, the bindings
    # exactly once per Python (the megabuild Python's in the staging output).
    launched = _launched_objects(cpu)
    assert {o: launched.count(o) for o in CORE_OBJECTS} == dict.fromkeys(CORE_OBJECTS, 1)
    for bound in PYTHON_BOUND_OBJECTS:
        assert launched.count(bound) == len(PYTHONS), launched
    if which == "cpu_skbuild":
        assert launched.count(EXTENSION) == len(PYTHONS), launched


def _records(fs: E2EFeedstock) -> dict[str, dict]:
    """The built packages' index.json records, as the channel serves them."""
    repodata = json.loads((fs.artifacts / "linux-64" / "repodata.json").read_text())
    return {**repodata.get("packages", {}), **repodata.get("packages.conda", {})}


@pytest.mark.parametrize("which", ["cpu", "cuda"])
def test_every_output_pins_the_libtorch_of_its_own_build(which, request) -> None:
    # pin_subpackage("libtorch", exact=True): pytorch needs only the libtorch this very build
    # made, whatever other libtorch a channel holds. libtorch-cuda-linalg admits only libtorch
    # builds of its version, variant and build number: its pin leaves out the hash, which
    # conda-build does not know yet when it renders linalg (recipe/README.md, "Outputs").
    records = _records(request.getfixturevalue(which))
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


def test_a_build_for_every_gpu_is_not_down_prioritized(cuda) -> None:
    # track_features (recipe/meta.yaml; down_prioritize_variant in recipe-v1.yaml) marks a
    # fork's narrower GPU set only: on conda-forge's full set it would push every user's
    # solver off the packages this feedstock ships.
    records = _records(cuda)
    assert {r["name"] for r in records.values()} >= {"libtorch", "pytorch", "pytorch-gpu"}
    assert {
        name: r["track_features"] for name, r in records.items() if r.get("track_features")
    } == {}


@pytest.mark.parametrize("which", ["cpu", "cuda", "cpu_skbuild"])
def test_no_package_carries_bytecode_outside_site_packages(which, request) -> None:
    # Bytecode of the recipe's helpers (info/recipe/__pycache__, byte-compiled while the
    # build ran them) or of the source's tools/ (the tests' source_files, imported by the
    # build backend) embeds the engine's random work paths, and nobody asked for it.
    fs = request.getfixturevalue(which)
    found = {
        path.name: stray
        for path in sorted(fs.artifacts.glob("*/*.conda"))
        if (stray := bytecode_outside_site_packages(path))
    }
    assert found == {}


# ------------------------------------------------------- the toolkit's check


def _tools(fs: E2EFeedstock, *args: str) -> subprocess.CompletedProcess[str]:
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


def _unexplained(findings: list[dict]) -> list[dict]:
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


@pytest.mark.parametrize("which", ["cpu", "cuda", "cpu_skbuild"])
def test_tools_check_passes_on_the_built_packages(which, request) -> None:
    fs = request.getfixturevalue(which)
    config = fs.variant_as_built()  # the expectations of the variant the engine built
    result = _tools(fs, "check", "build_artifacts", "--config", config, "--json")
    assert result.returncode in (0, 1), result.stderr
    findings = json.loads(result.stdout)
    assert any(f["status"] == "pass" for f in findings)
    left = _unexplained(findings)
    assert not left, "\n".join(f"{f['check']} {f['path']}: {f['detail']}" for f in left[:20])


# ---------------------------------------------------- solve, install, import


def _run_python(prefix: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(prefix / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(prefix)},
    )


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
@pytest.mark.parametrize("python", [p.split(".*")[0] for p in PYTHONS])
def test_pytorch_installs_and_imports_for_each_python(
    which, request, channel, python, tmp_path
) -> None:
    cpu = request.getfixturevalue(which)
    records = _solve([cpu.artifacts, channel], ["pytorch", f"python {python}.*"])
    [torch] = [r for r in records if r.name.normalized == "pytorch"]
    assert f"_py{python.replace('.', '')}_" in str(torch.build)
    prefix = _install(records, tmp_path / "env", tmp_path / "cache")
    result = _run_python(prefix, "import torch; print(torch.__version__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(VERSION)


def test_pytorch_cpu_and_pytorch_gpu_cannot_be_installed_together(cpu, cuda, channel) -> None:
    from rattler.exceptions import SolverError

    with pytest.raises(SolverError):
        _solve(
            [cpu.artifacts, cuda.artifacts, channel], ["pytorch-cpu", "pytorch-gpu"], CUDA_VERSION
        )


@pytest.mark.parametrize(
    ("spec", "flavour", "has_magma"),
    [
        ("libtorch-cuda-linalg", "magma", True),
        ("libtorch-cuda-linalg * *nomagma*", "nomagma", False),
    ],
)
def test_cuda_linalg_flavour_magma_by_default_nomagma_by_build_string(
    cuda, channel, spec, flavour, has_magma, tmp_path
) -> None:
    records = _solve([cuda.artifacts, channel], ["pytorch", spec, "python 3.12.*"], CUDA_VERSION)
    [linalg] = [r for r in records if r.name.normalized == "libtorch-cuda-linalg"]
    assert str(linalg.build).split("_")[1] == flavour
    prefix = _install(records, tmp_path / "env", tmp_path / "cache")
    # The miniature's torch.has_magma() stands for torch.cuda.has_magma (its README).
    result = _run_python(prefix, "import torch; print(bool(torch.has_magma()))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(has_magma)
    magma = sorted(p.name for p in (prefix / "lib").glob("libmagma*"))
    assert bool(magma) == has_magma, magma


def test_libtorch_cmake_test_builds_and_runs_against_the_installed_prefix(
    cpu, channel, tmp_path
) -> None:
    # As the libtorch package's own test runs it: the compilers' activation (CXXFLAGS,
    # CMAKE_ARGS) in an environment holding libtorch, then recipe/cmake_test, whose
    # CMakeLists.txt (find_package(Torch), TORCH_LIBRARIES) and consumer.cpp (PyTorch's C++
    # API: at::ones, at::matmul through BLAS, autograd) are used as they are.
    specs = ["libtorch", "cmake", "ninja", "gcc_linux-64", "gxx_linux-64"]
    prefix = _install(_solve([cpu.artifacts, channel], specs), tmp_path / "env", tmp_path / "c")
    source = tmp_path / "cmake_test"
    shutil.copytree(cpu.root / "recipe" / "cmake_test", source)
    script = f"""
        set -euo pipefail
        export PREFIX='{prefix}' PATH='{prefix}/bin':/usr/bin:/bin
        for script in "$PREFIX"/etc/conda/activate.d/*.sh; do source "$script"; done
        read -r -a cmake_args <<< "$CMAKE_ARGS"
        cmake -S '{source}' -B '{tmp_path}/build' -G Ninja "${{cmake_args[@]}}"
        cmake --build '{tmp_path}/build'
        '{tmp_path}/build/torch_consumer'
    """
    result = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        env={"HOME": str(tmp_path)},
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# ------------------------------------------------------------ CUDA for real


def _cuda_elves(fs: E2EFeedstock) -> dict[str, object]:
    from tools.check import load

    found = {}
    for package in load([fs.artifacts]):
        for path, info in package.elves.items():
            if info.device_code:
                found[f"{package.name}:{package.build.split('_')[1]}:{path}"] = info
    return found


def test_the_cuda_libraries_hold_device_code_and_link_the_real_cuda_libraries(cuda) -> None:
    elves = _cuda_elves(cuda)
    names = sorted(k.rsplit("/", 1)[-1] for k in elves)
    assert names == ["libtorch_cuda.so"] * 1 + ["libtorch_cuda_linalg.so"] * 2, sorted(elves)
    for where, info in elves.items():
        assert "libcudart.so.13" in info.needed, (where, info.needed)
        search = info.runpath or info.rpath  # rattler-build writes DT_RPATH
        assert search and all(r.startswith("$ORIGIN") for r in search), (where, search)
        if where.endswith("libtorch_cuda.so"):
            assert "libcublas.so.13" in info.needed, info.needed
        else:
            assert "libcusolver.so.12" in info.needed, (where, info.needed)


def test_tools_check_compares_every_fatbin_with_the_recipes_arch_list(cuda) -> None:
    result = _tools(cuda, "check", "build_artifacts", "--config", cuda.config, "--json")
    findings = [f for f in json.loads(result.stdout) if f["check"] == "cuda.fatbin"]
    passed = sorted(f["path"].rsplit("/", 1)[-1] for f in findings if f["status"] == "pass")
    assert passed == ["libtorch_cuda.so", "libtorch_cuda_linalg.so", "libtorch_cuda_linalg.so"]
    # The list is the recipe's own row for the e2e CUDA config (linux-64, the newest CUDA), and
    # the build holds nothing else (no warning names code the list did not ask for).
    asked = read_rows(REPO / "recipe" / "cuda_arch_lists.txt")[(CUDA_VERSION, "linux-64")]
    assert all(
        f["detail"].endswith(f", as {asked} asks") for f in findings if f["status"] == "pass"
    ), findings
    assert not [f for f in findings if "not in this config's list" in f["detail"]], findings


@pytest.fixture
def one_arch(cuda: E2EFeedstock, tmp_path: Path) -> tuple[Path, Path]:
    """A lab's tailoring of the e2e feedstock: the config's row cut to its newest entry and
    ``cuda_arch_set`` naming it (sm120ptx); (recipe folder, config file)."""
    recipe = shutil.copytree(cuda.root / "recipe", tmp_path / "recipe")
    rows = recipe / "cuda_arch_lists.txt"
    newest = read_rows(rows)[(CUDA_VERSION, "linux-64")].split(";")[-1]
    rows.write_text(f"{CUDA_VERSION} linux-64 {newest}\n")
    source = cuda.root / ".ci_support" / f"{cuda.config}.yaml"
    label = set_name(parse_arch_list(newest))  # the name render requires of that row
    assert "cuda_arch_set" not in source.read_text(), source
    text = source.read_text() + f"cuda_arch_set:\n- {label}\n"
    config = tmp_path / source.name
    config.write_text(text)
    return recipe, config


def test_a_one_arch_build_is_told_apart_from_the_default_build(cuda, one_arch) -> None:
    recipe, config = one_arch
    result = _tools(cuda, "render", str(config), "--recipe-dir", str(recipe), "--json")
    assert result.returncode == 0, result.stderr
    tailored = {
        f"{o['name']}-{o['version']}-{o['build_string']}" for o in json.loads(result.stdout)
    }
    built = {p.name.removesuffix(".conda") for p in cuda.artifacts.glob("*/*.conda")}
    names = {d.rsplit("-", 2)[0] for d in built}
    assert names <= {d.rsplit("-", 2)[0] for d in tailored}
    assert not tailored & built
    cuda_tag = "cuda" + CUDA_VERSION.replace(".", "")
    assert all(re.search(rf"-{cuda_tag}_sm\d+(ptx)?_", d) for d in tailored), tailored


def test_tools_check_warns_on_the_default_builds_extra_architectures(cuda, one_arch) -> None:
    recipe, config = one_arch
    check = ["check", "build_artifacts", "--config", str(config), "--recipe-dir", str(recipe)]
    result = _tools(cuda, *check, "--only", "cuda.fatbin", "--json")
    assert result.returncode == 0, result.stdout + result.stderr  # nothing asked for is missing
    newest = read_rows(recipe / "cuda_arch_lists.txt")[(CUDA_VERSION, "linux-64")]
    warned = [
        f
        for f in json.loads(result.stdout)
        if f["status"] == "warn" and f["detail"].endswith(f": not in this config's list {newest}")
    ]
    assert sorted(f["path"].rsplit("/", 1)[-1] for f in warned) == [
        "libtorch_cuda.so",
        "libtorch_cuda_linalg.so",
        "libtorch_cuda_linalg.so",
    ], warned
    default = read_rows(REPO / "recipe" / "cuda_arch_lists.txt")[(CUDA_VERSION, "linux-64")]
    oldest = "sm_" + default.split(";")[0].split("+")[0].replace(".", "")
    assert all(f["detail"].startswith(f"{oldest}, ") for f in warned), warned


def test_the_gpu_smoke_test_installs_the_build_and_runs_the_miniatures_kernel(
    cuda, channel, tmp_path
) -> None:
    kernel_test = REPO / "tests" / "fixtures" / "minitorch" / "gpu_kernels.py"
    smoke = [sys.executable, "-m", "tools", "smoke", str(cuda.artifacts)]
    smoke += ["--channel", str(channel), "--python", "3.12", "--kernel-test", str(kernel_test)]
    result = subprocess.run(
        [*smoke, "--prefix", str(tmp_path / "env")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [verdict] = [line for line in result.stdout.splitlines() if "gpu kernels" in line]
    # Without a GPU, one clear skip line; with one, the kernel's result.
    print(verdict)
    assert verdict.startswith(
        ("skip gpu kernels: no GPU visible (libcudart 13", "ok   gpu kernels")
    )


# ------------------------------------------------- the embedded engine's resume


def test_a_second_run_of_the_embedded_engine_keeps_what_the_first_built(cpu_skbuild) -> None:
    # Last in this module: it rewrites summary.json (the earlier tests read the first one).
    before = (cpu_skbuild.artifacts / "SHA256SUMS").read_text()
    result = cpu_skbuild.build(timeout=600)
    assert result.returncode == 0, result.stderr
    assert "done by an earlier run" in result.stderr and "kept" in result.stderr
    assert (cpu_skbuild.artifacts / "SHA256SUMS").read_text() == before
    record = json.loads((cpu_skbuild.artifacts / "summary.json").read_text())["configs"]
    assert record[cpu_skbuild.config]["status"] == "done"
