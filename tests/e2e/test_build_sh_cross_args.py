"""What build.sh hands CMake on a cross build: the build machine's protoc, the target's SOABI.

build.sh's configure_cmake_args runs here on its own (the function and the helpers it calls,
cut out of recipe/build.sh), with conda-build's variables for a linux-64 -> linux-aarch64
build. A CMake project then shows why `-DProtobuf_PROTOC_EXECUTABLE` alone is not enough:
the code generation runs the `protobuf::protoc` target that the host's protobuf CMake package
imports, and `find_package` ignores the variable for it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers.build_scripts import build_sh_text

RECIPE = Path(__file__).resolve().parents[2] / "recipe"


def shell_function(name: str) -> str:
    text = build_sh_text()
    match = re.search(rf"^{name}\(\) \{{\n.*?^\}}\n", text, flags=re.S | re.M)
    assert match, f"recipe/build.sh has no {name}()"
    return match.group(0)


def cmake_args(tmp_path: Path, build_platform: str, target_platform: str) -> list[str]:
    build_prefix = tmp_path / "build_env"
    (build_prefix / "bin").mkdir(parents=True, exist_ok=True)
    protoc = build_prefix / "bin" / "protoc"
    protoc.write_text("#!/bin/sh\n")
    protoc.chmod(0o755)
    script = (
        'RECIPE_FILE=recipe/build.sh\ndie() { echo "error: $*" >&2; exit 2; }\n'
        + shell_function("configure_cmake_args")
        + shell_function("target_soabi")
        + shell_function("target_include_dir")
        + 'configure_cmake_args\nprintf "%s\\n" "${CMAKE_ARGS}"\n'
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHON": sys.executable,
        "PREFIX": str(tmp_path / "h_env"),
        "SRC_DIR": str(tmp_path / "work"),
        "BUILD_DIR": str(tmp_path / "work" / "build"),
        "BUILD_PREFIX": str(build_prefix),
        "build_platform": build_platform,
        "target_platform": target_platform,
        "CMAKE_ARGS": f"-DCMAKE_INSTALL_PREFIX={tmp_path / 'h_env'} -DCMAKE_BUILD_TYPE=Release",
    }
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_a_cross_build_runs_the_build_machines_protoc_for_code_generation(tmp_path: Path):
    args = cmake_args(tmp_path, "linux-64", "linux-aarch64")
    protoc = tmp_path / "build_env" / "bin" / "protoc"
    assert f"-DCAFFE2_CUSTOM_PROTOC_EXECUTABLE={protoc}" in args
    assert f"-DProtobuf_PROTOC_EXECUTABLE={protoc}" in args


def test_a_cross_build_names_the_targets_soabi_for_torch_c(tmp_path: Path):
    # conda's cross-python answers sysconfig for the target; this interpreter stands in.
    args = cmake_args(tmp_path, "linux-64", "linux-aarch64")
    assert f"-DTORCH_PYTHON_SOABI={sysconfig.get_config_var('SOABI')}" in args


def test_a_cross_build_names_the_targets_headers_for_findpython(tmp_path: Path):
    # Cross FindPython finds headers through PATH's config tool, not the interpreter
    # (tests/e2e/test_cmake_cache_cross.py shows it on real CMake); name the target's.
    args = cmake_args(tmp_path, "linux-64", "linux-aarch64")
    assert f"-DPython_INCLUDE_DIR={sysconfig.get_paths()['include']}" in args


def test_a_native_build_leaves_the_soabi_and_headers_to_findpython(tmp_path: Path):
    args = cmake_args(tmp_path, "linux-64", "linux-64")
    assert not [a for a in args if a.startswith("-DTORCH_PYTHON_SOABI=")]
    assert not [a for a in args if a.startswith("-DPython_INCLUDE_DIR=")]
    assert not [a for a in args if a.startswith("-DCMAKE_INSTALL_PREFIX=")]


# What find_package(Protobuf) leaves behind from the host's protobuf-config.cmake: an imported
# protoc built for the target machine (here: a program that cannot run on this one), and
# PyTorch's choice in cmake/ProtoBuf.cmake (as its upstream copies have it): the custom protoc
# when that file exists, else the imported target.
PROTOC_PROJECT = """
cmake_minimum_required(VERSION 3.20)
project(protos NONE)
add_executable(protobuf::protoc IMPORTED)
set_target_properties(protobuf::protoc PROPERTIES IMPORTED_LOCATION "${HOST_PROTOC}")
if(EXISTS "${CAFFE2_CUSTOM_PROTOC_EXECUTABLE}")
  set(CAFFE2_PROTOC_EXECUTABLE ${CAFFE2_CUSTOM_PROTOC_EXECUTABLE})
else()
  set(CAFFE2_PROTOC_EXECUTABLE protobuf::protoc)
endif()
add_custom_command(OUTPUT caffe2.pb.cc COMMAND ${CAFFE2_PROTOC_EXECUTABLE} --cpp_out=. caffe2.proto)
add_custom_target(protos ALL DEPENDS caffe2.pb.cc)
"""


@pytest.mark.slow
@pytest.mark.parametrize("custom", [False, True], ids=["protobuf-only", "with-caffe2-custom"])
def test_only_the_custom_protoc_variable_reaches_the_code_generation(tmp_path: Path, custom):
    project = tmp_path / "protos"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(PROTOC_PROJECT)
    host_protoc = tmp_path / "h_env" / "bin" / "protoc"
    host_protoc.parent.mkdir(parents=True)
    host_protoc.write_text(
        "#!/bin/sh\necho 'cannot execute binary file: Exec format error' >&2\nexit 126\n"
    )
    host_protoc.chmod(0o755)
    build_protoc = tmp_path / "build_env" / "bin" / "protoc"
    build_protoc.parent.mkdir(parents=True)
    build_protoc.write_text("#!/bin/sh\ntouch caffe2.pb.cc\n")
    build_protoc.chmod(0o755)
    args = [f"-DHOST_PROTOC={host_protoc}", f"-DProtobuf_PROTOC_EXECUTABLE={build_protoc}"]
    if custom:
        args.append(f"-DCAFFE2_CUSTOM_PROTOC_EXECUTABLE={build_protoc}")
    build = tmp_path / "build"
    subprocess.run(
        ["cmake", "-S", str(project), "-B", str(build), *args], check=True, capture_output=True
    )
    built = subprocess.run(
        ["cmake", "--build", str(build)], capture_output=True, text=True, check=False
    )
    if custom:
        assert built.returncode == 0, built.stdout + built.stderr
    else:
        assert built.returncode != 0 and "Exec format error" in built.stdout + built.stderr
