"""The embedded engine's refusals and failures, as a user without Docker meets them (issue 35).

A copy of this feedstock as tests/fixtures/e2e_feedstock.py makes it for the embedded engine
(no container engine or conda-build on PATH; the miniature packed as PyTorch's release archive
in a source cache). What goes wrong before the build (a wrong archive, an empty channel, a
config of another platform) is one `error:` line that leaves build_artifacts/ as it was; a
build whose solve fails is recorded, and `--why` names the solver failure.
The builds that succeed are tests/test_e2e_real_engine.py's.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import warnings
from pathlib import Path

import pytest
from fixtures.e2e_feedstock import REPO, E2EFeedstock, narrowed_config

from tools.foundation.files import sha256_of
from tools.recipe import release

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
        reason="the configs are linux-64's",
    ),
]

CPU = "linux_64_blas_implgenericc_compiler_version15c_stdlib_version2.17*"
ARM = "linux_aarch64_c_compiler_version15c_stdlib_version2.17*"
NOARCH_RECIPE = """\
package:
  name: unrelated
  version: "1.0"
build:
  noarch: generic
  script:
    - mkdir -p $PREFIX/share && echo unrelated > $PREFIX/share/unrelated.txt
"""


@pytest.fixture(scope="module")
def one_package_channel(tmp_path_factory) -> Path:
    """A channel holding one package the recipe does not need: every solve fails there."""
    import rattler_build
    from rattler.index import index_fs

    tmp = tmp_path_factory.mktemp("channel")
    (tmp / "empty" / "noarch").mkdir(parents=True)
    asyncio.run(index_fs(tmp / "empty"))
    (tmp / "recipe").mkdir()
    (tmp / "recipe" / "recipe.yaml").write_text(NOARCH_RECIPE)
    with warnings.catch_warnings():  # build_recipes: the call the engine makes, too
        warnings.simplefilter("ignore", DeprecationWarning)
        rattler_build.build_recipes(
            [str(tmp / "recipe" / "recipe.yaml")],
            channel=[(tmp / "empty").as_uri()],
            output_dir=str(tmp / "channel"),
            test="skip",
        )
    return tmp / "channel"


@pytest.fixture
def feedstock(tmp_path: Path, one_package_channel: Path) -> E2EFeedstock:
    fs = E2EFeedstock.make_embedded(tmp_path, CPU, one_package_channel)
    # What an earlier run left: a refusal must not touch it.
    fs.artifacts.mkdir()
    (fs.artifacts / "summary.json").write_text('{"version": 1, "configs": {}}\n')
    return fs


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): sha256_of(p) for p in folder.rglob("*") if p.is_file()}


def _refused(fs: E2EFeedstock, *args: str) -> str:
    """The one error line of a refused run, after checking it left build_artifacts/ alone."""
    before = _tree(fs.artifacts)
    result = fs.run(*args, timeout=300)
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ")
    assert _tree(fs.artifacts) == before
    return line


def _source_cache(fs: E2EFeedstock) -> Path:
    return Path(fs.args[fs.args.index("--source-cache") + 1])


def test_an_archive_that_is_not_the_recipes_is_refused_with_both_sums(fs_wrong_archive) -> None:
    fs, expected, found = fs_wrong_archive
    line = _refused(fs, fs.config, *fs.args)
    assert expected in line and found in line and "--fetch-sources" in line


@pytest.fixture
def fs_wrong_archive(feedstock: E2EFeedstock) -> tuple[E2EFeedstock, str, str]:
    [archive] = _source_cache(feedstock).iterdir()
    expected = sha256_of(archive)
    archive.write_bytes(archive.read_bytes() + b"\0")  # one byte more: another archive
    return feedstock, expected, sha256_of(archive)


def test_an_empty_channel_is_refused(feedstock: E2EFeedstock, tmp_path: Path) -> None:
    empty = tmp_path / "mirror"
    (empty / "linux-64").mkdir(parents=True)
    args = ("--channel", str(empty), "--source-cache", str(_source_cache(feedstock)))
    line = _refused(feedstock, feedstock.config, *args)
    assert f"--channel {empty}: no packages in it" in line


@pytest.fixture
def damaged_channel(one_package_channel: Path, tmp_path: Path) -> tuple[Path, str]:
    """The channel with a package cut short (a copy that stopped halfway), newer than its
    repodata.json, so the run indexes the folder again."""
    import shutil

    mirror = tmp_path / "mirror"
    shutil.copytree(one_package_channel, mirror)
    [good] = mirror.glob("noarch/*.conda")
    cut = mirror / "linux-64" / "foo-1.0-0.conda"
    cut.parent.mkdir(exist_ok=True)
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    return mirror, "linux-64/foo-1.0-0.conda"


@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)], ids=["run", "dry-run"])
def test_a_damaged_package_in_the_channel_is_refused_naming_it(
    feedstock: E2EFeedstock, damaged_channel: tuple[Path, str], dry_run: tuple[str, ...]
) -> None:
    """Before: py-rattler's indexer panicked (a Rust backtrace, then a Python traceback);
    the dry run said "would build" (issue 43, items 2 and 3)."""
    mirror, name = damaged_channel
    args = ("--channel", str(mirror), "--source-cache", str(_source_cache(feedstock)))
    line = _refused(feedstock, feedstock.config, *args, *dry_run)
    assert f"--channel {mirror}: {name} is not a readable conda package" in line


def test_a_config_of_another_platform_is_refused_before_anything_starts(
    feedstock: E2EFeedstock,
) -> None:
    [source] = sorted((REPO / ".ci_support").glob(ARM + ".yaml"))
    (feedstock.root / ".ci_support" / source.name).write_text(narrowed_config(source))
    line = _refused(feedstock, source.stem, *feedstock.args)
    assert "a linux-aarch64 config, and the embedded engine builds only for this machine" in line


def test_a_failed_solve_is_recorded_and_why_names_it(feedstock: E2EFeedstock) -> None:
    # Before: "no compiler, CMake, linker or test error recognised; the end of the log".
    result = feedstock.build(timeout=600)
    assert result.returncode == 1, result.stderr
    record = json.loads((feedstock.artifacts / "summary.json").read_text())["configs"]
    assert record[feedstock.config]["status"] == "failed"
    why = feedstock.review("why", feedstock.config, timeout=60)
    assert why.returncode == 0, why.stderr
    head = why.stdout.splitlines()[0]
    assert "solver failure" in head, why.stdout


#: A server nobody answers at (port 1: connection refused at once), as an address outside a
#: machine without internet is.
UNREACHABLE = "http://127.0.0.1:1"


def _without(args: tuple[str, ...], flag: str) -> tuple[str, ...]:
    at = args.index(flag)
    return args[:at] + args[at + 2 :]


def _why_after_failed_build(fs: E2EFeedstock, *args: str) -> str:
    result = fs.run(fs.config, *args, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    why = fs.review("why", fs.config, timeout=60)
    assert why.returncode == 0, why.stderr
    return why.stdout


def test_a_source_archive_this_machine_cannot_download_is_named_with_what_to_do(
    feedstock: E2EFeedstock,
) -> None:
    """Before: the log's one error was "Failed to download from URL: Request failed after 3
    retries", no URL, and --why recognised nothing (issue 43, item 1)."""
    from tools.localbuild.engines.airgap import source_of

    path = feedstock.root / "recipe" / "recipe-v1.yaml"
    url = f"{UNREACHABLE}/{source_of(path).name}"
    path.write_text(release.parse(path, path.read_text()).with_field("url", url).text)
    why = _why_after_failed_build(feedstock, *_without(feedstock.args, "--source-cache"))
    head, *_context = why.splitlines()
    assert "download failure" in head, why
    [marked] = [line for line in why.splitlines() if line.startswith(">")]
    assert f"cannot download {url} " in marked and "this machine cannot reach it" in marked
    assert "--fetch-sources DIR" in marked and "--source-cache DIR" in marked


