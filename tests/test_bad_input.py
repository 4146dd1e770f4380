"""Bad input ends in one clear line and an exit code, never a traceback or a silent success.

Each test runs a command the way a user types it (``python -m tools ...`` through its entry
point, in process) on one damaged or mistaken input, and checks the exit status and message.
"""

from __future__ import annotations

import io
import json
import random
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conda_package_streaming.create import conda_builder
from fixtures import feedstock_matrix

from tools.__main__ import main

REPO = Path(__file__).resolve().parent.parent
# The config these tests hand to the commands, read from .ci_support: a linux-64 CPU one
# where the matrix has one (the fastest to render), else a linux-64 one, else any.
_LINUX = feedstock_matrix.prefer(
    {"platform": "linux-64", "cuda": False}, {"platform": "linux-64"}, {}
)
LINUX_CONFIG = _LINUX.name if _LINUX else "no-config-in-ci-support"
# A config of another platform than linux-64 (conda-forge's osx-arm64), where there is one.
OTHER_PLATFORM = next((c for c in feedstock_matrix.configs() if c.platform != "linux-64"), None)


def run_tool(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def incompressible_text(size: int, seed: int = 1) -> bytes:
    """Text that compresses, but not to nothing, so damage lands inside the compressed data."""
    rnd = random.Random(seed)
    return "".join(rnd.choice("abcdefgh \n") for _ in range(size)).encode()


def tiny_conda(out: Path, name: str, build: str, members: dict[str, bytes], subdir="linux-64"):
    stem = f"{name}-2.13.0-{build}"
    with conda_builder(stem, out, compression_level=1) as tar:
        index = {
            "name": name,
            "version": "2.13.0",
            "build": build,
            "build_number": 0,
            "subdir": subdir,
            "depends": [],
        }
        for path, data in {"info/index.json": json.dumps(index).encode(), **members}.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out / f"{stem}.conda"


def zero_middle(path: Path, size: int = 4096) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + size] = bytes(size)
    path.write_bytes(bytes(data))


# ------------------------------------------------------------------ check: damaged archives


def test_check_of_a_wheel_with_damaged_zip_data_is_one_line_and_exit_2(tmp_path, capsys):
    wheel = tmp_path / "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("torch/a.txt", incompressible_text(200_000))
        archive.writestr("torch/b.txt", incompressible_text(200_000, seed=2))
    zero_middle(wheel)
    code, _, err = run_tool(capsys, "check", str(wheel))
    assert code == 2
    assert "not a readable wheel" in one_error_line(err)


def test_check_of_a_conda_with_a_damaged_zstd_payload_is_one_line_and_exit_2(tmp_path, capsys):
    pkg = tiny_conda(
        tmp_path,
        "libtorch",
        "cpu_generic_h1234567_0",
        {"lib/a.txt": incompressible_text(200_000), "lib/b.txt": incompressible_text(200_000, 2)},
    )
    zero_middle(pkg)
    code, _, err = run_tool(capsys, "check", str(pkg))
    assert code == 2
    assert "not a readable conda package" in one_error_line(err)


# ------------------------------------------------------------------ check: against a config


def _linux_elf_package(tmp_path: Path, name: str) -> Path:
    return tiny_conda(
        tmp_path,
        name,
        "cpu_generic_h1234567_0",
        {"lib/libx.so": Path(sys.executable).resolve().read_bytes()},
    )


def test_check_refuses_a_linux_package_against_another_platforms_config(tmp_path, capsys):
    if OTHER_PLATFORM is None:
        pytest.skip(".ci_support holds no config for another platform than linux-64")
    pkg = _linux_elf_package(tmp_path, "libtorch")
    code, out, err = run_tool(capsys, "check", str(pkg), "--config", OTHER_PLATFORM.name)
    assert code == 2
    line = one_error_line(err)
    assert "built for linux-64" in line and f"builds {OTHER_PLATFORM.platform}" in line
    assert "GLIBC_12" not in out


def test_check_fails_a_package_that_is_not_an_output_of_the_config(tmp_path, capsys):
    pkg = _linux_elf_package(tmp_path, "not-torch")
    code, out, _ = run_tool(capsys, "check", "--json", str(pkg), "--config", LINUX_CONFIG)
    assert code == 1
    failures = [f for f in json.loads(out) if f["check"] == "metadata.output"]
    assert [f["status"] for f in failures] == ["fail"]
    assert "not-torch is not an output" in failures[0]["detail"]


