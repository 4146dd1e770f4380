""".scripts/run_win_build.bat run by Wine's cmd up to the build and upload (issue 42).

tests/fixtures/wine/harness.py's ``run_win_build`` runs the unmodified script in a feedstock
whose folder name has a space, with micromamba already in place (no download) and the
programs it runs recording their command lines. What it hands conda-build and upload_package
is compared with what conda-smithy's template (conda_smithy/templates/run_win_build.bat.tmpl)
passes: ``conda-build.exe "recipe" -m .ci_support\\%CONFIG%.yaml --suppress-variables
%EXTRA_CB_OPTIONS%`` and ``upload_package --validate --feedstock-name="%FEEDSTOCK_NAME%" .\\
".\\recipe" .ci_support\\%CONFIG%.yaml``, here with absolute paths.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.feedstock_matrix import need
from fixtures.wine.harness import run_win_build

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _config() -> Path:
    return ROOT / ".ci_support" / f"{need(platform='win-64').name}.yaml"


@pytest.fixture(scope="module")
def ci_job(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("win-ci")
    status, log, records = run_win_build(root, _config())
    return root / "the feedstock", status, log, {r["tool"]: r for r in records}


def test_the_script_runs_to_its_end_and_marks_the_build_done(ci_job) -> None:
    feedstock, status, log, _ = ci_job
    assert status == 0, log[-3000:]
    done = feedstock / "build_artifacts" / f"conda-forge-build-done-{_config().stem}"
    assert done.is_file()


def test_micromamba_provisions_conda_build_into_miniforge_home(ci_job) -> None:
    feedstock, _, _, records = ci_job
    args = records["micromamba"]["args"]
    assert args[:4] == ["create", "--yes", "--quiet", "--prefix"]
    assert Path(args[4]) == feedstock.parent / "Miniforge3"
    assert {"python=3.12", "conda-build>=25.1", "conda-forge-ci-setup=4"} <= set(args)


def test_conda_build_gets_the_recipe_and_the_config_as_conda_smithys_script_passes_them(
    ci_job,
) -> None:
    feedstock, _, _, records = ci_job
    assert "run_conda_forge_build_setup" in records
    assert records["conda-build"]["args"] == [
        str(feedstock / "recipe"),
        "-m",
        str(feedstock / ".ci_support" / _config().name),
        "--suppress-variables",
    ]


def test_upload_package_validates_under_the_feedstocks_name(ci_job) -> None:
    feedstock, _, _, records = ci_job
    assert records["upload_package"]["args"] == [
        "--validate",
        "--feedstock-name=the feedstock",
        str(feedstock),
        str(feedstock / "recipe"),
        str(feedstock / ".ci_support" / _config().name),
    ]


def test_a_failing_conda_build_stops_the_job_before_upload(tmp_path: Path) -> None:
    status, _, records = run_win_build(tmp_path, _config(), WINE_STANDIN_FAIL="conda-build")
    assert status == 1
    assert [r["tool"] for r in records][-1] == "conda-build"
    assert not list((tmp_path / "the feedstock" / "build_artifacts").glob("*done*"))


def test_a_pull_request_build_uploads_nothing(tmp_path: Path) -> None:
    status, log, records = run_win_build(tmp_path, _config(), IS_PR_BUILD="True")
    assert status == 0, log[-3000:]
    assert "upload_package" not in [r["tool"] for r in records]
