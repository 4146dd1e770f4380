"""Golden files: the torchlike fixture feedstock rendered per CI config.

The expected documents were checked against real conda-build 26.7.1 (render.py in smithy
mode, per target platform, cross for linux-aarch64): same outputs and build strings,
hashes included, and the same requirement specs (pin_subpackage aside, which conda-build
leaves unresolved in that mode).  To regenerate after an intended change, render each
config with ``python -m tools render CONFIG --json`` and review the diff.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from fixtures.cli import REPO, run_tools

from tools.render.config import list_configs, render_config

FIXTURE = Path(__file__).parent / "fixtures" / "recipes" / "torchlike"
GOLDEN = json.loads((FIXTURE.parent / "torchlike-expected" / "render.json").read_text())
KEYS = (
    "name",
    "version",
    "build_string",
    "build_number",
    "subdir",
    "build_platform",
    "skip",
    "requirements",
    "run_exports",
)


def test_every_config_has_a_golden_document():
    assert list_configs(FIXTURE) == sorted(GOLDEN)
    assert len(GOLDEN) == 11


@pytest.mark.parametrize("config", sorted(GOLDEN))
def test_render_matches_golden(config):
    rendered = [
        {k: v for k, v in o.to_json().items() if k in KEYS}
        for o in render_config(config, root=FIXTURE)
    ]
    assert len(rendered) == len(GOLDEN[config])
    assert rendered == GOLDEN[config]


def test_cuda_config_builds_both_linalg_flavours_once_and_each_python():
    outputs = [
        o
        for o in render_config(
            "linux_64_blas_implmklc_compiler_version14cuda_compiler_version12.9cxx_compiler_version14",
            root=FIXTURE,
        )
        if not o.skip
    ]
    names = sorted(o.name for o in outputs)
    assert names == [
        "libtoy",
        "libtoy-linalg",
        "libtoy-linalg",
        "toy",
        "toy",
        "toy",
        "toy",
        "toy-gpu",
    ]
    linalg = sorted(
        (o.variant["linalg_flavor"], o.build_number) for o in outputs if o.name == "libtoy-linalg"
    )
    assert linalg == [("magma", 353), ("nomagma", 303)]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return run_tools("render", *args, cwd=FIXTURE, env=env, timeout=120)


def test_render_command_json_is_the_documented_list():
    result = _cli("osx_arm64_", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert {d["name"] for d in doc if not d["skip"]} == {"libtoy", "toy", "toy-cpu"}
    assert {d["name"] for d in doc if d["skip"]} == {"libtoy-linalg"}
    assert set(doc[0]["requirements"]) == {"build", "host", "run", "run_constrained"}
    assert doc[0]["variant"]["target_platform"] == "osx-arm64"


def test_render_command_unknown_output_is_one_line_and_exit_2():
    result = _cli("osx_arm64_", "--output", "nope")
    assert result.returncode == 2
    assert (
        result.stderr.startswith("error: osx_arm64_: no output named 'nope'")
        and result.stderr.count("\n") == 1
    )


def test_render_command_unknown_config_exits_2_naming_the_three_closest():
    result = _cli("linux_99_")
    assert result.returncode == 2
    first, *closest = result.stderr.splitlines()
    assert first.startswith("error: no config named 'linux_99_'")
    # each line: the config's label, then its name
    assert len(closest) == 3 and all(n.split()[-1] in GOLDEN for n in closest)