# ------------------------------------------------------------------ check: installed prefixes


def _prefix(tmp_path: Path, name: str, files: list[str]) -> Path:
    prefix = tmp_path / "env"
    (prefix / "conda-meta").mkdir(parents=True)
    record = {
        "name": name,
        "version": "2.13.0",
        "build": "cpu_generic_h1234567_0",
        "subdir": "linux-64",
        "depends": [],
        "files": files,
    }
    (prefix / "conda-meta" / f"{name}-2.13.0-cpu_generic_h1234567_0.json").write_text(
        json.dumps(record)
    )
    return prefix


def test_check_of_a_prefix_missing_the_files_its_record_lists_fails(tmp_path, capsys):
    prefix = _prefix(tmp_path, "libtorch", ["lib/libtorch.so", "lib/libc10.so"])
    code, out, _ = run_tool(capsys, "check", "--json", str(prefix))
    assert code == 1
    failures = [f for f in json.loads(out) if f["status"] == "fail"]
    assert [f["check"] for f in failures] == ["prefix.files"]
    assert "2 of 2 files" in failures[0]["detail"]


def test_check_of_a_prefix_without_this_feedstocks_packages_is_exit_2(tmp_path, capsys):
    prefix = _prefix(tmp_path, "zlib", [])
    code, _, err = run_tool(capsys, "check", str(prefix))
    assert code == 2
    assert "nothing to check" in one_error_line(err)


# ------------------------------------------------------------------ drift, matrix: ignored options


def test_drift_with_an_output_no_configuration_builds_is_exit_2(tmp_path, capsys):
    wheel = tmp_path / "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "torch-2.13.0.dist-info/METADATA",
            "Metadata-Version: 2.4\nName: torch\nVersion: 2.13.0\nRequires-Dist: sympy>=1.13.3\n",
        )
    code, out, err = run_tool(
        capsys,
        "drift",
        "--wheel",
        str(wheel),
        "--offline",
        "--output",
        "nonexist",
        "--config",
        LINUX_CONFIG,
    )
    assert code == 2
    assert "--output nonexist: no configuration builds" in one_error_line(err)
    assert out == ""


def test_matrix_diff_without_check_is_refused(capsys):
    code, out, err = run_tool(capsys, "matrix", "--diff")
    assert code == 2
    assert "--check --diff" in one_error_line(err)
    assert out == ""


# ------------------------------------------------------------------ emulate: linking stays inside


def conda_with_links(
    out: Path, name: str, files: dict[str, bytes], links: dict[str, str], paths: list[str]
) -> Path:
    """A linux-aarch64 .conda whose paths.json lists ``paths`` (which may lie about members)."""
    stem = f"{name}-1.0-0"
    index = {"name": name, "version": "1.0", "build": "0", "subdir": "linux-aarch64"}
    paths_json = {"paths": [{"_path": p, "path_type": "hardlink"} for p in paths]}
    with conda_builder(stem, out, compression_level=1) as tar:
        for member, data in {
            "info/index.json": json.dumps(index).encode(),
            "info/paths.json": json.dumps(paths_json).encode(),
            **files,
        }.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for member, target in links.items():
            info = tarfile.TarInfo(member)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return out / f"{stem}.conda"


def link_into(tmp_path: Path, package: Path) -> Path:
    from pathlib import PurePosixPath

    from tools.emulate import install

    prefix = tmp_path / "rootfs" / "opt" / "env" / "prefix"
    install.link_conda_package(
        package,
        prefix,
        PurePosixPath("/opt/env/prefix"),
        tmp_path / "rootfs" / "opt" / "env" / "pkgs",
        python="3.11",
    )
    return prefix


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.mark.parametrize("where", ["absolute", "dotdot"])
def test_emulate_refuses_a_paths_json_entry_outside_the_prefix(tmp_path, where):
    from tools.foundation.errors import UserError

    outside = tmp_path / "host" / "pwned"
    entry = str(outside) if where == "absolute" else "../../../../host/pwned"
    package = conda_with_links(tmp_path, "evil", {"lib/ok.txt": b"ok"}, {}, ["lib/ok.txt", entry])
    # What the entry names from the unpacked package's side exists (inside the rootfs), so
    # following the entry would copy it out of the rootfs.
    (tmp_path / "rootfs" / "host").mkdir(parents=True)
    (tmp_path / "rootfs" / "host" / "pwned").write_text("x")
    with pytest.raises(UserError, match=r"evil-1\.0-0\.conda: refused"):
        link_into(tmp_path, package)
    assert not outside.exists()
    assert not (tmp_path / "host").exists()