def test_a_channel_this_machine_cannot_reach_is_named_not_called_a_solver_failure(
    feedstock: E2EFeedstock,
) -> None:
    """rattler-build reports an unreachable channel as "Failed to resolve dependencies"."""
    mirror = f"{UNREACHABLE}/conda-forge"
    args = (*_without(feedstock.args, "--channel"), "--channel", mirror)
    why = _why_after_failed_build(feedstock, *args)
    head, *_context = why.splitlines()
    assert "download failure" in head, why
    [marked] = [line for line in why.splitlines() if line.startswith(">")]
    assert f"cannot download from {mirror}: this machine cannot reach it" in marked
    assert "--channel" in marked


def _recipe_url_at(fs: E2EFeedstock, archive: Path) -> None:
    """The recipe's source url pointed at ``archive`` (the release server, for the test)."""
    path = fs.root / "recipe" / "recipe-v1.yaml"
    recipe = release.parse(path, path.read_text())
    path.write_text(recipe.with_field("url", archive.as_uri()).text)


def test_fetch_sources_fills_a_source_cache_with_the_checked_archive(
    feedstock: E2EFeedstock, tmp_path: Path
) -> None:
    [archive] = _source_cache(feedstock).iterdir()
    _recipe_url_at(feedstock, archive)
    result = feedstock.run("--fetch-sources", str(tmp_path / "fetched"), timeout=60)
    assert result.returncode == 0, result.stderr
    assert sha256_of(tmp_path / "fetched" / archive.name) == sha256_of(archive)


def test_fetch_sources_refuses_an_archive_of_another_sha256_and_writes_nothing(
    fs_wrong_archive, tmp_path: Path
) -> None:
    fs, expected, found = fs_wrong_archive
    [archive] = _source_cache(fs).iterdir()
    _recipe_url_at(fs, archive)
    result = fs.run("--fetch-sources", str(tmp_path / "fetched"), timeout=60)
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and expected in line and found in line
    assert list((tmp_path / "fetched").iterdir()) == []
