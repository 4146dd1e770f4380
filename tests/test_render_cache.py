"""Renders kept on disk (tools/foundation/diskcache.py): a second command reads them, and every
input they are computed from -- the recipe files, the variant file, conda-forge.yml, the pinning and
migrations, the toolkit and the engine's version -- makes a new entry when it changes.

The tests render the miniature feedstocks of tests/fixtures/recipes (torchlike for meta.yaml,
v1-staging for rattler-build) in a copy, with a cache folder of their own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.foundation import diskcache
from tools.render.config import render_config

FIXTURES = Path(__file__).parent / "fixtures" / "recipes"
REPO = Path(__file__).resolve().parent.parent
CPU = "linux_64_blas_implgenericc_compiler_version15cuda_compiler_versionNonecxx_compiler_version15"
AARCH64 = "linux_aarch64_c_compiler_version15cuda_compiler_versionNonecxx_compiler_version15"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(diskcache.ENV, str(folder))
    return folder


@pytest.fixture
def torchlike(tmp_path: Path) -> Path:
    root = tmp_path / "torchlike"
    shutil.copytree(FIXTURES / "torchlike", root)
    return root


def _entries(cache: Path, kind: str = "render") -> int:
    folder = cache / kind
    return len(list(folder.glob("*.pickle"))) if folder.is_dir() else 0


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, path
    path.write_text(text.replace(old, new, 1))


def test_a_second_render_is_read_from_disk(
    cache: Path, torchlike: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = render_config(CPU, root=torchlike)
    assert _entries(cache) == 1

    def no_render(*args, **kwargs):
        raise AssertionError("rendered again although nothing changed")

    monkeypatch.setattr("tools.render.config._render_uncached", no_render)
    assert render_config(CPU, root=torchlike) == first


def test_an_edit_to_meta_yaml_renders_again(cache: Path, torchlike: Path) -> None:
    assert {o.build_number for o in render_config(CPU, root=torchlike)} == {3, 53}
    _edit(torchlike / "recipe" / "meta.yaml", "{% set build = 3 %}", "{% set build = 4 %}")
    assert {o.build_number for o in render_config(CPU, root=torchlike)} == {4, 54}
    assert _entries(cache) == 2


@pytest.mark.parametrize("name", ["build.sh", "conda_build_config.yaml"])
def test_an_edit_to_any_recipe_file_renders_again(cache: Path, torchlike: Path, name) -> None:
    render_config(CPU, root=torchlike)
    with (torchlike / "recipe" / name).open("a") as stream:
        stream.write("\n# edited\n")
    render_config(CPU, root=torchlike)
    assert _entries(cache) == 2


def test_an_edit_to_the_variant_file_renders_again(cache: Path, torchlike: Path) -> None:
    render_config(CPU, root=torchlike)
    config = torchlike / ".ci_support" / f"{CPU}.yaml"
    _edit(config, "channel_targets:\n- conda-forge main", "channel_targets:\n- conda-forge rc")
    outputs = render_config(CPU, root=torchlike)
    assert _entries(cache) == 2
    assert {o.variant.get("channel_targets") for o in outputs} == {"conda-forge rc"}


def test_an_edit_to_conda_forge_yml_renders_again(cache: Path, torchlike: Path) -> None:
    assert {o.build_platform for o in render_config(AARCH64, root=torchlike)} == {"linux-64"}
    _edit(torchlike / "conda-forge.yml", "linux_aarch64: linux_64", "linux_aarch64: linux_aarch64")
    assert {o.build_platform for o in render_config(AARCH64, root=torchlike)} == {"linux-aarch64"}
    assert _entries(cache) == 2


def test_another_toolkit_renders_again(
    cache: Path, torchlike: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    render_config(CPU, root=torchlike)
    monkeypatch.setattr(diskcache, "toolkit_fingerprint", lambda: "an edited tools/")
    render_config(CPU, root=torchlike)
    assert _entries(cache) == 2


def test_the_toolkit_fingerprint_covers_its_source_and_the_engine_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compute = diskcache.toolkit_fingerprint.__wrapped__
    here = compute()
    installed = diskcache.installed_versions(diskcache.LIBRARIES)
    assert any(name.startswith("py_rattler_build-") for name in installed)
    other = [n.replace("py_rattler_build-", "py_rattler_build-0.0.") for n in installed]
    monkeypatch.setattr(diskcache, "installed_versions", lambda names: other)
    assert compute() != here
    monkeypatch.undo()
    toolkit = tmp_path / "tools"
    shutil.copytree(REPO / "tools", toolkit, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(diskcache, "TOOLKIT", toolkit)
    assert compute() == here
    _edit(toolkit / "recipe" / "selectors.py", '"""', '"""Edited. ')
    assert compute() != here


def test_a_switched_feedstock_is_cached_and_keyed_on_recipe_yaml(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("rattler_build", reason="py-rattler-build is not installed")
    root = tmp_path / "v1"
    shutil.copytree(FIXTURES / "v1-staging", root)
    config = "linux_64_cuda_compiler_versionNone"
    first = render_config(config, root=root)
    _edit(root / "recipe" / "recipe.yaml", 'version: "1.4.2"', 'version: "1.4.3"')
    second = render_config(config, root=root)
    assert {o.version for o in first} == {"1.4.2"} and {o.version for o in second} == {"1.4.3"}
    assert _entries(cache) == 2


def test_a_matrix_is_keyed_on_the_pinning_and_the_migrations(
    cache: Path, torchlike: Path, tmp_path: Path
) -> None:
    from tools.rerender import compute_matrix, locate_pinning

    pinning_dir = tmp_path / "pinning"
    shutil.copytree(FIXTURES / "pinning-mini", pinning_dir)
    pinning = locate_pinning(str(pinning_dir))
    compute_matrix(torchlike, torchlike / "recipe", pinning)
    compute_matrix(torchlike, torchlike / "recipe", pinning)
    assert _entries(cache, "matrix") == 1
    with (pinning_dir / "conda_build_config.yaml").open("a") as stream:
        stream.write("\n# edited\n")
    compute_matrix(torchlike, torchlike / "recipe", pinning)
    assert _entries(cache, "matrix") == 2
    upstream = next((pinning_dir / "share" / "conda-forge" / "migrations").glob("*.yaml"))
    with upstream.open("a") as stream:
        stream.write("\n# edited\n")
    compute_matrix(torchlike, torchlike / "recipe", pinning)
    assert _entries(cache, "matrix") == 3
    local = next((torchlike / ".ci_support" / "migrations").glob("*.yaml"))
    with local.open("a") as stream:
        stream.write("\n# edited\n")
    compute_matrix(torchlike, torchlike / "recipe", pinning)
    assert _entries(cache, "matrix") == 4


def test_a_damaged_entry_is_a_miss(cache: Path, torchlike: Path) -> None:
    first = render_config(CPU, root=torchlike)
    (entry,) = (cache / "render").glob("*.pickle")
    entry.write_bytes(entry.read_bytes()[:100])  # cut short, as by a crash
    assert render_config(CPU, root=torchlike) == first


def test_the_cache_can_be_turned_off(
    tmp_path: Path, torchlike: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(diskcache.ENV, "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    render_config(CPU, root=torchlike)
    assert not (tmp_path / "xdg").exists()


# Two processes store and load one key as fast as they can: a reader never sees half an entry.
RACE = """
import sys
sys.path.insert(0, {repo!r})
from tools.foundation import diskcache
key = diskcache.Key("race").add("same", "key")
value = [{me} * 1000] * 2000
seen = set()
for _ in range(150):
    diskcache.store(key, value)
    got = diskcache.load(key)
    assert got is not None and len(got) == 2000 and len(set(map(len, got))) == 1, "partial entry"
    seen.add(got[0][0])
print(sorted(seen))
"""


def test_two_processes_storing_one_entry_never_read_half_of_it(cache: Path) -> None:
    env = {**os.environ, diskcache.ENV: str(cache)}
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACE.format(repo=str(REPO), me=repr(f"p{n}"))],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (1, 2)
    ]
    for racer in racers:
        _, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err
    assert [p.suffix for p in (cache / "race").iterdir()] == [".pickle"]  # no temporary left


def test_an_environment_variable_a_v1_recipe_reads_is_part_of_the_key(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("rattler_build", reason="py-rattler-build is not installed")
    root = tmp_path / "v1"
    shutil.copytree(FIXTURES / "v1-staging", root)
    _edit(
        root / "recipe" / "recipe.yaml",
        "context:\n",
        'context:\n  note: ${{ env.get("FEEDSTOCK_NOTE", default="none") }}\n',
    )
    config = "linux_64_cuda_compiler_versionNone"
    monkeypatch.setenv("FEEDSTOCK_NOTE", "one")
    render_config(config, root=root)
    render_config(config, root=root)
    assert _entries(cache) == 1
    monkeypatch.setenv("FEEDSTOCK_NOTE", "two")
    render_config(config, root=root)
    assert _entries(cache) == 2