def test_emulate_refuses_a_member_linking_out_of_the_package(tmp_path):
    from tools.foundation.errors import UserError

    package = conda_with_links(
        tmp_path, "evil", {}, {"lib": "../../../../host"}, ["lib", "lib/pwned"]
    )
    (tmp_path / "host").mkdir()
    with pytest.raises(UserError, match=r"refused, symlink to '\.\./\.\./\.\./\.\./host' escapes"):
        link_into(tmp_path, package)
    assert files_under(tmp_path / "host") == set()


def test_emulate_refuses_a_write_through_a_link_an_earlier_package_placed(tmp_path):
    """Each package alone stays inside; together ``d -> .`` and ``d/up -> ..`` climb out."""
    from tools.foundation.errors import UserError

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = conda_with_links(tmp_path / "a", "first", {}, {"d": "."}, ["d"])
    second = conda_with_links(
        tmp_path / "b", "second", {"up/pwned": b"x"}, {"d/up": ".."}, ["d/up", "up/pwned"]
    )
    prefix = link_into(tmp_path, first)
    with pytest.raises(UserError, match=r"second-1\.0-0\.conda: refused"):
        link_into(tmp_path, second)
    assert files_under(tmp_path / "rootfs" / "opt" / "env") <= {"prefix", "prefix/d", "pkgs"}
    assert (prefix / "d").is_symlink()


# ------------------------------------------------------------------ build-locally.py


@pytest.fixture
def feedstock(tmp_path):
    from test_build_locally_e2e import Feedstock

    return Feedstock(tmp_path)


def _engine_that_prints(tmp_path: Path, text: str) -> Path:
    """A `docker` whose `info` fails printing ``text``, first on PATH."""
    bin_dir = tmp_path / "leaky-bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(f"#!/bin/sh\necho 'permission denied: {text}' >&2\nexit 1\n")
    docker.chmod(0o755)
    return bin_dir


def test_build_locally_never_prints_a_token_a_failing_engine_printed(feedstock, tmp_path):
    from test_build_locally_e2e import CPU, TOKEN

    github = "ghp_" + "A1b2C3d4" * 5
    bin_dir = _engine_that_prints(tmp_path, f"{TOKEN} {github}")
    path = f"{bin_dir}:{feedstock.env['PATH']}"
    run = feedstock.run(CPU, "--engine", "docker", BINSTAR_TOKEN=TOKEN, PATH=path)
    assert run.returncode == 2
    assert "permission denied: *** ***" in run.stderr
    assert TOKEN not in run.stderr + run.stdout and github not in run.stderr + run.stdout


def test_the_engine_line_never_prints_a_token_a_failing_engine_printed(feedstock, tmp_path):
    # Without --engine the run goes on to the embedded engine, saying why docker did not do.
    from fixtures.e2e_feedstock import without_engines
    from test_build_locally_e2e import CPU, TOKEN, V1_RECIPE

    (feedstock.root / "recipe" / "recipe-v1.yaml").write_text(V1_RECIPE)
    github = "ghp_" + "A1b2C3d4" * 5
    bin_dir = _engine_that_prints(tmp_path, f"{TOKEN} {github}")
    path = f"{bin_dir}:{without_engines(feedstock.env['PATH'])}"
    run = feedstock.run(CPU, "--dry-run", BINSTAR_TOKEN=TOKEN, PATH=path)
    assert run.returncode == 0, run.stderr
    assert "permission denied: *** ***" in run.stdout.splitlines()[0]
    assert TOKEN not in run.stderr + run.stdout and github not in run.stderr + run.stdout


def test_a_failed_commands_error_never_carries_a_token(monkeypatch):
    from tools.foundation.errors import CommandError
    from tools.foundation.proc import call

    monkeypatch.setenv("ANACONDA_API_TOKEN", "secret-value-42")
    with pytest.raises(CommandError) as excinfo:
        call(
            sys.executable,
            "-c",
            "import sys; sys.exit('denied: secret-value-42')",
            capture=True,
            quiet=True,
        )
    assert "secret-value-42" not in str(excinfo.value)
    assert "denied: ***" in str(excinfo.value)


