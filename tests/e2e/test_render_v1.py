"""render, explain, check --config and drift on a feedstock switched to rattler-build.

conda-forge.yml ``conda_build_tool: rattler-build`` makes the toolkit read ``recipe/recipe.yaml``
through py-rattler-build (tools/render_v1.py) instead of rendering meta.yaml itself.  The
fixture ``tests/fixtures/recipes/v1-staging`` is a miniature feedstock holding both a v1 recipe
with a staging output and its meta.yaml twin (a real feedstock may hold only one, lint R-051),
so each command runs on the same feedstock with either engine and the results are compared.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conda_package_streaming.create import conda_builder
from helpers import feedstock_matrix
from helpers.cli import REPO

from tools.render_v1 import pin_spec

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "recipes" / "v1-staging"
CUDA = "linux_64_cuda_compiler_version12.9"
WIN = "win_64_cuda_compiler_versionNone"
AARCH64 = "linux_aarch64_cuda_compiler_versionNone"


def run_tools(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The toolkit run by path inside another feedstock, as its maintainer runs it there."""
    return subprocess.run(
        [sys.executable, str(REPO / "tools"), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _feedstock(tmp_path: Path, tool: str = "rattler-build") -> Path:
    """A copy of the fixture feedstock building with ``tool``."""
    root = tmp_path / tool
    shutil.copytree(FIXTURE, root)
    forge = root / "conda-forge.yml"
    text = forge.read_text()
    assert "conda_build_tool: rattler-build" in text
    forge.write_text(text.replace("conda_build_tool: rattler-build", f"conda_build_tool: {tool}"))
    return root


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    return _feedstock(tmp_path)


@pytest.fixture
def meta(tmp_path: Path) -> Path:
    return _feedstock(tmp_path, "conda-build")


def _json(root: Path, *args: str) -> list[dict]:
    result = run_tools(*args, "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _without_hash(build_string: str) -> str:
    return re.sub(r"_h[0-9a-f]{7}_", "_h<hash>_", build_string)


# -- render ---------------------------------------------------------------------------------


def test_render_json_has_the_shape_meta_yaml_renders_have(v1: Path, meta: Path) -> None:
    ours = _json(v1, "render", CUDA)
    theirs = _json(meta, "render", CUDA)
    assert [sorted(o) for o in ours] == [sorted(theirs[0])] * len(ours)
    assert all(sorted(o["requirements"]) == sorted(theirs[0]["requirements"]) for o in ours)

    def identity(o: dict) -> tuple:
        return o["name"], o["version"], o["build_number"], o["subdir"], o["build_platform"]

    assert sorted(map(identity, ours)) == sorted(map(identity, theirs))
    assert sorted(_without_hash(o["build_string"]) for o in ours) == sorted(
        _without_hash(o["build_string"]) for o in theirs
    )


def test_requirements_carry_variant_pins_and_resolved_subpackage_pins(v1: Path) -> None:
    outputs = {(o["name"], o["variant"].get("python")): o for o in _json(v1, "render", CUDA)}
    libcore = outputs[("libcore", None)]
    pycore = outputs[("pycore", "3.13.* *_cp313")]
    exact = f"libcore ==1.4.2 {libcore['build_string']}"
    assert pycore["requirements"]["host"] == ["python 3.13.* *_cp313", exact]
    assert pycore["requirements"]["run"] == ["python", exact, "numpy >=1.26", "__cuda"]
    assert libcore["requirements"]["host"] == ["zlib 1.*"]  # bare name, variant zlib: 1
    assert libcore["run_exports"] == {"weak": ["libcore >=1.4.2,<1.5.0a0"]}


def test_build_string_hash_is_the_sha1_of_hash_input(v1: Path) -> None:
    for output in _json(v1, "render", CUDA):
        text = json.dumps(output["hash_input"], sort_keys=True)
        digest = hashlib.sha1(text.encode()).hexdigest()[:7]
        assert f"_h{digest}_" in output["build_string"], output["name"]


def test_staging_output_is_no_package_and_each_output_is_listed_once(v1: Path) -> None:
    names = [(o["name"], o["build_string"]) for o in _json(v1, "render", CUDA)]
    assert len(names) == len(set(names)) == 6
    assert "core-build" not in {name for name, _ in names}


def test_test_scripts_read_as_rattler_build_writes_them(v1: Path) -> None:
    libcore = next(o for o in _json(v1, "render", CUDA) if o["name"] == "libcore")
    assert libcore["tests"]["commands"] == [
        'test -f "$PREFIX/lib/libcore.so"',
        "echo libcore 1.4.2 for cuda129",
    ]


def test_an_output_skipped_on_windows_is_left_out(v1: Path, meta: Path) -> None:
    ours = {o["name"] for o in _json(v1, "render", WIN)}
    theirs = {o["name"] for o in _json(meta, "render", WIN, "--built-only")}
    assert ours == theirs == {"libcore", "pycore", "core-meta"}


def test_a_cross_config_renders_for_its_target_on_the_build_platform(v1: Path) -> None:
    outputs = _json(v1, "render", AARCH64)
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
    assert _json(v1, "explain") == _json(meta, "explain")


def test_explain_table_equals_the_meta_yaml_twins(v1: Path, meta: Path) -> None:
    ours, theirs = run_tools("explain", cwd=v1), run_tools("explain", cwd=meta)
    assert ours.returncode == theirs.returncode == 0, ours.stderr + theirs.stderr
    assert ours.stdout == theirs.stdout
    assert "libcore-extra (fancy, plain)" in ours.stdout


# -- check --config -------------------------------------------------------------------------


def _package(out: Path, name: str, build: str, depends: list[str]) -> Path:
    """A .conda holding only info/index.json: what metadata.* checks read."""
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{name}-1.4.2-{build}"
    index = {
        "name": name,
        "version": "1.4.2",
        "build": build,
        "build_number": 103,
        "subdir": "linux-64",
        "depends": depends,
    }
    with conda_builder(stem, out, compression_level=1) as tar:
        data = json.dumps(index).encode()
        info = tarfile.TarInfo("info/index.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return out / f"{stem}.conda"


def _pycore(v1: Path) -> dict:
    outputs = _json(v1, "render", CUDA)
    return next(o for o in outputs if o["name"] == "pycore" and "3.12" in o["variant"]["python"])


def test_check_config_accepts_a_package_built_as_the_v1_recipe_says(
    v1: Path, tmp_path: Path
) -> None:
    pycore = _pycore(v1)
    libcore = pycore["requirements"]["host"][1]  # libcore ==1.4.2 <build string>
    package = _package(
        tmp_path / "out",
        "pycore",
        pycore["build_string"],
        ["python >=3.12,<3.13.0a0", libcore, "numpy >=1.26", "__cuda"],
    )
    result = run_tools("check", "--json", "--only", "metadata", "--config", CUDA, package, cwd=v1)
    assert result.returncode == 0, result.stdout + result.stderr
    statuses = {(f["check"], f["status"]) for f in json.loads(result.stdout)}
    assert ("metadata.depends", "pass") in statuses
    assert ("metadata.output", "fail") not in statuses


def test_check_config_fails_a_package_missing_a_pin_of_the_v1_recipe(
    v1: Path, tmp_path: Path
) -> None:
    pycore = _pycore(v1)
    depends = ["python", "numpy >=1.26", "__cuda"]
    package = _package(tmp_path / "out", "pycore", pycore["build_string"], depends)
    result = run_tools("check", "--json", "--only", "metadata", "--config", CUDA, package, cwd=v1)
    assert result.returncode == 1, result.stdout + result.stderr
    failed = [f for f in json.loads(result.stdout) if f["status"] == "fail"]
    assert [(f["check"], "'libcore ==1.4.2 " in f["detail"]) for f in failed] == [
        ("metadata.depends", True)
    ]


# -- drift ----------------------------------------------------------------------------------


def _wheel(out: Path, requires: list[str]) -> Path:
    path = out / "core-1.4.2-cp312-cp312-manylinux_2_28_x86_64.whl"
    metadata = "Metadata-Version: 2.1\nName: core\nVersion: 1.4.2\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("core-1.4.2.dist-info/METADATA", metadata)
    return path


def test_drift_reads_the_recipe_column_from_the_v1_render(v1: Path, tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, ["numpy>=2"])
    result = run_tools(
        "drift", "--wheel", wheel, "--offline", "--output", "pycore", "--all", "--json", cwd=v1
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["inputs"]["recipe_configs"] == sorted(
        p.stem for p in (v1 / ".ci_support").glob("*.yaml")
    )
    numpy = next(r for r in document["rows"] if r["package"] == "numpy")
    assert {spec["spec"] for spec in numpy["recipe"]} == {">=1.26"}
    assert numpy["status"] == "looser"


def test_version_reads_the_v1_recipe_of_a_switched_feedstock(v1: Path) -> None:
    (v1 / "recipe" / "meta.yaml").unlink()
    result = run_tools("--version", cwd=v1)
    assert result.returncode == 0, result.stderr
    recipe = v1 / "recipe" / "recipe.yaml"
    assert result.stdout.splitlines()[0] == f"recipe: pytorch 1.4.2, build 3 ({recipe})"


# -- bad input ------------------------------------------------------------------------------


def _error(root: Path, *args: str) -> str:
    result = run_tools(*args, cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_bad_yaml_in_recipe_yaml_is_one_line_with_file_and_line(v1: Path) -> None:
    recipe = v1 / "recipe" / "recipe.yaml"
    lines = recipe.read_text().splitlines()
    lines[13] = "  name: [core-split"  # recipe: name: ...
    recipe.write_text("\n".join(lines) + "\n")
    assert re.fullmatch(rf"error: {re.escape(str(recipe))}:\d+:\d+: .+", _error(v1, "render", WIN))


def test_undefined_variable_is_one_line_with_file_and_line(v1: Path) -> None:
    recipe = v1 / "recipe" / "recipe.yaml"
    text = recipe.read_text().replace("- numpy >=1.26", "- numpy ${{ no_such_key }}")
    recipe.write_text(text)
    line = text.splitlines().index("        - numpy ${{ no_such_key }}") + 1
    message = _error(v1, "explain")
    assert message.startswith(f"error: {recipe}:{line}:"), message
    assert "undefined" in message


def test_bad_variant_file_is_named_with_its_line(v1: Path) -> None:
    cbc = v1 / "recipe" / "conda_build_config.yaml"
    cbc.write_text("core_flavor: [plain\n")
    assert _error(v1, "render", WIN).startswith(f"error: {cbc}:2:1: ")


def test_switched_feedstock_without_recipe_yaml_says_what_to_do(v1: Path) -> None:
    (v1 / "recipe" / "recipe.yaml").unlink()
    message = _error(v1, "render", WIN)
    assert "conda_build_tool: rattler-build" in message and "no recipe.yaml" in message


def test_matrix_refuses_a_switched_feedstock_and_names_the_rerender(v1: Path) -> None:
    pinning = FIXTURE.parent / "pinning-mini"
    message = _error(v1, "matrix", "--check", "--pinning", pinning)
    assert "conda_build_tool: rattler-build" in message and "conda smithy rerender" in message


def test_matrix_write_refuses_this_switched_feedstock_and_writes_nothing(
    switched: Path, tmp_path: Path
) -> None:
    # the fork that takes the v1 recipe: one line saying why, exit 2, .ci_support as it was
    pinning = FIXTURE.parent / "pinning-mini"
    before = {p.name: p.read_bytes() for p in (switched / ".ci_support").iterdir() if p.is_file()}
    message = _error(switched, "matrix", "--write", "--pinning", pinning)
    assert message.startswith(f"error: {switched / 'conda-forge.yml'}: conda_build_tool: ")
    assert "asks rattler-build which variant keys each output" in message
    assert message.endswith("`conda smithy rerender`")
    after = {p.name: p.read_bytes() for p in (switched / ".ci_support").iterdir() if p.is_file()}
    assert after == before


@pytest.mark.parametrize("tool", ["mambabuild", "conda-build+conda-libmamba-solver"])
def test_a_build_tool_other_than_rattler_build_renders_meta_yaml(
    tmp_path: Path, meta: Path, tool: str
) -> None:
    other = _feedstock(tmp_path, tool)
    # a skip reason names meta.yaml by its path, which is the only thing allowed to differ
    assert json.loads(json.dumps(_json(other, "render", WIN)).replace(str(other), "FS")) == (
        json.loads(json.dumps(_json(meta, "render", WIN)).replace(str(meta), "FS"))
    )
    assert any(o["skip"] for o in _json(other, "render", WIN))  # meta.yaml's skipped output


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

V1_RECIPE = REPO / "recipe" / "recipe-v1.yaml"


@pytest.fixture(scope="module")
def switched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of this feedstock switched as docs/rattler-build.md says: meta.yaml removed,
    recipe-v1.yaml renamed recipe.yaml, conda_build_tool: rattler-build."""
    if not V1_RECIPE.is_file():
        pytest.skip(f"{V1_RECIPE} is absent (the v1 recipe has not landed on this branch)")
    root = tmp_path_factory.mktemp("switched")
    shutil.copytree(REPO / "recipe", root / "recipe")
    shutil.copytree(REPO / ".ci_support", root / ".ci_support")
    (root / "recipe" / "meta.yaml").unlink()
    (root / "recipe" / "recipe-v1.yaml").rename(root / "recipe" / "recipe.yaml")
    forge = (REPO / "conda-forge.yml").read_text()
    assert "conda_build_tool: conda-build\n" in forge
    (root / "conda-forge.yml").write_text(
        forge.replace("conda_build_tool: conda-build\n", "conda_build_tool: rattler-build\n")
    )
    return root


def test_explain_of_the_switched_feedstock_equals_meta_yaml_s(switched: Path) -> None:
    assert _json(switched, "explain") == _json(REPO, "explain")


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
    ours = _json(switched, "render", config)
    theirs = _json(REPO, "render", config, "--built-only")
    assert {tuple(sorted(o)) for o in ours} == {tuple(sorted(o)) for o in theirs}

    def identity(o: dict) -> tuple:
        return o["name"], o["version"], o["build_number"], o["subdir"], o["build_platform"]

    assert sorted(map(identity, ours)) == sorted(map(identity, theirs))
    assert sorted(_without_hash(o["build_string"]) for o in ours) == sorted(
        _without_hash(o["build_string"]) for o in theirs
    )
