"""``python -m tools check`` on real PyTorch binaries.

The torch 2.13.0 CPU wheel is unpacked and laid out the way
recipe/build.sh splits it: ``libtorch`` (lib/, include/, share/cmake, bin/)
and ``pytorch`` (site-packages/torch with torch/lib entries linked into
$PREFIX/lib, libtorch_python in $PREFIX/lib), plus the ``pytorch-cpu``
metapackage.  They are packed into real .conda files with
conda-package-handling (zstd level 1: the 430 MB libtorch_cpu.so is packed
once), kept in the tests cache (made once per machine), read once per session, and then
checked against different expectations.  Broken packages are small and built beside them.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conda_package_handling import api as cph
from helpers.cache import cached_dir
from helpers.cli import run_tools

from tools.check import Expectations, OutputExpectation, load, run_checks
from tools.check.findings import Finding

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
VERSION = "2.13.0"
SUFFIX = "h0c0ffee_2"
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


# ------------------------------------------------------------------ packing


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def pack(
    prefix: Path,
    out_dir: Path,
    index: dict,
    run_exports: dict | None = None,
    placeholders: dict[str, str] | None = None,
) -> Path:
    """Write info/ for the files under ``prefix`` and pack a .conda with conda-package-handling."""
    placeholders = placeholders or {}
    files = sorted(
        p.relative_to(prefix).as_posix()
        for p in prefix.rglob("*")
        if (p.is_file() or p.is_symlink())
        and not p.relative_to(prefix).as_posix().startswith("info/")
    )
    paths = []
    for rel in files:
        real = prefix / rel
        entry = {"_path": rel, "path_type": "softlink" if real.is_symlink() else "hardlink"}
        if not real.is_symlink():
            entry.update(sha256=_sha256(real), size_in_bytes=real.stat().st_size)
        if rel in placeholders:
            entry.update(prefix_placeholder=placeholders[rel], file_mode="text")
        paths.append(entry)
    info = prefix / "info"
    info.mkdir(exist_ok=True)
    index = {
        "arch": "x86_64",
        "platform": "linux",
        "subdir": "linux-64",
        "license": "BSD-3-Clause",
        "timestamp": 1700000000000,
        "version": VERSION,
        "constrains": [],
        **index,
    }
    (info / "index.json").write_text(json.dumps(index, indent=2))
    (info / "paths.json").write_text(json.dumps({"paths": paths, "paths_version": 1}, indent=2))
    (info / "files").write_text("\n".join(files) + "\n")
    if run_exports is not None:
        (info / "run_exports.json").write_text(json.dumps(run_exports))
    info_files = sorted(p.relative_to(prefix).as_posix() for p in info.iterdir())
    stem = f"{index['name']}-{index['version']}-{index['build']}"
    out_dir.mkdir(parents=True, exist_ok=True)
    cph.create(
        str(prefix),
        files + info_files,
        f"{stem}.conda",
        str(out_dir),
        compression_level=1,
        compression_threads=2,
    )
    return out_dir / f"{stem}.conda"


def _link(at: Path, target: str) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    if at.exists() or at.is_symlink():
        if at.is_dir() and not at.is_symlink():
            shutil.rmtree(at)
        else:
            at.unlink()
    at.symlink_to(target)


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


def _pack_hostile(out: Path) -> Path:
    """A .conda whose pkg tarball holds a '..' member, an absolute one and an escaping link."""
    from conda_package_streaming.create import conda_builder

    out.mkdir(parents=True, exist_ok=True)
    stem = f"hostile-1.0-{SUFFIX}"

    def add(tar, name: str, data: bytes = b"", link: str | None = None) -> None:
        info = tarfile.TarInfo(name)
        if link is not None:
            info.type, info.linkname = tarfile.SYMTYPE, link
            tar.addfile(info)
        else:
            info.size = len(data)
            import io

            tar.addfile(info, io.BytesIO(data))

    with conda_builder(stem, out, compression_level=1) as tar:
        add(
            tar,
            "info/index.json",
            json.dumps(
                {
                    "name": "hostile",
                    "version": "1.0",
                    "build": SUFFIX,
                    "build_number": 2,
                    "subdir": "linux-64",
                    "depends": [],
                }
            ).encode(),
        )
        add(tar, "lib/ok.txt", b"harmless\n")
        add(tar, "../escaped-by-dotdot.txt", b"should never be written\n")
        add(tar, "/tmp/absolute-member.txt", b"should never be written\n")
        add(tar, "lib/passwd", link="../../../etc/passwd")
    return out / f"{stem}.conda"


@pytest.fixture(scope="session")
def built(
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


@pytest.fixture(scope="session")
def clean_packages(built: Built):
    return load(built.clean)


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


# ------------------------------------------------------------------ clean packages


def test_clean_split_passes_every_check_that_applies_to_upstream_binaries(built, clean_packages):
    findings = run_checks(clean_packages, _expect(built))
    # Upstream builds with devtoolset, which links parts of libstdc++ statically;
    # that is the one property a conda-forge build must not share with them.
    unexpected = [f for f in _failures(findings) if f.check != "abi.static-libstdcxx"]
    assert unexpected == []
    checks_run = {f.check for f in findings}
    assert {
        "archive.member",
        "elf.machine",
        "elf.needed",
        "elf.runpath",
        "elf.glibc",
        "elf.glibcxx",
        "elf.cxxabi",
        "abi.cxx11",
        "layout.expected-files",
        "layout.overlap",
        "layout.torch-lib-links",
        "layout.build-prefix",
        "cuda.runtime",
        "metadata.depends",
        "metadata.constrains",
        "metadata.run-exports",
    } <= checks_run


def test_libtorch_cpu_symbols_agree_with_the_cxx11_abi(built, clean_packages):
    findings = [f for f in run_checks(clean_packages, _expect(built)) if f.check == "abi.cxx11"]
    assert [f.status for f in findings] == ["pass"]
    assert findings[0].path.endswith(":lib/libtorch_cpu.so")
    assert "0 old-ABI" in findings[0].detail


def test_upstream_devtoolset_libstdcxx_pieces_are_reported_as_static_libstdcxx(
    built, clean_packages
):
    failing = _failures(run_checks(clean_packages, _expect(built)), "abi.static-libstdcxx")
    assert any(
        f.path.endswith(":lib/libtorch_cpu.so") and "filesystem" in f.detail for f in failing
    )


def test_needed_libraries_resolve_through_runpath_and_run_dependencies(built, clean_packages):
    needed = [f for f in run_checks(clean_packages, _expect(built)) if f.check == "elf.needed"]
    assert {f.status for f in needed} == {"pass"}
    libtorch = next(f for f in needed if f.path.startswith("libtorch-"))
    assert "libgomp" in libtorch.detail and "libstdcxx" in libtorch.detail


def test_torch_lib_entries_of_pytorch_are_links_into_prefix_lib(built, clean_packages):
    links = [
        f for f in run_checks(clean_packages, _expect(built)) if f.check == "layout.torch-lib-links"
    ]
    assert [f.status for f in links] == ["pass"]
    assert links[0].detail.startswith("6 torch/lib links")


# ------------------------------------------------------------------ broken packages


def test_glibc_requirement_above_the_configs_c_stdlib_version_fails(built, clean_packages):
    findings = run_checks(clean_packages, _expect(built, c_stdlib_version="2.17"))
    glibc = _failures(findings, "elf.glibc")
    assert glibc and all("above GLIBC_2.17" in f.detail for f in glibc)
    assert any("GLIBC_2.28" in f.detail for f in glibc)


def test_missing_library_fails_needed_resolution(built):
    findings = run_checks(load([built.missing_lib]))
    needed = _failures(findings, "elf.needed")
    assert {f.path.rsplit(":", 1)[1] for f in needed} >= {"lib/libshm.so", "lib/libtorch.so"}
    assert all("libtorch_cpu.so" in f.detail for f in needed)
    assert any(
        "missing lib/libtorch_cpu.so" in f.detail
        for f in _failures(findings, "layout.expected-files")
    )


def test_absolute_runpath_set_by_patchelf_fails(built):
    failing = _failures(run_checks(load([built.absolute_runpath])), "elf.runpath")
    assert len(failing) == 1
    assert failing[0].path.endswith(":lib/libc10.so")
    assert "/home/conda/feedstock_root" in failing[0].detail


def test_dotdot_absolute_and_escaping_members_fail_and_are_never_written(built, tmp_path):
    before = set(built.dotdot_member.parent.parent.iterdir())
    findings = run_checks(load([built.dotdot_member], workdir=tmp_path))
    failing = {f.path.split(":", 1)[1]: f.detail for f in _failures(findings, "archive.member")}
    assert set(failing) == {"../escaped-by-dotdot.txt", "/tmp/absolute-member.txt", "lib/passwd"}
    assert "'..'" in failing["../escaped-by-dotdot.txt"]
    assert "escapes" in failing["lib/passwd"]
    assert not (built.dotdot_member.parent.parent / "escaped-by-dotdot.txt").exists()
    assert not Path("/tmp/absolute-member.txt").exists()
    assert set(built.dotdot_member.parent.parent.iterdir()) == before
    assert list(tmp_path.iterdir()) == []


def test_file_shipped_by_two_packages_of_one_config_fails(built, clean_packages):
    packages = [*clean_packages, *load([built.overlapping])]
    overlap = _failures(run_checks(packages, _expect(built)), "layout.overlap")
    assert [f.path for f in overlap] == ["lib/libc10.so"]
    assert "libtorch-extras" in overlap[0].detail and "libtorch-2.13.0" in overlap[0].detail


# ------------------------------------------------------------------ the command


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_tools("check", *args, timeout=600)


def test_command_json_lists_findings_and_exits_1_on_a_failure(built):
    result = _cli("--json", str(built.absolute_runpath))
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    assert all(set(f) >= {"check", "status", "path", "detail"} for f in findings)
    assert any(f["check"] == "elf.runpath" and f["status"] == "fail" for f in findings)


def test_command_prints_a_report_and_exits_0_when_nothing_fails(built, tmp_path):
    meta = next(p for p in built.clean if p.name.startswith("pytorch-cpu-"))
    result = _cli(str(meta))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == "archive.member: 1 pass"
    assert result.stdout.splitlines()[-1].startswith("summary: 0 fail, 0 warn, ")


def test_command_reads_a_directory_of_packages(built):
    result = _cli("--json", str(built.missing_lib.parent))
    assert result.returncode == 1
    assert any(f["check"] == "elf.needed" for f in json.loads(result.stdout))


# ------------------------------------------------------------------ installed prefix


def test_installed_prefix_is_checked_against_its_whole_environment(built, tmp_path):
    prefix = tmp_path / "env"
    (prefix / "conda-meta").mkdir(parents=True)
    for package_file in built.clean[:2]:  # libtorch and pytorch, as conda would install them
        cph.extract(str(package_file), dest_dir=str(prefix), components=["pkg"])
        name, version, build = package_file.name[: -len(".conda")].rsplit("-", 2)
        files = sorted(
            p.relative_to(prefix).as_posix()
            for p in prefix.rglob("*")
            if (p.is_file() or p.is_symlink())
            and not p.relative_to(prefix).as_posix().startswith(("conda-meta/", "info/"))
        )
        owned = set().union(
            *(
                set(json.loads(r.read_text())["files"])
                for r in (prefix / "conda-meta").glob("*.json")
            )
        )
        (prefix / "conda-meta" / f"{name}-{version}-{build}.json").write_text(
            json.dumps(
                {
                    "name": name,
                    "version": version,
                    "build": build,
                    "subdir": "linux-64",
                    "depends": list(RUNTIME_DEPS),
                    "files": [f for f in files if f not in owned],
                }
            )
        )
    findings = run_checks(load([prefix]))
    assert {f.path for f in findings if f.check == "elf.needed" and f.status == "pass"} == {
        f"{prefix}[libtorch]",
        f"{prefix}[pytorch]",
    }
    assert [f.status for f in findings if f.check == "layout.torch-lib-links"] == ["pass"]
    assert [f for f in findings if f.status == "fail" and f.check != "abi.static-libstdcxx"] == []


# ------------------------------------------------------------------ --config


def test_config_render_supplies_stdlib_and_requirements(built, reference_dir):
    config = (
        reference_dir
        / "ci_support"
        / (
            "linux_64_blas_implgenericc_stdlib_version2.17channel_targetsconda-forge_main"
            "cuda_compiler_versionNoneis_rcFalse.yaml"
        )
    )
    result = _cli("--json", "--config", str(config), str(built.clean[0].parent))
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)
    # The upstream wheel is manylinux_2_28; this config promises glibc 2.17.
    assert any(
        f["check"] == "elf.glibc"
        and f["status"] == "fail"
        and "c_stdlib_version 2.17" in f["detail"]
        for f in findings
    )
    assert {"metadata.depends", "metadata.constrains", "metadata.run-exports"} <= {
        f["check"] for f in findings
    }
    assert any(
        f["check"] == "elf.glibcxx" and "cxx_compiler_version" in f["detail"] for f in findings
    )


# ------------------------------------------------------------------ upstream wheel


def test_upstream_wheel_test_binaries_leak_build_machine_runpaths(torch_wheel):
    findings = run_checks(load([torch_wheel]))
    runpath = _failures(findings, "elf.runpath")
    # BUILD_TEST binaries carry MKL's /lib/intel64 search paths; the libraries do not.
    assert runpath and all("/lib/intel64" in f.detail for f in runpath)
    assert not any(":torch/lib/" in f.path for f in runpath)
    glibc = [f for f in findings if f.check == "elf.glibc"]
    assert [f.status for f in glibc] == ["pass"] and "manylinux_2_28" in glibc[0].detail
    # devtoolset's static libstdc++ pieces are expected in a wheel: warned, not failed
    assert {f.status for f in findings if f.check == "abi.static-libstdcxx"} == {"warn"}


# ------------------------------------------------------------------ --baseline


def _json_of(*args: str) -> list[dict]:
    return json.loads(_cli("--json", *args).stdout)


def test_baseline_wheel_leaves_out_the_runpaths_of_upstreams_own_test_binaries(built, torch_wheel):
    ours = [*map(str, built.clean), str(built.upstream_tests)]
    wheel_alone = _json_of("--only", "elf.runpath", str(torch_wheel))
    upstream = [f for f in wheel_alone if f["status"] == "fail"]
    alone = [f for f in _json_of("--only", "elf.runpath", *ours) if f["status"] == "fail"]
    assert len(alone) == len(upstream) > 0  # 69 for torch 2.13.0+cpu
    assert all("/lib/intel64" in f["detail"] for f in alone)

    compared = _cli("--json", "--baseline", str(torch_wheel), *ours)
    failing = [f for f in json.loads(compared.stdout) if f["status"] == "fail"]
    assert not [f for f in failing if f["check"] == "elf.runpath"]
    # What is left is a real difference: test_jit needs test-only libraries the split drops.
    assert failing and {f["check"] for f in failing} == {"elf.needed"}
    assert all(f["path"].endswith("site-packages/torch/bin/test_jit") for f in failing)
    assert {f["detail"].split()[0] for f in failing} <= set(TEST_ONLY_LIBS)
    assert compared.returncode == 1


def test_baseline_wheel_still_shows_a_runpath_the_wheel_has_clean(built, torch_wheel):
    result = _cli("--json", "--baseline", str(torch_wheel), str(built.absolute_runpath))
    assert result.returncode == 1, result.stderr
    failing = [f for f in json.loads(result.stdout) if f["status"] == "fail"]
    assert [(f["check"], f["path"].split(":", 1)[1]) for f in failing] == [
        ("elf.runpath", "lib/libc10.so")
    ]
    assert HOST_PLACEHOLDER in failing[0]["detail"]


def test_report_counts_overflowing_rows_inside_their_check(built):
    text = _cli("--only", "elf.runpath", str(built.upstream_tests)).stdout.splitlines()
    header = next(i for i, line in enumerate(text) if line.startswith("elf.runpath: "))
    more = next(i for i, line in enumerate(text) if "more fail (--json lists all)" in line)
    assert header == 0 and more == header + 21