def test_build_locally_refuses_a_second_run_on_the_same_build_artifacts(feedstock):
    import signal

    from test_build_locally_e2e import ARM, CPU, INTERRUPT_SAFETY_NET

    first = feedstock.start(CPU, FAKE_BUILD_HANG=CPU)
    try:
        log = feedstock.artifacts / f"{CPU}-log.txt"
        feedstock.wait_until(
            first,
            lambda: log.exists() and "compiling forever" in log.read_text(),
            "the first build never reached its hanging step",
        )
        second, dry = feedstock.run(ARM), feedstock.run(ARM, "--dry-run")
        assert second.returncode == 2
        assert f"another build-locally run (pid {first.pid})" in second.stderr
        assert (dry.returncode, dry.stderr) == (2, second.stderr)  # refused as the run is
        assert not feedstock.marker(ARM).exists() and not feedstock.builds()[1:]
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=INTERRUPT_SAFETY_NET)


def test_prune_keeps_the_work_folder_another_conda_build_made_meanwhile(feedstock):
    from test_build_locally_e2e import CPU

    neighbour = "zlib_1800000000000"
    run = feedstock.run(CPU, "--prune", FAKE_BUILD_NEIGHBOUR=neighbour)
    assert run.returncode == 0, run.stderr
    assert (feedstock.artifacts / neighbour).is_dir()
    assert not list(feedstock.artifacts.glob("libtorch_*"))


def test_cfep3_request_copies_release_candidates_to_their_label(feedstock):
    from test_build_locally_e2e import CPU

    config = feedstock.root / ".ci_support" / f"{CPU}.yaml"
    config.write_text(config.read_text() + "channel_targets:\n- conda-forge pytorch_rc\n")
    assert feedstock.run(CPU).returncode == 0
    run = feedstock.review("request", "jdoe/label/cfep03")
    assert run.returncode == 0, run.stderr
    assert "\nto_anaconda_org_label: pytorch_rc\n" in run.stdout


def test_cfep3_request_with_an_empty_channel_names_the_option(feedstock):
    run = feedstock.review("request", "")
    assert run.returncode == 2
    assert "review request ''" in one_error_line(run.stderr)


@pytest.mark.parametrize("value", ["rm", "/bin/rm", "docker-compose"])
def test_build_locally_refuses_a_docker_executable_that_is_no_engine(feedstock, value):
    from test_build_locally_e2e import CPU

    run = feedstock.run(CPU, DOCKER_EXECUTABLE=value)
    assert run.returncode == 2
    assert f"DOCKER_EXECUTABLE={value}: not docker or podman" in one_error_line(run.stderr)
    assert feedstock.calls() == []


def test_all_dry_run_lists_configs_this_machine_cannot_build_as_skipped(feedstock):
    ci = feedstock.root / ".ci_support"
    (ci / "win_64_cuda_compiler_versionNone.yaml").write_text("target_platform:\n- win-64\n")
    (ci / "osx_arm64_cuda_compiler_versionNone.yaml").write_text("target_platform:\n- osx-arm64\n")
    run = feedstock.run("--all", "--dry-run")
    assert run.returncode == 0, run.stderr
    assert "dry run: 3 config(s)" in run.stdout
    lines = run.stdout.splitlines()
    [win] = [line for line in lines if line.startswith("[-] win-64 ")]  # by label
    [osx] = [line for line in lines if line.startswith("[-] osx-arm64 ")]
    assert "would skip: cannot build on this machine" in win and "Windows" in win
    assert "OSX_SDK_DIR" in osx


def test_all_builds_what_this_machine_can_and_summarises_the_rest_as_skipped(feedstock):
    from test_build_locally_e2e import CPU

    ci = feedstock.root / ".ci_support"
    (ci / "win_64_cuda_compiler_versionNone.yaml").write_text("target_platform:\n- win-64\n")
    run = feedstock.run("--all")
    assert run.returncode == 0, run.stderr
    configs = feedstock.summary()["configs"]
    assert configs["win_64_cuda_compiler_versionNone"]["status"] == "skipped"
    assert "Windows" in configs["win_64_cuda_compiler_versionNone"]["note"]
    assert configs["win_64_cuda_compiler_versionNone"]["reason"] == "cannot build here (Windows)"
    assert configs[CPU]["status"] == "done"


