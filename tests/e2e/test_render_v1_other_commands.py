"""check --config, drift, --version and matrix on a feedstock switched to rattler-build, and
its bad input: one line naming the file and line (the fixture: test_render_v1.py's)."""

from __future__ import annotations

import io
import json
import re
import tarfile
import zipfile
from pathlib import Path

import pytest
from conda_package_streaming.create import conda_builder
from helpers.v1_staging import (
    FIXTURE,
    copy_feedstock,
    run_tools,
    tools_json,
)

CUDA = "linux_64_cuda_compiler_version12.9"
WIN = "win_64_cuda_compiler_versionNone"
AARCH64 = "linux_aarch64_cuda_compiler_versionNone"


@pytest.fixture
def v1(tmp_path: Path) -> Path:
    return copy_feedstock(tmp_path)


@pytest.fixture
def meta(tmp_path: Path) -> Path:
    return copy_feedstock(tmp_path, "conda-build")


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
    outputs = tools_json(v1, "render", CUDA)
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


def test_version_reads_the_v1_recipe_of_a_switchedcopy_feedstock(v1: Path) -> None:
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


def _ci_support(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / ".ci_support").iterdir() if p.is_file()}


def test_matrix_refuses_a_switched_feedstock_holding_both_recipes(v1: Path) -> None:
    # conda-smithy reads recipe.yaml and its linter refuses a folder that also holds meta.yaml
    before = _ci_support(v1)
    message = _error(v1, "matrix", "--write", "--pinning", FIXTURE.parent / "pinning-mini")
    assert message.startswith(f"error: {v1 / 'recipe'}: holds both meta.yaml and recipe.yaml")
    assert "switch --to rattler-build" in message
    assert _ci_support(v1) == before


def test_matrix_refuses_a_switched_feedstock_without_recipe_yaml(v1: Path) -> None:
    (v1 / "recipe" / "recipe.yaml").unlink()
    before = _ci_support(v1)
    message = _error(v1, "matrix", "--write", "--pinning", FIXTURE.parent / "pinning-mini")
    assert "conda_build_tool: rattler-build" in message and "no recipe.yaml" in message
    assert _ci_support(v1) == before


def test_matrix_names_the_line_rattler_build_cannot_render_and_writes_nothing(v1: Path) -> None:
    (v1 / "recipe" / "meta.yaml").unlink()
    recipe = v1 / "recipe" / "recipe.yaml"
    text = recipe.read_text().replace("- numpy >=1.26", "- numpy ${{ no_such_key }}")
    recipe.write_text(text)
    line = text.splitlines().index("        - numpy ${{ no_such_key }}") + 1
    before = _ci_support(v1)
    message = _error(v1, "matrix", "--write", "--pinning", FIXTURE.parent / "pinning-mini")
    assert message.startswith(f"error: {recipe}:{line}:"), message
    assert "undefined" in message
    assert _ci_support(v1) == before


@pytest.mark.parametrize("tool", ["mambabuild", "conda-build+conda-libmamba-solver"])
def test_a_build_tool_other_than_rattler_build_renders_meta_yaml(
    tmp_path: Path, meta: Path, tool: str
) -> None:
    other = copy_feedstock(tmp_path, tool)
    # a skip reason names meta.yaml by its path, which is the only thing allowed to differ
    assert json.loads(json.dumps(tools_json(other, "render", WIN)).replace(str(other), "FS")) == (
        json.loads(json.dumps(tools_json(meta, "render", WIN)).replace(str(meta), "FS"))
    )
    assert any(o["skip"] for o in tools_json(other, "render", WIN))  # meta.yaml's skipped output
