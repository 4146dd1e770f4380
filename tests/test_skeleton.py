"""The feedstock's own configuration files are valid and consistent."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import feedstock_matrix
from ruamel.yaml import YAML

from tools.smithy.forge_yml import SCHEMA_PATH

ROOT = Path(__file__).resolve().parent.parent


def _load_yaml(path: Path):
    return YAML(typ="safe").load(path.read_text())


def test_conda_forge_yml_validates_against_conda_smithy_schema() -> None:
    import jsonschema  # a requirement of the toolkit (requirements.txt)

    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(_load_yaml(ROOT / "conda-forge.yml"), schema)


def test_every_platform_the_matrix_builds_has_a_provider_line() -> None:
    # conda-smithy reads the provider line of the platform a target is built on; a platform
    # built through conda-smithy's defaults alone would change CI service when they change
    config = _load_yaml(ROOT / "conda-forge.yml")
    built_on = config.get("build_platform") or {}
    platforms = [p.replace("-", "_") for p in feedstock_matrix.platforms(ROOT)]
    assert platforms, ".ci_support holds no configs"
    assert [p for p in platforms if not config["provider"].get(built_on.get(p, p))] == []


def test_conda_forge_yml_cross_compiles_aarch64_and_tests_it_emulated() -> None:
    if "linux-aarch64" not in feedstock_matrix.platforms(ROOT):
        pytest.skip(".ci_support holds no linux-aarch64 config")
    config = _load_yaml(ROOT / "conda-forge.yml")
    assert config["build_platform"]["linux_aarch64"] == "linux_64"
    assert config["test"] == "native_and_emulated"


def test_skip_render_protects_every_customised_file() -> None:
    skipped = set(_load_yaml(ROOT / "conda-forge.yml")["skip_render"])
    assert {"build-locally.py", "README.md"} <= skipped
    for name in skipped:
        assert (ROOT / name).exists(), f"skip_render lists {name}, which does not exist"


def test_ci_run_runs_the_readme_test_command() -> None:
    lines = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith(("#", "set ", "cd ", "export "))
    ]
    assert lines, ".ci/run runs nothing"
    assert lines[-1] in (ROOT / "README.md").read_text()


def test_toolkit_help_lists_its_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tools", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "usage: python -m tools" in result.stdout


def test_readme_build_matrix_table_is_what_explain_prints_today() -> None:
    from tools.commands.explain import format_table, job_row
    from tools.foundation import readme
    from tools.render.config import list_configs, render_config

    configs = list_configs(ROOT)
    if not configs:
        pytest.skip(".ci_support/ holds no configs")
    rows = [job_row(config, render_config(config, root=ROOT)) for config in configs]
    text = (ROOT / "README.md").read_text()
    expected = readme.replace_section(
        text, format_table(rows, markdown=True) + "\n", "README.md", readme.MATRIX_TABLE
    )
    assert text == expected, "README.md is stale: run `python -m tools explain --update-readme`"
