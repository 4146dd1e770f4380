"""A damaged YAML file or recipe ends in one clear line and an exit code, never a traceback
or a silent success.

Each test runs a command the way a user types it (``python -m tools ...`` through its entry
point, in process) on one damaged or mistaken input, and checks the exit status and message.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from helpers.bad_input import (
    LINUX_CONFIG,
    REPO,
    one_error_line,
    run_tool,
    tiny_conda,
)

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
