"""recipe/bld.bat under Wine where Microsoft's cmd differs from what Wine's hid (issue 49).

A crashing Windows program exits with a negative NTSTATUS (0xC0000005, an access violation,
is -1073741819), for which `if errorlevel 1` is false: each program bld.bat and the files it
runs start is made to crash in turn (tests/fixtures/wine/launcher.c, after the program ran
and wrote its output), and its stage must fail with the crash's status, passed on unchanged
from file to file. One work directory, a CUDA configuration in the scikit-build-core layout
(the widest set of programs: the architecture list, `cmake --install`, the activation
scripts). The programs bld_common.bat runs before every stage's file (the preamble) crash in
the compile stage only. The top-level build's script is conda-build's LF-only
conda_build.bat (tests/helpers/wine/harness.py), which must only hand over to the recipe's
CRLF bld.bat.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.feedstock_matrix import need
from helpers.minitorch.support import SCIKIT_BUILD_CORE, Interpreter, two_interpreters
from helpers.wine.harness import PYBIND11, RECIPE_DIR, Output, WineCondaBuild, host_python, stage
from helpers.wine.machine import windows
from helpers.wine.products import miniature_products

pytestmark = pytest.mark.slow

#: A crash's status, 0xC0000005 (-1073741819 to cmd), as `wine cmd` exits with it: its low 8
#: bits. Another failing status would mean a file on the way lost it (Wine's `call` gives 1).
CRASHED = 0xC0000005 & 0xFF
#: The programs the preamble runs (before the stage's file): their checks are the compile stage's.
PREAMBLE = ("cuda_arch_list.py", "CMAKE_ARGS", "build_jobs.py")


@dataclass
class Work:
    build: WineCondaBuild
    other: Interpreter
    compiled: Output | None = None
    libtorch: Output | None = None
    #: Each stage's programs in the order it runs them, as launcher.c logs them.
    calls: dict[str, list[str]] = field(default_factory=dict)

    def run(self, name: str, extra: dict[str, str]) -> Output:
        build, env = self.build, {**stage(name), **extra}
        if name == "pytorch":
            assert self.libtorch is not None
            return build.run_output(
                "pytorch", self.other, env, host=[self.libtorch], host_files=PYBIND11
            )
        return build.run_output(
            "libtorch-build" if name == "compile" else name, build.megabuild, env
        )


def _crash(log: Path, at: int) -> dict[str, str]:
    log.unlink(missing_ok=True)
    return {"WINE_STANDIN_CALLS": windows(log), "WINE_STANDIN_CRASH_AT": str(at)}


def _calls(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Work:
    root = tmp_path_factory.mktemp("wine-crash")
    config = need(platform="win-64", cuda=True)
    first, second = two_interpreters()
    build = WineCondaBuild(
        root,
        layout=SCIKIT_BUILD_CORE,
        products=miniature_products(root / "products", cuda=True),
        variant={"blas_impl": "mkl", "cuda_compiler_version": config.cuda},
        megabuild=host_python(first, SCIKIT_BUILD_CORE),
    )
    log = root / "calls.txt"
    work = Work(build, host_python(second, SCIKIT_BUILD_CORE))
    # The compile stage's programs as every crash run below meets them: in a kept tree,
    # whose ABI it checks first (cmake_cache check-abi), so once compiled beforehand.
    assert work.run("compile", {}).returncode == 0
    for name in ("compile", "libtorch", "pytorch"):
        out = work.run(name, _crash(log, 0))
        assert out.returncode == 0, out.log[-3000:]
        if name == "compile":
            work.compiled = out
        if name == "libtorch":
            work.libtorch = out
        work.calls[name] = _calls(log)
    return work


def test_the_top_level_builds_lf_only_script_hands_over_to_the_recipes_crlf_file(
    work: Work,
) -> None:
    script = (work.build.src_dir / "conda_build.bat").read_bytes()
    assert b"\r" not in script
    assert script.endswith((RECIPE_DIR / "bld.bat").read_bytes().replace(b"\r\n", b"\n"))
    assert all(
        line.endswith(b"\r") for line in (RECIPE_DIR / "bld.bat").read_bytes().split(b"\n")[:-1]
    )
    out = work.compiled
    assert out is not None
    # The copy ran up to the hand-over only; the recipe's file ran everything after it.
    assert out.log.count('set "RECIPE_FILE=recipe\\bld.bat"') == 1, out.log[-3000:]
    assert 'cmd /d /s /c ""' in out.log


@pytest.mark.parametrize("name", ["compile", "libtorch", "pytorch"])
def test_a_crash_of_any_program_a_stage_runs_fails_the_stage(work: Work, name: str) -> None:
    calls = work.calls[name]
    checked = [
        number
        for number, call in enumerate(calls, start=1)
        if name == "compile" or not any(marker in call for marker in PREAMBLE)
    ]
    assert len(checked) >= 4, calls
    log = work.build.root / "crash-calls.txt"
    went_on, changed = [], []
    try:
        marker = work.build.src_dir / "_stage" / "compiled"
        for number in checked:
            if name == "compile":
                marker.unlink(missing_ok=True)  # the previous run's; a crash must not write it
            out = work.run(name, _crash(log, number))
            if not log.exists():
                # Not one program started, not even the first (CI saw it once, at load, with
                # no output kept): Wine's, not the script's; the same run once more.
                out = work.run(name, _crash(log, number))
            assert log.exists(), f"no program of the {name} stage started:\n{out.log[-3000:]}"
            ran = _calls(log)
            crashed = ran[number - 1]
            assert crashed == calls[number - 1]  # the same program as in the run without a crash
            # The stage stops with a failing status right after the crashed program.
            if out.returncode == 0 or len(ran) > number:
                went_on.append(crashed)
            elif out.returncode != CRASHED:
                changed.append(f"{crashed}: {out.returncode}")
            if name == "compile":
                assert not marker.exists(), crashed
    finally:
        if name == "compile":  # the work directory compiled again for the other stages
            assert work.run(name, {}).returncode == 0
    assert went_on == [], f"the {name} stage went on after these programs crashed: {went_on}"
    assert changed == [], f"the {name} stage failed with another status than the crash's"
