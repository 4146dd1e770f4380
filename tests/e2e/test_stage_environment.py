"""recipe/stage_environment.py: which environment differences would rewrite the cache the
compile stage configured (PyTorch's cmake/EnvVarForwarding.cmake rule)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.recipe_helpers import recipe_module

HERE = Path(__file__).resolve().parents[2] / "tests"
SCRIPT = HERE.parent / "recipe" / "stage_environment.py"
stage = recipe_module("stage_environment")
PLACES = {"PREFIX": "/bld/h_env", "BUILD_PREFIX": "/bld/build_env", "SRC_DIR": "/bld/work"}


def test_the_forwarding_rule_selects_prefixes_suffixes_and_named_variables() -> None:
    env = {
        "USE_CUDA": "1",
        "BUILD_TEST": "0",
        "CMAKE_BUILD_TYPE": "Release",
        "HAVE_STD_REGEX_EXITCODE": "0",
        "TORCH_CUDA_ARCH_LIST": "8.0",
        "FLASH_ATTENTION_MAX_JOBS": "2",
        "MAGMA_HOME": "/x",
        "MAX_JOBS": "2",
        "PATH": "/bin",
    }
    assert set(stage.forwarded(env)) == {
        "USE_CUDA",
        "BUILD_TEST",
        "CMAKE_BUILD_TYPE",
        "HAVE_STD_REGEX_EXITCODE",
        "TORCH_CUDA_ARCH_LIST",
        "FLASH_ATTENTION_MAX_JOBS",
    }


def test_each_stages_own_directories_compare_equal() -> None:
    compile_env = {**PLACES, "CMAKE_PREFIX_PATH": "/bld/h_env:/bld/build_env/x"}
    other = {"PREFIX": "/o/h_env", "BUILD_PREFIX": "/o/build_env", "SRC_DIR": "/o/work"}
    later = {**other, "CMAKE_PREFIX_PATH": "/o/h_env:/o/build_env/x"}
    assert stage.differences(stage.forwarded(compile_env), stage.forwarded(later)) == []


def test_windows_locations_compare_equal_in_either_slash_direction() -> None:
    # bld.bat hands CMake its CUDA paths with forward slashes (-DCUDAToolkit_ROOT_DIR=...).
    def stage_env(prefix: str) -> dict[str, str]:
        forward = prefix.replace("\\", "/")
        return {
            "PREFIX": prefix,
            "CMAKE_ARGS": f"-DCUDAToolkit_ROOT_DIR={forward}/Library -DX={prefix}\\Library",
        }

    recorded = stage.forwarded(stage_env("C:\\bld\\h_env_1"))
    assert recorded["CMAKE_ARGS"] == "-DCUDAToolkit_ROOT_DIR=$PREFIX/Library -DX=$PREFIX\\Library"
    assert stage.differences(recorded, stage.forwarded(stage_env("C:\\bld\\h_env_2"))) == []


def test_a_changed_option_and_a_new_one_are_differences_an_unset_one_is_not() -> None:
    recorded = stage.forwarded(
        {"USE_MKLDNN": "1", "USE_NUMA": "0", "CMAKE_C_COMPILER_LAUNCHER": "ccache"}
    )
    now = stage.forwarded({"USE_MKLDNN": "0", "USE_NUMA": "0", "USE_DISTRIBUTED": "1"})
    assert stage.differences(recorded, now) == [
        "USE_DISTRIBUTED='1' is set here but was not in the compile stage",
        "USE_MKLDNN='0' here but '1' in the compile stage",
    ]


def test_cmake_args_differ_only_by_the_per_python_entries_of_a_cross_build() -> None:
    first = {"CMAKE_ARGS": "-DCMAKE_AR=ar -DTORCH_PYTHON_SOABI=cpython-311 -DPython_INCLUDE_DIR=/a"}
    second = {
        "CMAKE_ARGS": "-DCMAKE_AR=ar -DTORCH_PYTHON_SOABI=cpython-312 -DPython_INCLUDE_DIR=/b"
    }
    assert stage.differences(stage.forwarded(first), stage.forwarded(second)) == []
    third = {"CMAKE_ARGS": "-DCMAKE_AR=gcc-ar"}
    assert stage.differences(stage.forwarded(first), stage.forwarded(third)) != []


def run(*args: object, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, SCRIPT, *map(str, args)], env=env, capture_output=True, text=True
    )


def test_compare_against_the_record_exits_1_with_one_error_line(tmp_path: Path) -> None:
    record = tmp_path / "_stage" / "forwarded-environment.json"
    assert run("record", record, env={"USE_CUDA": "1", **PLACES}).returncode == 0
    same = run("compare", record, "--stage", "pytorch", env={"USE_CUDA": "1", **PLACES})
    assert (same.returncode, same.stderr) == (0, "")
    changed = run("compare", record, "--stage", "pytorch", env={"USE_CUDA": "0", **PLACES})
    assert changed.returncode == 1
    [line] = changed.stderr.splitlines()
    assert line.startswith("stage_environment.py: error: the pytorch stage's environment")
    assert "USE_CUDA='0' here but '1' in the compile stage" in line


def test_compare_ends_its_error_line_with_what_to_do_when_told(tmp_path: Path) -> None:
    record = tmp_path / "forwarded-environment.json"
    run("record", record, env={"USE_CUDA": "1"})
    fix = "set the same in every stage (the preamble of recipe\\bld.bat)"
    changed = run("compare", record, "--stage", "pytorch", "--fix", fix, env={"USE_CUDA": "0"})
    [line] = changed.stderr.splitlines()
    assert line.endswith(f"in the compile stage; {fix}")


def test_compare_without_a_record_is_bad_input(tmp_path: Path) -> None:
    missing = tmp_path / "forwarded-environment.json"
    result = run("compare", missing, "--stage", "pytorch", env={})
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert str(missing) in line and "compile stage" in line


MINIATURE_FORWARDING = (
    Path(__file__).resolve().parents[2]
    / "tests"
    / "fixtures"
    / "minitorch"
    / "project"
    / "cmake"
    / "EnvVarForwarding.cmake"
)


def _release_adding(tmp_path: Path, prefix: str, name: str) -> Path:
    """A miniature release whose forwarding module adds ``prefix`` to its expression and
    ``name`` to its passthrough list, as a new PyTorch release may; its source folder."""
    text = MINIATURE_FORWARDING.read_text()
    assert "^(BUILD_|USE_|CMAKE_)" in text and "set(_ENV_PASSTHROUGH BLAS" in text
    text = text.replace("^(BUILD_|USE_|CMAKE_)", f"^(BUILD_|USE_|CMAKE_|{prefix})")
    text = text.replace("set(_ENV_PASSTHROUGH BLAS", f"set(_ENV_PASSTHROUGH {name} BLAS")
    (tmp_path / "src" / "cmake").mkdir(parents=True)
    (tmp_path / "src" / "cmake" / "EnvVarForwarding.cmake").write_text(text)
    return tmp_path / "src"


def test_the_miniatures_module_states_its_own_rule() -> None:
    rule = stage.rule_from_text(MINIATURE_FORWARDING.read_text(), "miniature")
    assert rule.names == {
        "BLAS",
        "INSTALL_TEST",
        "TORCH_CUDA_ARCH_LIST",
    }
    assert rule.selects("USE_CUDA") and not rule.selects("MAGMA_HOME")


def test_upstreams_lists_and_aliases_are_read_environment_side_first() -> None:
    text = """