# ------------------------------------------------------------------ damaged YAML


@pytest.fixture
def feedstock_copy(tmp_path, monkeypatch):
    """recipe/, .ci_support/ and conda-forge.yml of this repository, to damage; cwd inside it."""
    import shutil

    root = tmp_path / "feedstock"
    shutil.copytree(REPO / "recipe", root / "recipe")
    shutil.copytree(REPO / ".ci_support", root / ".ci_support")
    shutil.copy2(REPO / "conda-forge.yml", root / "conda-forge.yml")
    monkeypatch.chdir(root)
    return root


def test_render_of_a_variant_file_that_is_not_yaml_names_the_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("target_platform:\n- linux-64\na: [b\n")
    code, _, err = run_tool(capsys, "render", str(bad))
    assert code == 2
    assert f"{bad}:4: not valid YAML" in one_error_line(err)


def _conflicted(root: Path) -> Path:
    config = root / ".ci_support" / f"{LINUX_CONFIG}.yaml"
    lines = config.read_text().splitlines(keepends=True)
    lines[2:2] = ["<<<<<<< HEAD\n"]
    lines[5:5] = ["=======\n", "c_stdlib_version:\n", "- '2.28'\n", ">>>>>>> cuda130\n"]
    config.write_text("".join(lines))
    return config


@pytest.mark.parametrize(
    "argv",
    [
        ("render", LINUX_CONFIG),
        ("explain",),
        ("check", "PACKAGE", "--config", LINUX_CONFIG),
        ("drift", "--wheel", "WHEEL", "--offline"),
    ],
    ids=["render", "explain", "check", "drift"],
)
def test_a_ci_support_file_with_merge_conflict_markers_is_one_line(
    feedstock_copy, tmp_path, capsys, argv
):
    config = _conflicted(feedstock_copy)
    package = tiny_conda(tmp_path, "libtorch", "cpu_generic_h1234567_0", {"lib/a.txt": b"a"})
    wheel = tmp_path / "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch-2.13.0.dist-info/METADATA", "Name: torch\nVersion: 2.13.0\n")
    argv = [str(package) if a == "PACKAGE" else str(wheel) if a == "WHEEL" else a for a in argv]
    code, _, err = run_tool(capsys, *argv)
    assert code == 2
    assert f"{config}:3: merge-conflict marker" in one_error_line(err)


# ------------------------------------------------------------------ the recipe itself


def _use_undefined_name(root: Path) -> None:
    meta = root / "recipe" / "meta.yaml"
    text = meta.read_text()
    assert "_{{ blas_impl }}_h{{ PKG_HASH }}" in text
    meta.write_text(
        text.replace("_{{ blas_impl }}_h{{ PKG_HASH }}", "_{{ blas_implx }}_h{{ PKG_HASH }}")
    )


@pytest.mark.parametrize(
    "argv", [("render", LINUX_CONFIG), ("explain",)], ids=["render", "explain"]
)
def test_an_undefined_jinja_variable_is_an_error_as_in_conda_build(feedstock_copy, capsys, argv):
    _use_undefined_name(feedstock_copy)
    code, _, err = run_tool(capsys, *argv)
    assert code == 2
    line = one_error_line(err)
    assert "meta.yaml:" in line and "'blas_implx' is undefined" in line


def test_matrix_refuses_a_recipe_with_an_undefined_jinja_variable(
    feedstock_copy, capsys, pinning_dir
):
    _use_undefined_name(feedstock_copy)
    code, _, err = run_tool(capsys, "matrix", "--check", "--pinning", str(pinning_dir))
    assert code == 2
    assert "'blas_implx' is undefined" in one_error_line(err)


def test_an_undefined_name_in_a_recipe_skipped_here_is_no_error(tmp_path, capsys):
    """conda-build renders strictly only what it builds: a recipe skipped for this platform
    may use names only the other platforms define."""
    recipe = tmp_path / "recipe"
    recipe.mkdir()
    (recipe / "meta.yaml").write_text(
        "package:\n  name: onlywin\n  version: 1.0\n"
        "build:\n  skip: true  # [not win]\n  string: {{ vc_runtime }}_0\n"
    )
    variant = tmp_path / "linux.yaml"
    variant.write_text("target_platform:\n- linux-64\n")
    code, out, err = run_tool(capsys, "render", str(variant), "--recipe-dir", str(recipe))
    assert code == 0, err
    assert "onlywin" in out


