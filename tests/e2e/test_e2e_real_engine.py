"""The main job end to end on the embedded engine (issues 22, 35 and 44): what a user without
Docker runs.

`python build-locally.py CONFIG` in a throw-away copy of this feedstock
(tests/helpers/e2e_feedstock.py) with py-rattler-build as the engine (tools/rattler_build/):
no engine flag and no container engine or conda-build on PATH, the stand-in channel as the
one `--channel`, the miniature packed as PyTorch's release archive in a `--source-cache` (the
recipe's URL unchanged, its sha256 the miniature's), `--ccache` through the ccache on PATH
(the fake one, which counts compiles). The feedstock is switched to rattler-build, so that
`tools check --config` renders the recipe the engine built (tests/e2e/test_build_locally_embedded.py
drives the engine on recipe-v1.yaml beside meta.yaml, as this repository has it); the setup.py
CPU batch's, with `python -m tools switch` (tests/e2e/test_switch_clone.py: the other commands).

The CPU config is built in both layouts of the miniature: setup.py (PyTorch <= 2.13) and
scikit-build-core (PyTorch >= 2.14), whose host environments each hold their own
scikit-build-core; the CUDA config (the newest CUDA version) once more with the engine's test
phase on. The v1 recipe builds the miniature (tests/fixtures/minitorch) against the stand-in
channel (tests/helpers/standin_channel). Then the packages are checked with `python -m tools
check`, solved and installed with py-rattler, imported, and libtorch's cmake_test is built
against the installed prefix. The CUDA config through the container path is
tests/e2e/test_e2e_real_engine_container.py's; each build is made in one test module alone.
The CPU batch is also what `review sign` would sign (CEP 27 statements) and where a signature
not its own is caught (tests/fixtures/sigstore).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest
from helpers.conda_packages import install, solve
from helpers.e2e_feedstock import PYTHONS, E2EFeedstock, e2e_channel
from helpers.e2e_real import (
    CPU,
    CUDA,
    CUDA_VERSION,
    VERSION,
    built,
    check_left,
    check_pins,
    launched_objects,
    ninja_objects,
    packages_of,
    python_tags,
    run_python,
    stray_bytecode,
    tools,
    unexplained,
)
from helpers.minitorch.support import (
    CORE_OBJECTS,
    EXTENSION,
    PYTHON_BOUND_OBJECTS,
    SCIKIT_BUILD_CORE,
)
from helpers.no_network import no_network
from helpers.sigstore_fixture import PACKAGE, SCHEMA, SIDECAR, posted, sigstore_cache, stat_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="builds linux-64 packages"),
]


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    return e2e_channel(tmp_path_factory)


@pytest.fixture(scope="module")
def cpu(tmp_path_factory, channel: Path) -> E2EFeedstock:
    return built(tmp_path_factory, channel, CPU, embedded=True, by_command=True)


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
    return built(tmp_path_factory, channel, CPU, SCIKIT_BUILD_CORE, embedded=True)


# ------------------------------------------------------------------ the builds


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
def test_cpu_megabuild_leaves_every_output_with_checksums_and_summary(which, request) -> None:
    cpu = request.getfixturevalue(which)
    packages = packages_of(cpu)
    assert sorted(packages) == ["libtorch", "pytorch", "pytorch-cpu"]
    assert [t for t in python_tags() if any(f"_{t}_" in p for p in packages["pytorch"])] == (
        python_tags()
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
    from tools.review.verify import verify

    def check(config: str, packages: list[Path]):
        # the expectations of the variant the engine built, as the test of `tools check` has
        as_built = cpu.variant_as_built()
        result = tools(cpu, "check", *map(str, packages), "--config", as_built, "--json")
        left = unexplained(json.loads(result.stdout))
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


def test_review_sign_would_sign_a_cep27_statement_per_package_and_offline_writes_nothing(
    cpu, tmp_path: Path
) -> None:
    argv = [sys.executable, "-m", "tools", "review", "sign", "build_artifacts", "--channel", "jdoe"]
    dry = tools(cpu, *argv[3:], "--dry-run")
    assert dry.returncode == 0, dry.stderr
    schema = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))  # CEP 27's own
    named = {}
    for statement in map(json.loads, dry.stdout.splitlines()):
        schema.validate(statement)
        named[statement["subject"][0]["name"]] = statement["subject"][0]["digest"]["sha256"]
    lines = (cpu.artifacts / "SHA256SUMS").read_text().splitlines()
    assert named == {n.rsplit("/", 1)[-1]: d for d, n in map(str.split, lines)}
    before = stat_tree(cpu.artifacts)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACTIONS_ID_TOKEN_")}
    env["XDG_CACHE_HOME"] = env["XDG_DATA_HOME"] = str(tmp_path)
    offline = subprocess.run(argv, cwd=cpu.root, env=env, stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert offline.returncode == 2 and offline.stdout == "", offline.stdout
    [line] = offline.stderr.splitlines()
    assert line.startswith("error: review sign: no identity token can be had: "), line
    assert stat_tree(cpu.artifacts) == before


def test_the_fixtures_signature_beside_one_package_fails_on_that_package(
    cpu, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools.foundation.errors import ProblemsFound
    from tools.review.verify import verify

    upload = posted(cpu.artifacts, tmp_path / "posted")
    [package] = sorted((upload / "linux-64").glob("libtorch-*.conda"))
    shutil.copy2(SIDECAR, package.with_name(f"{package.name}.sigs"))
    sigstore_cache(monkeypatch, tmp_path)
    said: list[str] = []
    with no_network(), pytest.raises(ProblemsFound):
        verify(cpu.root, upload, None, say=said.append, check=lambda config, packages: None,
               allow_other_engine=True)  # fmt: skip
    assert [line for line in said if line.startswith("FAIL ")] == [
        f"FAIL linux-64/{package.name}: subject: the statement is for '{PACKAGE}', not "
        f"{package.name} ({package.name}.sigs, bundle 1 of 1)"
    ]


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
    assert sorted(packages_of(fs)) == ["libtorch", "libtorch-cuda-linalg", "pytorch", "pytorch-gpu"]
    assert not list(fs.artifacts.glob("broken/*"))


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
def test_megabuild_compiles_the_core_once(which, request) -> None:
    cpu = request.getfixturevalue(which)
    # The staging output's .ninja_log: the core compiled there ...
    [staging_log] = cpu.artifacts.glob("build_cache/*/work_dir/build/.ninja_log")
    staged = ninja_objects(staging_log)
    assert set(CORE_OBJECTS) <= set(staged), sorted(staged)
    # ... the last output's (--keep-build) inherited it and rebuilt only the bindings ...
    # (rattler-build_libtorch_<id>, or without the id under --no-build-id, which --ccache sets)
    [output_log] = cpu.artifacts.glob("bld/rattler-build_libtorch*/work/build/.ninja_log")
    again = sorted(o for o, mtime in ninja_objects(output_log).items() if staged.get(o) != mtime)
    extension = [EXTENSION] if which == "cpu_skbuild" else []
    assert again == sorted([*PYTHON_BOUND_OBJECTS, *extension])
    # ... and across every output, each core object compiled exactly once, the bindings
    # exactly once per Python (the megabuild Python's in the staging output).
    launched = launched_objects(cpu)
    assert {o: launched.count(o) for o in CORE_OBJECTS} == dict.fromkeys(CORE_OBJECTS, 1)
    for bound in PYTHON_BOUND_OBJECTS:
        assert launched.count(bound) == len(PYTHONS), launched
    if which == "cpu_skbuild":
        assert launched.count(EXTENSION) == len(PYTHONS), launched


@pytest.mark.parametrize("which", ["cpu"])
def test_every_output_pins_the_libtorch_of_its_own_build(which, request) -> None:
    check_pins(request.getfixturevalue(which))


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
def test_no_package_carries_bytecode_outside_site_packages(which, request) -> None:
    # Bytecode of the recipe"s helpers (info/recipe/__pycache__, byte-compiled while the
    # build ran them) or of the source"s tools/ (the tests" source_files, imported by the
    # build backend) embeds the engine"s random work paths, and nobody asked for it.
    assert stray_bytecode(request.getfixturevalue(which)) == {}


# ------------------------------------------------------- the toolkit's check


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
def test_tools_check_passes_on_the_built_packages(which, request) -> None:
    left = check_left(request.getfixturevalue(which))
    assert not left, "\n".join(f"{f['check']} {f['path']}: {f['detail']}" for f in left[:20])


# ---------------------------------------------------- solve, install, import


@pytest.mark.parametrize("which", ["cpu", "cpu_skbuild"])
@pytest.mark.parametrize("python", [p.split(".*")[0] for p in PYTHONS])
def test_pytorch_installs_and_imports_for_each_python(
    which, request, channel, python, tmp_path
) -> None:
    cpu = request.getfixturevalue(which)
    records = solve([cpu.artifacts, channel], ["pytorch", f"python {python}.*"])
    [torch] = [r for r in records if r.name.normalized == "pytorch"]
    assert f"_py{python.replace('.', '')}_" in str(torch.build)
    prefix = install(records, tmp_path / "env", tmp_path / "cache")
    result = run_python(prefix, "import torch; print(torch.__version__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(VERSION)


def test_pytorch_cpu_and_pytorch_gpu_cannot_be_installed_together(
    cpu, cuda_tested, channel
) -> None:
    # The GPU packages of the embedded engine's CUDA build: the container path's are
    # test_e2e_real_engine_container.py's, and each build is made in one module alone.
    from rattler.exceptions import SolverError

    cuda, failure = cuda_tested
    assert not failure, failure

    with pytest.raises(SolverError):
        solve(
            [cpu.artifacts, cuda.artifacts, channel], ["pytorch-cpu", "pytorch-gpu"], CUDA_VERSION
        )


def test_libtorch_cmake_test_builds_and_runs_against_the_installed_prefix(
    cpu, channel, tmp_path
) -> None:
    # As the libtorch package's own test runs it: the compilers' activation (CXXFLAGS,
    # CMAKE_ARGS) in an environment holding libtorch, then recipe/cmake_test, whose
    # CMakeLists.txt (find_package(Torch), TORCH_LIBRARIES) and consumer.cpp (PyTorch's C++
    # API: at::ones, at::matmul through BLAS, autograd) are used as they are.
    specs = ["libtorch", "cmake", "ninja", "gcc_linux-64", "gxx_linux-64"]
    prefix = install(solve([cpu.artifacts, channel], specs), tmp_path / "env", tmp_path / "c")
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
