"""The torch 2.13.0 CPU wheel split the way recipe/build.sh splits it, packed into .conda
files once per machine (the tests cache), and what a config expects of them: for
tests/e2e/test_check_real_packages.py and tests/e2e/test_check_real_command.py."""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.cache import cached_dir
from helpers.check_pack import SUFFIX, VERSION, _link, _pack_hostile, _sha256, pack

from tools.check import Expectations, OutputExpectation
from tools.check.findings import Finding

LIBTORCH_LIBS = (
    "libc10.so",
    "libshm.so",
    "libtorch.so",
    "libtorch_cpu.so",
    "libtorch_global_deps.so",
)
# Built only with BUILD_TEST=1, which the recipe turns off.
TEST_ONLY_LIBS = (
    "libaoti_custom_ops.so",
    "libbackend_with_compiler.so",
    "libjitbackend_test.so",
    "libtorchbind_test.so",
)
RUNTIME_DEPS = ("libgcc >=14", "libstdcxx >=14", "libgomp >=14", "_openmp_mutex >=4.5")
HOST_PLACEHOLDER = (
    "/home/conda/feedstock_root/build_artifacts/libtorch_1700000000/_h_env_placehold_placehold"
)


@dataclass(frozen=True)
class Built:
    clean: tuple[Path, ...]  # libtorch, pytorch, pytorch-cpu
    missing_lib: Path
    absolute_runpath: Path
    dotdot_member: Path
    overlapping: Path
    python: str
    upstream_tests: Path  # torch/test and torch/bin of the wheel, as a conda package


def _python_of(wheel: Path) -> str:
    tag = wheel.name.split("-")[2]  # cp311
    return f"{tag[2]}.{tag[3:]}"


def _build_all(wheel: Path, root: Path, out: Path) -> Built:
    """The packages in ``out``; ``root`` is scratch space for the layouts they are made of."""
    unpacked = root / "wheel"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    torch = unpacked / "torch"
    py = _python_of(wheel)
    site = f"lib/python{py}/site-packages"

    # libtorch: what the top-level build leaves in $PREFIX.
    libtorch = root / "src-libtorch"
    (libtorch / "lib").mkdir(parents=True)
    for lib in LIBTORCH_LIBS:
        (torch / "lib" / lib).rename(libtorch / "lib" / lib)
    (torch / "include").rename(libtorch / "include")
    (libtorch / "share").mkdir()
    (torch / "share" / "cmake").rename(libtorch / "share" / "cmake")
    (libtorch / "bin").mkdir()
    (torch / "bin" / "torch_shm_manager").rename(libtorch / "bin" / "torch_shm_manager")
    libtorch_build = f"cpu_generic_{SUFFIX}"
    libtorch_pkg = pack(
        libtorch,
        out / "clean",
        {
            "name": "libtorch",
            "build": libtorch_build,
            "build_number": 2,
            "depends": list(RUNTIME_DEPS),
            "constrains": [
                "pytorch-cpu 2.13.0",
                "pytorch-gpu <0.0a0",
                "pytorch 2.13.0 cpu_generic_*_2",
            ],
        },
        run_exports={"weak": ["libtorch >=2.13,<2.14.0a0"]},
    )

    # pytorch: the per-Python phase, with duplicates of libtorch's files linked.
    pytorch = root / "src-pytorch"
    sp_torch = pytorch / site / "torch"
    sp_torch.parent.mkdir(parents=True)
    (torch / "lib" / "libtorch_python.so").rename(pytorch / "lib" / "libtorch_python.so")
    for name in (*TEST_ONLY_LIBS, "libgomp.so.1"):  # libgomp comes from conda-forge's libgomp
        (torch / "lib" / name).unlink()
    # What the split leaves out: upstream's C++ test binaries (torch/test, torch/bin) and
    # its protoc, packed apart so that --baseline can be shown to match them.
    extras = root / "src-upstream-tests"
    extras_torch = extras / site / "torch"
    (extras_torch / "bin").mkdir(parents=True)
    (torch / "test").rename(extras_torch / "test")
    for test_binary in sorted((torch / "bin").iterdir()):
        if test_binary.name != "torch_shm_manager":
            test_binary.rename(extras_torch / "bin" / test_binary.name)
    upstream_tests_pkg = pack(
        extras,
        out / "upstream-tests",
        {
            "name": "pytorch-tests",
            "build": f"cpu_generic_py{py.replace('.', '')}_{SUFFIX}",
            "build_number": 2,
            "depends": [f"pytorch {VERSION} cpu_generic*_2", *RUNTIME_DEPS],
        },
    )
    torch.rename(sp_torch)
    for lib in (*LIBTORCH_LIBS, "libtorch_python.so"):
        _link(sp_torch / "lib" / lib, f"../../../../{lib}")
    _link(sp_torch / "bin" / "torch_shm_manager", "../../../../../bin/torch_shm_manager")
    _link(sp_torch / "share" / "cmake", "../../../../../share/cmake")
    for dist_info in unpacked.glob("*.dist-info"):
        dist_info.rename(pytorch / site / dist_info.name)
    pytorch_pkg = pack(
        pytorch,
        out / "clean",
        {
            "name": "pytorch",
            "build": f"cpu_generic_py{py.replace('.', '')}_{SUFFIX}",
            "build_number": 2,
            "depends": [
                f"libtorch {VERSION} {libtorch_build}",
                f"python >={py},<{py[:2]}{int(py[2:]) + 1}.0a0",
                f"python_abi {py}.* *_cp{py.replace('.', '')}",
                "filelock",
                "fsspec",
                "jinja2",
                "networkx",
                "nomkl",
                "sympy >=1.13.3",
                "typing_extensions >=4.10.0",
                *RUNTIME_DEPS,
            ],
            "constrains": ["pytorch-cpu 2.13.0", "pytorch-gpu <0.0a0"],
        },
        run_exports={"weak": ["pytorch >=2.13,<2.14.0a0", "libtorch >=2.13,<2.14.0a0"]},
    )

    meta = root / "src-pytorch-cpu"
    meta.mkdir()
    meta_pkg = pack(
        meta,
        out / "clean",
        {
            "name": "pytorch-cpu",
            "build": f"cpu_generic_{SUFFIX}",
            "build_number": 2,
            "depends": [f"pytorch {VERSION} cpu_generic*_2"],
        },
    )

    # ---- broken ones: small, built from copies of the small libraries
    missing = root / "src-missing"
    (missing / "lib").mkdir(parents=True)
    for lib in ("libc10.so", "libshm.so", "libtorch.so", "libtorch_global_deps.so"):
        shutil.copy2(libtorch / "lib" / lib, missing / "lib" / lib)
    missing_pkg = pack(
        missing,
        out / "missing",
        {
            "name": "libtorch",
            "build": "cpu_generic_h1111111_2",
            "build_number": 2,
            "depends": list(RUNTIME_DEPS),
        },
    )

    leaky = root / "src-leaky"
    (leaky / "lib").mkdir(parents=True)
    shutil.copy2(libtorch / "lib" / "libc10.so", leaky / "lib" / "libc10.so")
    subprocess.run(
        ["patchelf", "--set-rpath", f"{HOST_PLACEHOLDER}/lib", str(leaky / "lib" / "libc10.so")],
        check=True,
    )
    leaky_pkg = pack(
        leaky,
        out / "leaky",
        {
            "name": "libc10-leaky",
            "build": "h2222222_0",
            "build_number": 0,
            "depends": list(RUNTIME_DEPS),
        },
    )

    dotdot_pkg = _pack_hostile(out / "hostile")

    extra = root / "src-extra"
    (extra / "lib").mkdir(parents=True)
    shutil.copy2(libtorch / "lib" / "libc10.so", extra / "lib" / "libc10.so")
    extra_pkg = pack(
        extra,
        out / "overlap",
        {
            "name": "libtorch-extras",
            "build": f"cpu_generic_{SUFFIX}",
            "build_number": 2,
            "depends": list(RUNTIME_DEPS),
        },
    )
    return Built(
        (libtorch_pkg, pytorch_pkg, meta_pkg),
        missing_pkg,
        leaky_pkg,
        dotdot_pkg,
        extra_pkg,
        py,
        upstream_tests_pkg,
    )