def test_an_empty_meta_yaml_names_what_is_missing(tmp_path, capsys):
    recipe = tmp_path / "recipe"
    recipe.mkdir()
    (recipe / "meta.yaml").write_text("")
    code, out, err = run_tool(capsys, "render", LINUX_CONFIG, "--recipe-dir", str(recipe))
    assert code == 2
    assert "package/name missing" in one_error_line(err)
    assert out == ""


def test_matrix_refuses_a_zip_keys_group_naming_a_key_the_recipe_cbc_does_not_set(
    feedstock_copy, capsys, pinning_dir
):
    cbc = feedstock_copy / "recipe" / "conda_build_config.yaml"
    text = cbc.read_text()
    assert "zip_keys:\n  - - channel_targets\n    - is_rc\n" in text
    cbc.write_text(
        text.replace(
            "zip_keys:\n",
            "linalg_abi:\n  - '1'\n\nzip_keys:\n  - - linalg_abi\n    - c_stdlib\n",
        )
    )
    before = {p.name: p.read_bytes() for p in (feedstock_copy / ".ci_support").glob("*.yaml")}
    code, _, err = run_tool(capsys, "matrix", "--write", "--pinning", str(pinning_dir))
    assert code == 2
    line = one_error_line(err)
    assert f"{cbc}: zip_keys entry c_stdlib in group ['linalg_abi', 'c_stdlib']" in line
    assert "does not have any settings" in line
    after = {p.name: p.read_bytes() for p in (feedstock_copy / ".ci_support").glob("*.yaml")}
    assert after == before


def test_a_jinja_expression_failing_as_python_names_its_line(feedstock_copy, capsys):
    meta = feedstock_copy / "recipe" / "meta.yaml"
    lines = meta.read_text().splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines, 1) if line.startswith("package:"))
    lines.insert(number - 1, "{% set broken = 1 / 0 %}\n")
    meta.write_text("".join(lines))
    code, _, err = run_tool(capsys, "render", LINUX_CONFIG)
    assert code == 2
    line = one_error_line(err)
    assert f"meta.yaml:{number}: jinja2 evaluation failed: ZeroDivisionError" in line


def test_a_meta_yaml_that_is_not_utf8_is_one_line(feedstock_copy, capsys):
    meta = feedstock_copy / "recipe" / "meta.yaml"
    meta.write_bytes(meta.read_bytes().replace(b"package:", b"pack\xffage:", 1))
    code, _, err = run_tool(capsys, "render", LINUX_CONFIG)
    assert code == 2
    assert "meta.yaml: not UTF-8 text" in one_error_line(err)


def test_check_of_a_conda_whose_zip_names_an_unknown_version_is_exit_2(tmp_path, capsys):
    pkg = tiny_conda(tmp_path, "libtorch", "cpu_generic_h1234567_0", {"lib/a.txt": b"a"})
    data = bytearray(pkg.read_bytes())
    central = data.index(b"PK\x01\x02")  # the first central-directory entry
    data[central + 6 : central + 8] = (99).to_bytes(2, "little")  # "version needed": 9.9
    pkg.write_bytes(bytes(data))
    code, _, err = run_tool(capsys, "check", str(pkg))
    assert code == 2
    assert "not a readable conda package (zip file version 9.9)" in one_error_line(err)


def test_render_of_a_variant_file_naming_no_platform_is_one_line(tmp_path, capsys):
    bad = tmp_path / "odd.yaml"
    bad.write_text("target_platform:\n- 'False'\n")
    code, _, err = run_tool(capsys, "render", str(bad))
    assert code == 2
    assert "target_platform: 'False' is not a conda platform" in one_error_line(err)


def test_an_output_whose_build_section_is_not_a_mapping_is_one_line(tmp_path, capsys):
    recipe = tmp_path / "recipe"
    recipe.mkdir()
    (recipe / "meta.yaml").write_text(
        "package:\n  name: top\n  version: 1.0\noutputs:\n  - name: one\n    build: oops\n"
    )
    variant = tmp_path / "linux.yaml"
    variant.write_text("target_platform:\n- linux-64\n")
    code, _, err = run_tool(capsys, "render", str(variant), "--recipe-dir", str(recipe))
    assert code == 2
    assert "outputs item 1: the build section must be a mapping" in one_error_line(err)