set(_ENV_ALIASES "CUDNN_LIB_DIR=CUDNN_LIBRARY")
set(_ENV_PASSTHROUGH
  BLAS  # a comment
  TORCH_CUDA_ARCH_LIST
)
foreach(_alias IN LISTS _ENV_ALIASES)
endforeach()
foreach(_var IN LISTS _ENV_PASSTHROUGH)
endforeach()
set(_envfwd_script [==[
select = re.compile(r"^(BUILD_|USE_|CMAKE_)|(EXITCODE|EXITCODE__TRYRUN_OUTPUT)$")
]==])
"""
    rule = stage.rule_from_text(text, "upstream")
    assert rule.names == {"CUDNN_LIB_DIR", "BLAS", "TORCH_CUDA_ARCH_LIST"}
    assert rule.selects("HAVE_STD_REGEX_EXITCODE")


def test_a_prefix_and_a_name_a_new_release_forwards_are_checked(tmp_path: Path) -> None:
    src = _release_adding(tmp_path, "XPU_", "AOTRITON_INSTALL_DIR")
    record = tmp_path / "forwarded-environment.json"
    before = {"SRC_DIR": str(src), "XPU_TARGETS": "a", "AOTRITON_INSTALL_DIR": "/x"}
    assert run("record", record, env=before).returncode == 0
    after = {"SRC_DIR": str(src), "XPU_TARGETS": "b", "AOTRITON_INSTALL_DIR": "/y"}
    changed = run("compare", record, "--stage", "pytorch", env=after)
    assert changed.returncode == 1, changed.stderr
    assert "XPU_TARGETS='b' here but 'a'" in changed.stderr
    assert "AOTRITON_INSTALL_DIR='/y' here but '/x'" in changed.stderr


def test_a_source_without_the_module_is_held_to_the_hand_list(tmp_path: Path) -> None:
    record = tmp_path / "forwarded-environment.json"
    run("record", record, env={"SRC_DIR": str(tmp_path), "XPU_TARGETS": "a"})
    same = run(
        "compare", record, "--stage", "pytorch", env={"SRC_DIR": str(tmp_path), "XPU_TARGETS": "b"}
    )
    assert same.returncode == 0, same.stderr


def test_a_module_whose_rule_cannot_be_read_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake" / "EnvVarForwarding.cmake").write_text("set(X 1)\n")
    result = run("record", tmp_path / "r.json", env={"SRC_DIR": str(tmp_path)})
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("stage_environment.py: error: ") and "EnvVarForwarding.cmake" in line


def test_a_module_that_selects_with_re_match_of_the_name_states_its_rule() -> None:
    # The bump fixture's 2.15-like module spells its selection re.match(r"...", name), the
    # form tools/bump/knobs.py reads through this script as well.
    text = (
        HERE / "fixtures" / "bump" / "release_215" / "cmake" / "EnvVarForwarding.cmake"
    ).read_text()
    rule = stage.rule_from_text(text, "release_215")
    assert rule.names == {"FLASH_ATTENTION_MAX_JOBS", "TORCH_CUDA_ARCH_LIST", "MAGMA_HOME"}
    assert rule.selects("USE_CUDA") and not rule.selects("MAX_JOBS")
