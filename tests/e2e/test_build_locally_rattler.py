"""build-locally.py with conda_build_tool: rattler-build, through the fake container engine.

.scripts/build_steps.sh runs `rattler-build build` on the v1 recipe; inside the fake
container that is tests/fixtures/rattler_build (py-rattler-build, the real engine), building
a one-output recipe offline against an empty local channel. build-locally.py is unchanged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import CPU, Feedstock

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="builds a linux-64 package with bash"
)

RECIPE = """\
package:
  name: libtorch
  version: "1.0"
build:
  number: 0
  script:
    - mkdir -p "$PREFIX/share/minirecipe"
    - echo built > "$PREFIX/share/minirecipe/file.txt"
tests:
  - script:
      - test -f "$PREFIX/share/minirecipe/file.txt"
      - {test_line}
"""


def _empty_channel(path: Path) -> Path:
    for subdir in ("noarch", "linux-64"):
        (path / subdir).mkdir(parents=True)
        (path / subdir / "repodata.json").write_text(
            json.dumps({"info": {"subdir": subdir}, "packages": {}, "packages.conda": {}})
        )
    return path


def _rattler_feedstock(
    tmp_path: Path, *, test_passes: bool = True, switched: bool = True
) -> Feedstock:
    """Switched: recipe.yaml alone and conda_build_tool: rattler-build
    (docs/rattler-build.md); else recipe-v1.yaml beside meta.yaml, conda-build in
    conda-forge.yml."""
    fs = Feedstock(tmp_path)
    recipe = RECIPE.format(test_line="true" if test_passes else "exit 3")
    if switched:
        fs.set_forge_config("rattler-build")
        (fs.root / "recipe" / "meta.yaml").unlink()
        (fs.root / "recipe" / "recipe.yaml").write_text(recipe)
    else:
        (fs.root / "recipe" / "recipe-v1.yaml").write_text(recipe)
    channel = _empty_channel(tmp_path / "channel")
    config = fs.root / ".ci_support" / f"{CPU}.yaml"
    config.write_text(config.read_text().replace("- conda-forge\n", f"- {channel.as_uri()}\n", 1))
    return fs


def test_rattler_build_tool_builds_the_v1_recipe_into_build_artifacts(tmp_path) -> None:
    fs = _rattler_feedstock(tmp_path)
    run = fs.run(CPU)
    assert run.returncode == 0, run.stdout + run.stderr
    assert fs.marker(CPU).exists()
    [package] = (fs.artifacts / "linux-64").glob("libtorch-1.0-*.conda")
    assert package.name in (fs.artifacts / "SHA256SUMS").read_text()
    assert fs.summary()["configs"][CPU]["status"] == "done"
    assert fs.builds() == []  # conda-build never ran


def test_rattler_build_runs_the_recipe_tests_natively(tmp_path) -> None:
    fs = _rattler_feedstock(tmp_path, test_passes=False)
    run = fs.run(CPU)
    assert run.returncode != 0
    assert not fs.marker(CPU).exists()


def test_no_test_becomes_rattler_builds_test_skip(tmp_path) -> None:
    # The build workflow hands the container EXTRA_CB_OPTIONS=--no-test (GPU runners test
    # the CUDA packages afterwards); rattler-build's word for it is `--test skip`.
    fs = _rattler_feedstock(tmp_path, test_passes=False)
    run = fs.run(
        CPU, CONDA_FORGE_DOCKER_RUN_ARGS="-e EXTRA_CB_OPTIONS", EXTRA_CB_OPTIONS="--no-test"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert list((fs.artifacts / "linux-64").glob("libtorch-1.0-*.conda"))


def test_conda_build_tool_variable_builds_recipe_v1_beside_meta_yaml(tmp_path) -> None:
    # A one-off experiment before switching: CONDA_BUILD_TOOL handed into the container.
    fs = _rattler_feedstock(tmp_path, switched=False)
    run = fs.run(
        CPU, CONDA_FORGE_DOCKER_RUN_ARGS="-e CONDA_BUILD_TOOL", CONDA_BUILD_TOOL="rattler-build"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert list((fs.artifacts / "linux-64").glob("libtorch-1.0-*.conda"))
    assert fs.builds() == []
