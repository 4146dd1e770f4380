""".scripts/run_win_build.bat run by Wine's cmd up to the build and upload (issue 42).

tests/fixtures/wine/ci_job.py's ``run_win_build`` runs the unmodified script in a feedstock
whose path has a space and ``(x86)``, started from another folder, with micromamba already
in place (no download), stand-ins for conda's activate.bat and conda-forge-ci-setup's
run_conda_forge_build_setup, and the programs it runs recording their command lines. What
it hands conda-build and upload_package is compared with what conda-smithy's template
(conda_smithy/templates/run_win_build.bat.tmpl) passes: ``conda-build.exe "recipe" -m
.ci_support\\%CONFIG%.yaml --suppress-variables %EXTRA_CB_OPTIONS%`` and ``upload_package
--validate --feedstock-name="%FEEDSTOCK_NAME%" .\\ ".\\recipe" .ci_support\\%CONFIG%.yaml``, here
with absolute paths.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.feedstock_matrix import need
from fixtures.wine.ci_job import FEEDSTOCK, run_win_build
from fixtures.wine.machine import windows

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _config() -> Path:
    return ROOT / ".ci_support" / f"{need(platform='win-64').name}.yaml"


@pytest.fixture(scope="module")
def ci_job(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("win-ci")
    status, log, records = run_win_build(root, _config())
    return root / FEEDSTOCK, status, log, {r["tool"]: r for r in records}


def test_the_script_runs_to_its_end_and_marks_the_build_done(ci_job) -> None:
    feedstock, status, log, _ = ci_job
    assert status == 0, log[-3000:]
    done = feedstock / "build_artifacts" / f"conda-forge-build-done-{_config().stem}"
    assert done.is_file()


def test_micromamba_provisions_conda_build_into_miniforge_home(ci_job) -> None:
    feedstock, _, _, records = ci_job
    args = records["micromamba"]["args"]
    assert args[:4] == ["create", "--yes", "--quiet", "--prefix"]
    assert Path(args[4]) == feedstock.parents[1] / "Miniforge3"
    assert {"python=3.12", "conda-build>=25.1", "conda-forge-ci-setup=4"} <= set(args)


def test_conda_build_gets_the_recipe_and_the_config_as_conda_smithys_script_passes_them(
    ci_job,
) -> None:
    feedstock, _, _, records = ci_job
    assert "conda" in records  # run by run_conda_forge_build_setup
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
    assert not list((tmp_path / FEEDSTOCK / "build_artifacts").glob("*done*"))


def test_a_pull_request_build_uploads_nothing(tmp_path: Path) -> None:
    status, log, records = run_win_build(tmp_path, _config(), IS_PR_BUILD="True")
    assert status == 0, log[-3000:]
    assert "upload_package" not in [r["tool"] for r in records]


def test_the_ci_setup_runs_in_the_feedstock_root_with_the_base_environment_active(ci_job) -> None:
    # run_conda_forge_build_setup reads conda-forge.yml and .ci_support from the current
    # directory and runs `conda.exe config --env`: the script was started from elsewhere.
    feedstock, _, _, records = ci_job
    setup = records["conda"]
    assert Path(setup["cwd"]) == feedstock
    assert Path(setup["env"]["CONDA_PREFIX"]) == feedstock.parents[1] / "Miniforge3"
    activated = feedstock.parents[1] / "Miniforge3" / "etc" / "conda" / "activate.d"
    assert (activated / "conda-forge-ci-setup-activate.bat").is_file()


def test_conda_build_writes_into_build_artifacts_where_the_done_marker_is(ci_job) -> None:
    # The CI setup sets CONDA_BLD_PATH=C:\bld\ where it is unset, and conda-build prefers it
    # to the condarc's root-dir.
    feedstock, _, _, records = ci_job
    assert Path(records["conda-build"]["env"]["CONDA_BLD_PATH"]) == feedstock / "build_artifacts"


#: conda-smithy's conda_smithy/templates/run_win_build.bat.tmpl, its steps in order: provision
#: the base environment, activate it (`call "%MINIFORGE_HOME%\Scripts\activate.bat"`), write
#: the condarc (setup_conda_rc), run the CI setup (run_conda_forge_build_setup, which leaves
#: CONDA_BLD_PATH to be set first), build, upload. The template runs from the feedstock's
#: root (its paths are relative); this script changes to it first.
TEMPLATE_STEPS = ("root", "provision", "activate", "condarc", "CONDA_BLD_PATH", "setup", "build")
STEP_LINES = {
    "root": 'pushd "%FEEDSTOCK_ROOT%"',
    "provision": '"%MICROMAMBA%" create ',
    "activate": 'call "%MINIFORGE_HOME%\\Scripts\\activate.bat"',
    "condarc": ') > "%MINIFORGE_HOME%\\.condarc"',
    "CONDA_BLD_PATH": 'set "CONDA_BLD_PATH=%ARTIFACTS%"',
    "setup": "call run_conda_forge_build_setup",
    "build": 'call %BUILD_CMD% "%RECIPE_ROOT%"',
    "upload": "call upload_package ",
}


def test_the_scripts_steps_come_in_the_order_of_conda_smithys_template() -> None:
    lines = (ROOT / ".scripts" / "run_win_build.bat").read_text().splitlines()
    where = {}
    for step, text in STEP_LINES.items():
        found = [i for i, line in enumerate(lines) if line.strip().startswith(text)]
        assert len(found) == 1, (step, text)
        where[step] = found[0]
    assert sorted(TEMPLATE_STEPS, key=where.get) == list(TEMPLATE_STEPS)
    assert where["build"] < where["upload"]


def test_the_programs_run_in_the_order_of_conda_smithys_template(ci_job) -> None:
    feedstock, _, _, _ = ci_job
    root = feedstock.parents[1]
    records = [json.loads(line) for line in (root / "records.jsonl").read_text().splitlines()]
    assert [r["tool"] for r in records] == ["micromamba", "conda", "conda-build", "upload_package"]
    # Everything after the provisioning runs in the activated base environment.
    assert {r["env"]["CONDA_PREFIX"] for r in records[1:]} == {str(root / "Miniforge3")}


def test_a_crash_of_a_program_the_script_runs_stops_the_job_there(tmp_path: Path) -> None:
    # A crash exits with a negative status (-1073741819), for which `if errorlevel 1` is
    # false: tests/fixtures/wine/launcher.c crashes the Nth program after it ran.
    calls = tmp_path / "calls.txt"
    status, log, _ = run_win_build(tmp_path / "plain", _config(), WINE_STANDIN_CALLS=windows(calls))
    assert status == 0, log[-3000:]
    names = [line.split("\t", 1)[0] for line in calls.read_text().splitlines()]
    went_on = []
    for tool in ("micromamba", "conda-build", "upload_package"):
        number = names.index(tool) + 1
        calls.unlink()
        root = tmp_path / tool
        status, _, _ = run_win_build(
            root, _config(), WINE_STANDIN_CALLS=windows(calls), WINE_STANDIN_CRASH_AT=str(number)
        )
        done = list((root / FEEDSTOCK / "build_artifacts").glob("*done*"))
        if status == 0 or done or len(calls.read_text().splitlines()) > number:
            went_on.append(tool)
    assert went_on == []
