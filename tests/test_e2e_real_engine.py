"""The main job end to end on a real build engine (issue 22).

`python build-locally.py CONFIG` in a throw-away copy of this feedstock switched to
rattler-build (tests/fixtures/e2e_feedstock.py), with tests/fixtures/fake_docker as the
container engine and tests/fixtures/rattler_build (py-rattler-build) as the engine inside.
The v1 recipe builds the miniature (tests/fixtures/minitorch) against the stand-in channel
(tests/fixtures/standin_channel). Then the packages are checked with `python -m tools
check`, solved and installed with py-rattler, imported, and libtorch's cmake_test is built
against the installed prefix.

Narrowed for 2 cores: two Pythons (3.12, the megabuild's, and 3.13), one CPU and one CUDA
config (generic BLAS; the miniature compiles its CUDA sources as plain C++).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.e2e_feedstock import PYTHONS, REPO, E2EFeedstock, narrowed_config

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="builds linux-64 packages"),
]

CPU = "linux_64_blas_implgenericc_compiler_version15c_stdlib_version2.17*"
CUDA = "linux_64_blas_implgenericc_compiler_version15c_stdlib_version2.28*"
VERSION = "2.13.0"
#: Objects of the Python-independent core: compiled once per config, in the staging output.
CORE_OBJECTS = (
    "c10/c10.cpp.o",
    "aten/src/ATen/Context.cpp.o",
    "aten/generated/RegisterOps.cpp.o",
    "torch/csrc/api/torch.cpp.o",
)
#: The one object every Python compiles again (torch._C's library, libtorch_python).
PYTHON_BOUND = "torch/csrc/Module.cpp.o"


@pytest.fixture(scope="module")
def channel(tmp_path_factory) -> Path:
    from fixtures.standin_channel.channel import ChannelError, standin_channel

    folder = tmp_path_factory.mktemp("configs")
    configs = []
    for name, glob in (("cpu", CPU), ("cuda", CUDA)):
        [source] = sorted((REPO / ".ci_support").glob(glob + ".yaml"))
        configs.append(folder / f"{name}.yaml")
        configs[-1].write_text(narrowed_config(source))
    try:
        return standin_channel(configs)
    except ChannelError as error:
        pytest.skip(f"no stand-in channel on this machine: {error}")


def _built(tmp_path_factory, channel: Path, glob: str) -> E2EFeedstock:
    fs = E2EFeedstock.make(tmp_path_factory.mktemp("e2e"), glob, channel)
    result = fs.build()
    logs = sorted(fs.artifacts.glob("*-log.txt"))
    tail = "\n".join(logs[0].read_text().splitlines()[-60:]) if logs else result.stderr
    assert result.returncode == 0, f"build-locally.py {fs.config} failed:\n{tail}"
    return fs


@pytest.fixture(scope="module")
def cpu(tmp_path_factory, channel: Path) -> E2EFeedstock:
    return _built(tmp_path_factory, channel, CPU)


@pytest.fixture(scope="module")
def cuda(tmp_path_factory, channel: Path) -> E2EFeedstock:
    return _built(tmp_path_factory, channel, CUDA)


def _packages(fs: E2EFeedstock) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(fs.artifacts.glob("*/*.conda")):
        name = path.name.rsplit("-", 2)[0]
        found.setdefault(name, []).append(path.name)
    return found


def _python_tags() -> list[str]:
    return ["py" + p.split(".*")[0].replace(".", "") for p in PYTHONS]


# ------------------------------------------------------------------ the builds


def test_cpu_megabuild_leaves_every_output_with_checksums_and_summary(cpu) -> None:
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
        start, end, mtime, output, _hash = line.split("\t")
        if output.endswith(".o"):
            objects[output.split(".dir/", 1)[-1]] = int(mtime)
    return objects


def test_megabuild_compiles_the_core_once(cpu) -> None:
    [staging_log] = cpu.artifacts.glob("build_cache/*/work_dir/build/.ninja_log")
    staged = _ninja_objects(staging_log)
    assert set(CORE_OBJECTS) <= set(staged), sorted(staged)
    output_logs = sorted(cpu.artifacts.glob("bld/rattler-build_*/work/build/.ninja_log"))
    assert output_logs, "no output kept its work folder (--keep-build)"
    recompiled: dict[str, list[str]] = {}
    for log in output_logs:
        objects = _ninja_objects(log)
        again = sorted(o for o, mtime in objects.items() if staged.get(o) != mtime)
        recompiled[log.parents[2].name] = again
        assert not set(again) & set(CORE_OBJECTS), f"{log}: the core compiled again: {again}"
    pytorch_dirs = [d for d in recompiled if d.startswith("rattler-build_pytorch_")]
    # Each Python but the megabuild's own rebuilds the bindings, and only them.
    assert sum(PYTHON_BOUND in recompiled[d] for d in pytorch_dirs) >= len(PYTHONS) - 1


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


@pytest.mark.parametrize("which", ["cpu", "cuda"])
def test_tools_check_passes_on_the_built_packages(which, request) -> None:
    fs = request.getfixturevalue(which)
    result = _tools(fs, "check", "build_artifacts", "--config", fs.config)
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------- solve, install, import


def _solve(channels: list[Path], specs: list[str], cuda: str | None = None):
    import rattler

    found = {"__glibc": "2.36", "__unix": "0", "__linux": "6.1", "__archspec": "1"}
    if cuda:
        found["__cuda"] = cuda
    virtual = [
        rattler.GenericVirtualPackage(
            rattler.PackageName(name), rattler.Version(version), rattler.BuildString("0")
        )
        for name, version in found.items()
    ]
    return asyncio.run(
        rattler.solve(
            [c.as_uri() for c in channels],
            specs,
            platforms=["linux-64", "noarch"],
            virtual_packages=virtual,
        )
    )


def _install(records, prefix: Path, cache: Path) -> Path:
    import rattler

    asyncio.run(rattler.install(records, prefix, cache_dir=cache, show_progress=False))
    return prefix


def _run_python(prefix: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(prefix / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(prefix)},
    )


@pytest.mark.parametrize("python", [p.split(".*")[0] for p in PYTHONS])
def test_pytorch_installs_and_imports_for_each_python(cpu, channel, python, tmp_path) -> None:
    records = _solve([cpu.artifacts, channel], ["pytorch", f"python {python}.*"])
    [torch] = [r for r in records if r.name.normalized == "pytorch"]
    assert f"_py{python.replace('.', '')}_" in torch.build
    prefix = _install(records, tmp_path / "env", tmp_path / "cache")
    result = _run_python(prefix, "import torch; print(torch.__version__)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(VERSION)


def test_pytorch_cpu_and_pytorch_gpu_cannot_be_installed_together(cpu, cuda, channel) -> None:
    import rattler

    with pytest.raises(rattler.exceptions.SolverError):
        _solve([cpu.artifacts, cuda.artifacts, channel], ["pytorch-cpu", "pytorch-gpu"], "13.0")


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
    records = _solve([cuda.artifacts, channel], ["pytorch", spec, "python 3.12.*"], "13.0")
    [linalg] = [r for r in records if r.name.normalized == "libtorch-cuda-linalg"]
    assert linalg.build.split("_")[1] == flavour
    prefix = _install(records, tmp_path / "env", tmp_path / "cache")
    result = _run_python(prefix, "import torch; print(torch.cuda.has_magma)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(has_magma)
    magma = sorted(p.name for p in (prefix / "lib").glob("libmagma*"))
    assert bool(magma) == has_magma, magma


def test_libtorch_cmake_test_builds_and_runs_against_the_installed_prefix(
    cpu, channel, tmp_path
) -> None:
    records = _solve([cpu.artifacts, channel], ["libtorch", "cmake", "ninja"])
    prefix = _install(records, tmp_path / "env", tmp_path / "cache")
    source = cpu.root / "recipe" / "cmake_test"
    build = tmp_path / "build"
    env = {"PATH": f"{prefix / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    for argv in (
        ["cmake", "-S", source, "-B", build, "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"],
        ["cmake", "--build", build],
        [build / "torch_consumer"],
    ):
        result = subprocess.run(
            [str(a) for a in argv], capture_output=True, text=True, env=env, check=False,
            timeout=300,
        )
        assert result.returncode == 0, f"{argv}: {result.stdout}{result.stderr}"
