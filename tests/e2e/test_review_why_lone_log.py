"""``python -m tools review why`` on a config's log alone (issue 60): build_artifacts/ after an
interrupted run holds the log and no summary.json, and a log downloaded from a CI job comes
without its batch.

The log holds what conda-build prints when the host environment cannot be solved, as conda-build
26.7.1 printed it here (the oracle, a recipe whose host asks for a libabseil no channel has;
trimmed of its middle frames): ``get_install_actions`` turns the solver's error into
``DependencyNeedsBuildingError``, whose message is ``Unsatisfiable dependencies for platform
<subdir>: <the specs>`` (conda/conda-build @0fe68a2, conda_build/environ.py and
conda_build/exceptions.py), and the ``conda-build`` entry point
(``conda_build.cli.main_build:execute``) catches nothing, so Python prints both tracebacks.
build-locally.py's log is written by its own LogSink (a header, then ``[HH:MM:SS] line``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.fake_engine_feedstock import CPU, Feedstock

from tools.localbuild.engines.watch.logtee import LogSink

LABEL = "linux-64 cpu"
CONDA_BUILD_OUTPUT = """\
Adding in variants from internal_defaults
Attempting to finalize metadata for libtorch
Collecting package metadata (repodata.json): ...working... done
Solving environment: ...working... failed

Leaving build/test directories:
  Work:
 /home/conda/feedstock_root/build_artifacts/libtorch-split_1765100000000/work
Traceback (most recent call last):
  File "/opt/conda/lib/python3.12/site-packages/conda_build/environ.py", line 896, in get_install_actions
    _actions = _install_actions(prefix, index, specs, subdir=subdir)
  File "/opt/conda/lib/python3.12/site-packages/conda/resolve.py", line 342, in verify_specs
    raise ResolvePackageNotFound(bad_deps)
conda.exceptions.ResolvePackageNotFound:
  - libabseil=20260526

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/opt/conda/bin/conda-build", line 6, in <module>
    sys.exit(execute())
  File "/opt/conda/lib/python3.12/site-packages/conda_build/environ.py", line 899, in get_install_actions
    raise DependencyNeedsBuildingError(exc, subdir=subdir)
conda_build.exceptions.DependencyNeedsBuildingError: Unsatisfiable dependencies for platform linux-64: {'libabseil=20260526'}
"""  # noqa: E501 (conda-build's lines as it prints them)
ERROR = "conda_build.exceptions.DependencyNeedsBuildingError: Unsatisfiable dependencies"


def write_log(path: Path) -> Path:
    """The log as build-locally.py writes it, with build-locally's LogSink."""
    sink = LogSink(path, secrets=(), clock=lambda: 1765100000.0)
    sink.header([("config", CPU)])
    for line in CONDA_BUILD_OUTPUT.splitlines():
        sink.line(line)
    sink.close()
    return path


@pytest.fixture
def feedstock(tmp_path: Path) -> Feedstock:
    return Feedstock(tmp_path)


def _solver_failure(stdout: str, log: Path) -> None:
    head, *context, shown = stdout.strip().splitlines()
    assert head.startswith(f"{LABEL} (a log without summary.json): solver failure at line ")
    number = int(head.rsplit("line ", 1)[1].split()[0])
    [error] = [line[2:] for line in context if line.startswith("> ")]
    assert ERROR in error and log.read_text().splitlines()[number - 1] == error
    assert shown == f"log: {log}"


def test_why_reads_the_configs_lone_log_in_build_artifacts(feedstock: Feedstock) -> None:
    log = write_log(feedstock.artifacts / f"{CPU}-log.txt")
    result = feedstock.review("why", LABEL)
    assert result.returncode == 0, result.stderr
    _solver_failure(result.stdout, log)


def test_why_reads_a_log_file_given_for_the_folder(feedstock: Feedstock, tmp_path: Path) -> None:
    # As downloaded from a CI job: any name, anywhere, and no batch around it.
    log = write_log(tmp_path / "downloads" / "job-logs.txt")
    result = feedstock.review("why", LABEL, str(log))
    assert result.returncode == 0, result.stderr
    _solver_failure(result.stdout, log)


def test_a_log_named_for_another_config_is_refused_in_one_line(
    feedstock: Feedstock, tmp_path: Path
) -> None:
    log = write_log(tmp_path / f"{CPU}-log.txt")
    result = feedstock.review("why", "linux-aarch64", str(log))
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert f"the log of {CPU}, not of linux_aarch64" in line


def test_a_folder_without_summary_or_the_configs_log_is_one_line(feedstock: Feedstock) -> None:
    write_log(feedstock.artifacts / f"{CPU}-log.txt")
    result = feedstock.review("why", "linux-aarch64")
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert "no summary.json and no linux_aarch64" in line and "-log.txt" in line
