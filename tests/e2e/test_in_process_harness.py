"""tests/helpers/in_process.py runs the toolkit in the test's process as a child would run it:
its own working directory, environment and streams, the exit status it gives, no state left
behind, and a child wherever the toolkit a child would import is not this one (issue 59)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.in_process import REPO, run_main, run_python, runs_this_toolkit


def test_a_run_gets_its_own_directory_and_environment_and_gives_the_tests_back(
    tmp_path: Path,
) -> None:
    before = (os.getcwd(), dict(os.environ), sys.argv)

    def body() -> int:
        print(os.getcwd(), os.environ.get("ONLY_HERE"), os.environ.get("HOME"), sys.argv[1:])
        return 0

    ran = run_main(body, ["prog", "a", "b"], cwd=tmp_path, env={"ONLY_HERE": "yes"})
    assert ran.stdout == f"{tmp_path} yes None ['a', 'b']\n"
    assert (os.getcwd(), dict(os.environ), sys.argv) == before


def test_what_the_programs_it_starts_print_lands_in_its_streams(tmp_path: Path) -> None:
    def body() -> int:
        print("from python", flush=True)
        subprocess.run(["sh", "-c", "echo from a child; echo to stderr >&2"], check=True)
        print("after it")
        return 0

    ran = run_main(body, ["prog"], cwd=tmp_path)
    assert ran.stdout == "from python\nfrom a child\nafter it\n"
    assert ran.stderr == "to stderr\n"


def test_sys_exit_gives_the_exit_status_as_python_does(tmp_path: Path) -> None:
    assert run_main(lambda: sys.exit(3), ["prog"], cwd=tmp_path).returncode == 3
    said = run_main(lambda: sys.exit("refused"), ["prog"], cwd=tmp_path)
    assert (said.returncode, said.stderr) == (1, "refused\n")
    assert run_main(lambda: None, ["prog"], cwd=tmp_path).returncode == 0


def test_the_toolkits_caches_are_dropped_after_a_run(tmp_path: Path) -> None:
    from tools.smithy import forge_yml

    def body() -> int:
        forge_yml._schema()  # conda-smithy's schema, read once per process
        assert forge_yml._schema.cache_info().currsize == 1
        return 0

    assert run_main(body, ["prog"], cwd=tmp_path).returncode == 0
    assert forge_yml._schema.cache_info().currsize == 0


def test_the_toolkit_runs_here_from_this_checkout_and_a_byte_for_byte_copy(
    tmp_path: Path,
) -> None:
    feedstock = tmp_path / "feedstock"
    shutil.copytree(
        REPO / "tools", feedstock / "tools", ignore=shutil.ignore_patterns("__pycache__")
    )
    assert runs_this_toolkit(REPO, None)
    assert not runs_this_toolkit(feedstock, None)  # no conda-forge.yml: not a feedstock
    shutil.copy2(REPO / "conda-forge.yml", feedstock / "conda-forge.yml")
    assert runs_this_toolkit(feedstock, None)
    edited = feedstock / "tools" / "__init__.py"
    edited.write_text(edited.read_text() + "\n# a fork's edit\n")
    assert not runs_this_toolkit(feedstock, None)


def test_an_edited_toolkit_runs_as_a_child_and_says_so(tmp_path: Path) -> None:
    feedstock = tmp_path / "feedstock"
    shutil.copytree(
        REPO / "tools", feedstock / "tools", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy2(REPO / "conda-forge.yml", feedstock / "conda-forge.yml")
    main = feedstock / "tools" / "__main__.py"
    future = "from __future__ import annotations\n"
    main.write_text(main.read_text().replace(future, future + 'print("the fork\'s toolkit")\n', 1))
    ran = run_python([sys.executable, "-m", "tools", "--version"], cwd=feedstock)
    assert ran.stdout.startswith("the fork's toolkit\n"), ran.stdout + ran.stderr
