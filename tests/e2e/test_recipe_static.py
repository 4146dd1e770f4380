"""Recipe invariants that need no renderer: files, patches, scripts and migrations agree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from helpers import bld_bat, feedstock_matrix

RECIPE = Path(__file__).resolve().parents[2] / "recipe"
META = RECIPE / "meta.yaml"
MIGRATIONS = RECIPE.parent / ".ci_support" / "migrations"
PATCH_DIR = RECIPE / "patches"


def meta_text() -> str:
    return META.read_text(encoding="utf-8")


def script_text(script: str) -> str:
    """build.sh, or bld.bat with the batch files it runs."""
    return bld_bat.all_text() if script == "bld.bat" else (RECIPE / script).read_text()


def listed_patches() -> list[str]:
    return re.findall(r"^\s+-\s+(patches/\S+\.patch)\s*$", meta_text(), flags=re.MULTILINE)


def patch_header(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text.split("\ndiff --git ", 1)[0]


def script_outputs(script: str) -> set[str]:
    """The stages `script` runs: `compile` (the top-level build) and the outputs that run it.

    Each output sets CF_TORCH_BUILD_STAGE to its own name (also conda-build's PKG_NAME).
    """
    names = {"compile"}  # the top-level build runs build.sh / bld.bat, stage compile
    for match in re.finditer(
        r"^  - name: (\S+)\n(?P<body>(?:    .*\n|\s*\n|\{%.*\n)*)", meta_text(), flags=re.MULTILINE
    ):
        body = match.group("body")
        if re.search(rf"script:.*\b{re.escape(script)}\b", body):
            names.add(match.group(1))
    return names


def test_every_listed_patch_exists():
    missing = [p for p in listed_patches() if not (RECIPE / p).is_file()]
    assert listed_patches() and not missing


def test_meta_yaml_names_nothing_conda_build_takes_for_a_version_control_variable():
    # conda-build reads any GIT_*, SVN_* or HG_* in meta.yaml's text as the source's version
    # control variables (conda_build/metadata.py, uses_vcs_in_meta, 26.7.1): it then fetches
    # the source before it renders and renders again with it. CF_TORCH_GIT_VERSION did that,
    # and the oracle's conda-build stopped in the second render (issue 60).
    assert re.findall(r"(?:GIT|SVN|HG)_[^.\s'\"]+", meta_text()) == []


def test_every_patch_file_is_listed_in_meta_yaml():
    on_disk = {f"patches/{p.name}" for p in PATCH_DIR.glob("*.patch")}
    assert on_disk == set(listed_patches())


@pytest.mark.parametrize("patch", sorted(PATCH_DIR.glob("*.patch")), ids=lambda p: p.name)
def test_patch_header_says_why(patch: Path):
    header = patch_header(patch)
    assert re.search(r"^Subject: ", header, flags=re.MULTILINE), f"{patch.name}: no Subject line"
    assert re.search(r"^Why: \S", header, flags=re.MULTILINE), f"{patch.name}: no 'Why:' paragraph"


@pytest.mark.parametrize("patch", sorted(PATCH_DIR.glob("*.patch")), ids=lambda p: p.name)
def test_patch_is_a_well_formed_diff(patch: Path):
    result = subprocess.run(
        ["git", "apply", "--numstat", str(patch)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), f"{patch.name} changes nothing"


def test_bld_bat_dispatches_every_windows_output():
    handled = set(bld_bat.stage_files())
    assert script_outputs("bld.bat") <= handled
    assert all((RECIPE / name).is_file() for name in bld_bat.stage_files().values())


def test_bld_bat_rejects_unknown_pkg_name_with_one_line_naming_the_file():
    lines = bld_bat.code((RECIPE / "bld.bat").read_text())
    # right after the one line per stage
    check = lines.index("if not defined STAGE_FILE (")
    assert all(line.startswith('if "%STAGE%"==') for line in lines[check - 4 : check])
    error = lines[check + 1]
    assert (
        "!STAGE_VARIABLE!='!STAGE!'" in error
        and "%RECIPE_FILE%" in error
        and error.endswith("1>&2")
    )
    assert lines[check + 2] == "exit /b 2"


def test_build_sh_dispatches_every_unix_output():
    text = (RECIPE / "build.sh").read_text()
    dispatch = text[text.rindex('case "${STAGE}" in') :]
    patterns = re.findall(r"^\s+([\w|-]+)\)", dispatch, flags=re.MULTILINE)
    handled = {name for pattern in patterns for name in pattern.split("|")}
    assert script_outputs("build.sh") <= handled


@pytest.mark.parametrize("script", ["build.sh", "bld.bat"])
def test_build_scripts_never_name_an_output_only_variant_key(script: str):
    # conda-build scans build scripts for variant names; a script mentioning one would make
    # every output that runs it vary (and split the CI jobs) by that key.
    assert "cuda_linalg_flavor" not in script_text(script)


def test_megabuild_python_is_named_once():
    text = meta_text()
    (value,) = re.findall(
        r'^\{% set megabuild_python = "(\d+\.\d+)" %\}$', text, flags=re.MULTILINE
    )
    literal = re.compile(rf"(?<![\d.]){re.escape(value)}(?![\d])")
    assert len(literal.findall(text)) == 1
    for script in ("build.sh", "bld.bat"):
        assert not literal.search(script_text(script)), f"{script} names {value}"


def test_linalg_flavour_reaches_build_sh_only_through_script_env():
    assert "- CF_TORCH_LINALG_FLAVOR={{ cuda_linalg_flavor }}" in meta_text()


def test_conda_build_config_offers_both_linalg_flavours():
    for subdir in feedstock_matrix.platforms():
        cbc = feedstock_matrix.recipe_cbc(subdir)
        assert cbc["cuda_linalg_flavor"] == ["magma", "nomagma"], subdir


@pytest.mark.parametrize("subdir", feedstock_matrix.platforms())
def test_rc_and_channel_targets_are_zipped(subdir):
    cbc = feedstock_matrix.recipe_cbc(subdir)
    assert ["channel_targets", "is_rc"] in cbc["zip_keys"]
    # one channel (conda-forge, or a fork's own), a label for final releases and another for
    # release candidates
    labels = dict(zip(cbc["is_rc"], cbc["channel_targets"]))
    assert sorted(labels) == ["False", "True"]
    (channel,) = {target.split()[0] for target in labels.values()}
    assert labels["False"] != labels["True"]
    if channel == "conda-forge":  # conda-forge's own labels
        assert labels == {"False": "conda-forge main", "True": "conda-forge pytorch_rc"}


def test_readme_documents_the_nomagma_install_command():
    readme = (RECIPE / "README.md").read_text()
    assert 'conda install -c conda-forge pytorch "libtorch-cuda-linalg=*=*nomagma*"' in readme


@pytest.mark.parametrize("name", sorted(p.name for p in MIGRATIONS.glob("*.yaml")))
def test_migration_is_identical_to_the_pinnings_copy(name: str, pinning_dir: Path):
    upstream = pinning_dir / "share" / "conda-forge" / "migrations" / name
    assert upstream.is_file(), f"{name} is not (or no longer) a conda-forge migration"
    assert (MIGRATIONS / name).read_bytes() == upstream.read_bytes()


def test_cmake_test_project_is_shipped_to_the_tests():
    shipped = re.findall(r"^\s+- cmake_test/$", meta_text(), flags=re.MULTILINE)
    assert len(shipped) == 2  # the libtorch and the pytorch tests
    assert (RECIPE / "cmake_test" / "CMakeLists.txt").is_file()


def test_the_top_level_build_compiles_and_every_output_names_its_own_stage():
    text = meta_text()
    stages = re.findall(r"^\s+- CF_TORCH_BUILD_STAGE=(\S+)$", text, flags=re.MULTILINE)
    outputs = re.findall(r"^  - name: (\S+)$", text, flags=re.MULTILINE)
    assert stages[0] == "compile"
    assert stages[1:] == outputs[: len(stages) - 1]


def test_bld_bat_runs_the_compile_stage_for_the_top_level_builds_package_name():
    # conda-build's PKG_NAME, should CF_TORCH_BUILD_STAGE ever be missing (build.sh:
    # tests/e2e/test_build_sh_stages.py runs it)
    (name,) = re.findall(r"^package:\n(?:  #.*\n)*  name: (\S+)$", meta_text(), flags=re.MULTILINE)
    assert bld_bat.stage_files()[name] == bld_bat.stage_files()["compile"]


def _requirement_lines(block: str) -> list[str]:
    return [" ".join(line.split()) for line in block.splitlines() if line.strip().startswith("- ")]


def test_the_libtorch_output_has_the_top_level_builds_build_and_host_requirements():
    # The top-level build packages nothing: libtorch gets its run exports from its own host
    # requirements, and its script reads the tree the top-level build configured with them.
    text = meta_text()
    top_level = text[text.index("\nrequirements:\n") : text.index("\noutputs:\n")]
    start = text.index("\n  - name: libtorch\n")
    output = text[start : text.index("\n  - name: ", start + 1)]
    libtorch = output[output.index("\n    requirements:\n") : output.index("\n      run:\n")]
    assert _requirement_lines(top_level)
    assert _requirement_lines(libtorch) == _requirement_lines(top_level)
