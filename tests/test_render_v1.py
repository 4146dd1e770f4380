"""render, explain, check --config and drift on a feedstock switched to rattler-build.

conda-forge.yml ``conda_build_tool: rattler-build`` makes the toolkit read ``recipe/recipe.yaml``
through py-rattler-build (tools/render/v1.py) instead of rendering meta.yaml itself.  The
fixture ``tests/fixtures/recipes/v1-staging`` is a miniature feedstock holding both a v1 recipe
with a staging output and its meta.yaml twin (a real feedstock may hold only one, lint R-051),
so each command runs on the same feedstock with either engine and the results are compared.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from fixtures import feedstock_matrix
from fixtures.cli import REPO
from fixtures.v1_staging import copy_feedstock, run_tools, switch_this_feedstock, tools_json

from tools.render.v1 import pin_spec

CUDA = "linux_64_cuda_compiler_version12.9"
WIN = "win_64_cuda_compiler_versionNone"
AARCH64 = "linux_aarch64_cuda_compiler_versionNone"


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    return copy_feedstock(tmp_path)


@pytest.fixture
def meta(tmp_path: Path) -> Path:
    return copy_feedstock(tmp_path, "conda-build")


def _without_hash(build_string: str) -> str:
    return re.sub(r"_h[0-9a-f]{7}_", "_h<hash>_", build_string)


# -- render ---------------------------------------------------------------------------------


def test_render_json_has_the_shape_meta_yaml_renders_have(v1: Path, meta: Path) -> None:
    ours = tools_json(v1, "render", CUDA)
    theirs = tools_json(meta, "render", CUDA)
    assert [sorted(o) for o in ours] == [sorted(theirs[0])] * len(ours)
    assert all(sorted(o["requirements"]) == sorted(theirs[0]["requirements"]) for o in ours)

    def identity(o: dict) -> tuple:
        return o["name"], o["version"], o["build_number"], o["subdir"], o["build_platform"]

    assert sorted(map(identity, ours)) == sorted(map(identity, theirs))
    assert sorted(_without_hash(o["build_string"]) for o in ours) == sorted(
        _without_hash(o["build_string"]) for o in theirs
    )


def test_requirements_carry_variant_pins_and_resolved_subpackage_pins(v1: Path) -> None:
    outputs = {(o["name"], o["variant"].get("python")): o for o in tools_json(v1, "render", CUDA)}
    libcore = outputs[("libcore", None)]
    pycore = outputs[("pycore", "3.13.* *_cp313")]
    exact = f"libcore ==1.4.2 {libcore['build_string']}"
    assert pycore["requirements"]["host"] == ["python 3.13.* *_cp313", exact]
    assert pycore["requirements"]["run"] == ["python", exact, "numpy >=1.26", "__cuda"]
    assert libcore["requirements"]["host"] == ["zlib 1.*"]  # bare name, variant zlib: 1
    assert libcore["run_exports"] == {"weak": ["libcore >=1.4.2,<1.5.0a0"]}


def test_build_string_hash_is_the_sha1_of_hash_input(v1: Path) -> None:
    for output in tools_json(v1, "render", CUDA):
        text = json.dumps(output["hash_input"], sort_keys=True)
        digest = hashlib.sha1(text.encode()).hexdigest()[:7]
        assert f"_h{digest}_" in output["build_string"], output["name"]


def test_staging_output_is_no_package_and_each_output_is_listed_once(v1: Path) -> None:
    names = [(o["name"], o["build_string"]) for o in tools_json(v1, "render", CUDA)]
    assert len(names) == len(set(names)) == 6
    assert "core-build" not in {name for name, _ in names}


def test_test_scripts_read_as_rattler_build_writes_them(v1: Path) -> None:
    libcore = next(o for o in tools_json(v1, "render", CUDA) if o["name"] == "libcore")
    assert libcore["tests"]["commands"] == [
        'test -f "$PREFIX/lib/libcore.so"',
        "echo libcore 1.4.2 for cuda129",
    ]


def test_an_output_skipped_on_windows_is_left_out(v1: Path, meta: Path) -> None:
    ours = {o["name"] for o in tools_json(v1, "render", WIN)}
    theirs = {o["name"] for o in tools_json(meta, "render", WIN, "--built-only")}
    assert ours == theirs == {"libcore", "pycore", "core-meta"}


def test_a_cross_config_renders_for_its_target_on_the_build_platform(v1: Path) -> None:
    outputs = tools_json(v1, "render", AARCH64)
    assert {(o["subdir"], o["build_platform"]) for o in outputs} == {("linux-aarch64", "linux-64")}
    libcore = next(o for o in outputs if o["name"] == "libcore")
    assert libcore["requirements"]["build"] == [
        "gcc_linux-aarch64 14.*",
        "sysroot_linux-aarch64 2.17.*",
    ]


def test_render_text_names_each_package(v1: Path) -> None:
    result = run_tools("render", WIN, cwd=v1)
    assert result.returncode == 0, result.stderr
    heads = [line.split("  ")[0] for line in result.stdout.splitlines() if line[:1] not in " "]
    assert sorted(_without_hash(h) for h in heads) == [
        "core-meta-1.4.2-cpu_h<hash>_3",
        "libcore-1.4.2-cpu_h<hash>_3",
        "pycore-1.4.2-cpu_py312_h<hash>_3",
        "pycore-1.4.2-cpu_py313_h<hash>_3",
    ]


# -- explain --------------------------------------------------------------------------------


def test_explain_json_equals_the_meta_yaml_twins(v1: Path, meta: Path) -> None:
    assert tools_json(v1, "explain") == tools_json(meta, "explain")


def test_explain_table_equals_the_meta_yaml_twins(v1: Path, meta: Path) -> None:
    ours, theirs = run_tools("explain", cwd=v1), run_tools("explain", cwd=meta)
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout == theirs.stdout
    assert "libcore-extra (fancy, plain)" in ours.stdout


# -- pins as rattler-build applies them -------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "version", "expected"),
    [
        ({"lower_bound": "x.x.x.x.x.x", "upper_bound": "x.x"}, "2.13.0", ">=2.13.0,<2.14.0a0"),
        ({"upper_bound": "x"}, "2.13.0", "<3.0a0"),
        ({"lower_bound": "x.x", "upper_bound": "x.x.x"}, "1.4.2", ">=1.4,<1.4.3.0a0"),
        ({"lower_bound": "1.0", "upper_bound": "2.0"}, "1.4.2", ">=1.0,<2.0"),
        ({"exact": True}, "1.4.2", "==1.4.2 cpu_h1234567_3"),
    ],
)
def test_pin_subpackage_bounds(args: dict, version: str, expected: str) -> None:
    assert pin_spec("libcore", args, version, "cpu_h1234567_3") == f"libcore {expected}"


# -- this feedstock's own v1 recipe, switched -------------------------------------------------


@pytest.fixture(scope="module")
def switched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return switch_this_feedstock(tmp_path_factory.mktemp("switched"))


def test_explain_of_the_switched_feedstock_equals_meta_yaml_s(switched: Path) -> None:
    assert tools_json(switched, "explain") == tools_json(REPO, "explain")


# A CUDA config and a CPU one of the matrix (conda-forge's: linux-64 MKL and win-64), where it
# has them.
_SHAPES = [
    feedstock_matrix.prefer({"cuda": True, "blas": "mkl"}, {"cuda": True}),
    feedstock_matrix.prefer({"cuda": False, "platform": "win-64"}, {"cuda": False}),
]


@pytest.mark.parametrize("config", sorted({c.name for c in _SHAPES if c is not None}))
def test_render_of_the_switched_feedstock_has_meta_yaml_s_shape(
    switched: Path, config: str
) -> None:
    ours = tools_json(switched, "render", config)
    theirs = tools_json(REPO, "render", config, "--built-only")
    assert {tuple(sorted(o)) for o in ours} == {tuple(sorted(o)) for o in theirs}

    def identity(o: dict) -> tuple:
        return o["name"], o["version"], o["build_number"], o["subdir"], o["build_platform"]

    assert sorted(map(identity, ours)) == sorted(map(identity, theirs))
    assert sorted(_without_hash(o["build_string"]) for o in ours) == sorted(
        _without_hash(o["build_string"]) for o in theirs
    )