def built_packages(
    torch_wheel: Path, tests_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Built:
    """Packed once per machine, not per run (half a minute of unpacking and zstd): the
    packages are made only from the wheel and the packing code, which name the entry (an
    edit to a test leaves it valid; one to the packing makes a new one)."""
    packing = (_build_all, _pack_hostile, pack, _link, _sha256)
    source = "".join(map(inspect.getsource, packing)) + repr(
        (VERSION, SUFFIX, LIBTORCH_LIBS, TEST_ONLY_LIBS, RUNTIME_DEPS, HOST_PLACEHOLDER)
    )
    key = hashlib.sha256(source.encode()).hexdigest()[:12]
    entry = tests_cache_dir / "check-real-packages" / f"{torch_wheel.stem}-{key}"

    def build(folder: Path) -> None:
        made = _build_all(torch_wheel, tmp_path_factory.mktemp("check-real"), folder)
        (folder / MANIFEST).write_text(json.dumps(_manifest(made, folder)))

    entry = cached_dir(entry, build, lambda found: (found / MANIFEST).is_file())
    return _from_manifest(json.loads((entry / MANIFEST).read_text()), entry)


MANIFEST = "built.json"


def _manifest(made: Built, folder: Path) -> dict:
    def rel(path: Path) -> str:
        return path.relative_to(folder).as_posix()

    fields = {k: getattr(made, k) for k in Built.__dataclass_fields__}
    return {
        k: v if isinstance(v, str) else [rel(p) for p in v] if isinstance(v, tuple) else rel(v)
        for k, v in fields.items()
    }


def _from_manifest(manifest: dict, entry: Path) -> Built:
    fields = {
        k: v if k == "python" else tuple(entry / p for p in v) if isinstance(v, list) else entry / v
        for k, v in manifest.items()
    }
    return Built(**fields)


def _expect(built: Built, **overrides) -> Expectations:
    py = built.python
    fields = {
        "config": "linux_64_blas_implgenericc_stdlib_version2.28cuda_compiler_versionNone",
        "c_stdlib_version": "2.28",
        "cxx_compiler_version": "14",
        "cuda_compiler_version": "None",
        "outputs": (
            OutputExpectation(
                "libtorch",
                run=(),
                run_constrained=("pytorch-cpu 2.13.0", "pytorch-gpu <0.0a0"),
                declares_run_exports=True,
            ),
            OutputExpectation(
                "pytorch",
                run=(
                    "libtorch 2.13.0 cpu_generic_*_2",
                    "python",
                    "filelock",
                    "sympy >=1.13.3",
                    "nomkl",
                ),
                run_constrained=("pytorch-cpu 2.13.0",),
                declares_run_exports=True,
                python=py,
            ),
            OutputExpectation("pytorch-cpu", run=("pytorch 2.13.0 cpu_generic*_2",)),
        ),
    }
    fields.update(overrides)
    return Expectations(**fields)


def _failures(findings: list[Finding], check: str | None = None) -> list[Finding]:
    return [f for f in findings if f.status == "fail" and (check is None or f.check == check)]
