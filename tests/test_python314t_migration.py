"""conda-forge's python314t migration added to a copy of this feedstock: free-threaded 3.14t.

The migration file is conda-forge's own (tests/fixtures/reference/pinning, kept byte for byte):
``key_add`` of ``python: 3.14.* *_cp314t`` with ``is_freethreading: true``, waiting for
``python314``, which this feedstock carries. With it in ``.ci_support/migrations/``, ``matrix
--write`` gives every config a sixth Python; both recipes then render a ``pytorch`` for 3.14t
beside the one for 3.14 that only a free-threaded Python can install (``python_abi 3.14.*
*_cp314t``), and no package name of the default matrix moves (tests/test_default_names.py
holds them without the migration).
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml
from fixtures import feedstock_matrix
from fixtures.cache import cached_dir
from fixtures.cli import REPO, run_tools
from fixtures.default_names import GOLDEN
from fixtures.recipe_release import current

from tools.foundation.errors import UserError
from tools.render.config import list_configs, render_config
from tools.smithy.forge_yml import load_forge_yml

rattler_build = pytest.importorskip("rattler_build", reason="py-rattler-build renders recipe-v1")

MIGRATION = "python314t.yaml"
FREE = "3.14.* *_cp314t"
GIL = "3.14.* *_cp314"


def tools(*args: str, cwd: Path):
    return run_tools(*args, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.fixture(scope="module")
def migrated(tmp_path_factory, pinning_dir: Path):
    """This feedstock with conda-forge's python314t.yaml added and ``matrix --write`` run."""
    root = tmp_path_factory.mktemp("py314t") / "pytorch-feedstock"
    for name in ("recipe", ".ci_support"):
        shutil.copytree(REPO / name, root / name)
    for name in ("conda-forge.yml", "README.md"):
        shutil.copy(REPO / name, root / name)
    migration = pinning_dir / "share" / "conda-forge" / "migrations" / MIGRATION
    shutil.copy(migration, root / ".ci_support" / "migrations" / MIGRATION)
    result = tools("matrix", "--pinning", str(pinning_dir), "--write", cwd=root)
    assert result.returncode == 0, result.stderr
    return root, result.stdout


def _config(root: Path, name: str) -> dict:
    return yaml.safe_load((root / ".ci_support" / f"{name}.yaml").read_text())


def test_write_adds_314t_to_every_config_and_no_config(migrated) -> None:
    root, stdout = migrated
    names = list_configs(REPO)
    assert list_configs(root) == names  # python splits no CI job: the same golden names
    for name in names:
        assert f"updated: .ci_support/{name}.yaml" in stdout
        pythons = _config(root, name)["python"]
        assert pythons[-2:] == [GIL, FREE], name
        assert [p for p in pythons if p != FREE] == _config(REPO, name)["python"]


def test_check_passes_on_what_write_wrote(migrated, pinning_dir) -> None:
    root, _ = migrated
    result = tools("matrix", "--pinning", str(pinning_dir), "--check", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_readme_table_names_314t_after_the_gil_pythons(migrated) -> None:
    root, _ = migrated
    table = (root / "README.md").read_text().split("<!-- matrix-table:start -->")[1]
    rows = [line for line in table.split("<!-- matrix-table:end -->")[0].splitlines()[3:] if line]
    assert len(rows) == len(list_configs(root))
    assert all("3.14, 3.14t |" in row or "3.14-" in row for row in rows)
    assert all(", 3.14t | " in row for row in rows), rows[0]


def test_explain_shows_314t_as_its_own_python(migrated) -> None:
    root, _ = migrated
    result = tools("explain", "--json", cwd=root)
    assert result.returncode == 0, result.stderr
    for job in json.loads(result.stdout):
        assert job["pythons"][-2:] == ["3.14", "3.14t"], job["config"]
        pytorch = next(p for p in job["packages"] if p["name"] == "pytorch")
        assert pytorch["count"] == len(job["pythons"])


def _pytorch(outputs, python: str):
    [found] = [o for o in outputs if o.name == "pytorch" and o.variant.get("python") == python]
    return found


def test_meta_yaml_renders_a_314t_pytorch_only_a_free_threaded_python_installs(migrated) -> None:
    root, _ = migrated
    for config in list_configs(root):
        outputs = [o for o in render_config(config, root=root) if not o.skip]
        free, gil = _pytorch(outputs, FREE), _pytorch(outputs, GIL)
        assert "python_abi 3.14.* *_cp314t" in free.requirements["run"], config
        assert "python_abi 3.14.* *_cp314" in gil.requirements["run"], config
        assert f"python {FREE}" in free.requirements["host"]
        # conda-build's string says py314 for both: the hash (python is a used key) and the
        # run requirement tell them apart, the build number does not.
        head, tail = free.build_string.split("_py314_h")
        assert gil.build_string.startswith(f"{head}_py314_h")
        assert gil.build_string != free.build_string
        assert gil.build_string.rsplit("_", 1)[1] == tail.rsplit("_", 1)[1]


def test_render_names_which_pytorch_is_free_threaded(migrated) -> None:
    root, _ = migrated
    config = list_configs(root)[0]
    result = tools("render", config, "--output", "pytorch", cwd=root)
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("\npytorch-")
    [free] = [b for b in blocks if "python: 3.14t (free-threaded)" in b]
    [gil] = [b for b in blocks if "python: 3.14 (with the GIL)" in b]
    assert "python_abi 3.14.* *_cp314t" in free and "*_cp314t" not in gil


def _one_per_platform(root: Path) -> list[str]:
    """A config of each platform (the migration covers them all): rattler-build's renders
    cost about 2 s a config, and tests/test_recipe_v1_equivalence.py compares every config's
    other packages already."""
    chosen: dict[str, str] = {}
    for config in feedstock_matrix.configs(root):
        chosen.setdefault(config.platform, config.name)
    return sorted(chosen.values())


def _render_v1(root: Path, config: str):
    from tools.render.config import build_platform_for

    path = root / ".ci_support" / f"{config}.yaml"
    target = _config(root, config)["target_platform"][0]
    platform = rattler_build.PlatformConfig(
        target_platform=target, build_platform=build_platform_for(load_forge_yml(root), target)
    )
    recipe = rattler_build.Stage0Recipe.from_file(root / "recipe" / "recipe-v1.yaml")
    return recipe.render(
        rattler_build.VariantConfig.from_file(str(path)),
        rattler_build.RenderConfig(platform=platform),
    )


def test_the_v1_recipe_renders_the_same_314t_pytorch_as_meta_yaml(migrated) -> None:
    from fixtures.recipe_equivalence import allowed_differences, differences, from_meta, from_v1

    root, _ = migrated
    rows = allowed_differences(root / "recipe" / "README.md")
    for config in _one_per_platform(root):
        meta, skipped = from_meta(render_config(config, root=root))
        v1 = from_v1(_render_v1(root, config))
        [key] = [k for k in v1 if k[0] == "pytorch" and FREE in k[1]]
        assert "python_abi 3.14.* *_cp314t" in v1[key].requirements["run"], config
        found = differences(config, {key: meta[key]}, skipped, {key: v1[key]})
        assert [str(d) for d in found if not any(row.allows(d) for row in rows)] == []


def test_the_migration_moves_no_existing_package_name(migrated) -> None:
    # meta.yaml's names for every config, rattler-build's for one config per platform, as
    # tests/fixtures/default_names.py renders them for tests/test_default_names.py
    from tools.render.config import build_platform_for
    from tools.render.v1 import render_v1_config

    root, _ = migrated
    if not feedstock_matrix.targets_conda_forge(root):
        pytest.skip(
            "the golden names are conda-forge's matrix's; this feedstock builds for its own"
        )
    golden = json.loads(GOLDEN.read_text())
    first = next(iter(golden.values()))["meta.yaml"][0]
    if first.rsplit("-", 2)[1] != current().version:
        pytest.skip(f"{GOLDEN.name} holds another release's names")
    forge = load_forge_yml(root)
    for config in list_configs(root):
        meta = [o for o in render_config(config, root=root) if not o.skip]
        names = {"meta.yaml": [f"{o.name}-{o.version}-{o.build_string}" for o in meta]}
        if config in _one_per_platform(root):
            v1 = render_v1_config(
                root / "recipe" / "recipe-v1.yaml",
                root / ".ci_support" / f"{config}.yaml",
                cbc=root / "recipe" / "conda_build_config.yaml",
                name=config,
                subdir=meta[0].subdir,
                build_subdir=build_platform_for(forge, meta[0].subdir),
            )
            names["recipe-v1.yaml"] = [f"{o.name}-{o.version}-{o.build_string}" for o in v1]
        for recipe, found in names.items():
            added = sorted(set(found) - set(golden[config][recipe]))
            assert set(golden[config][recipe]) <= set(found), (config, recipe)
            assert len(added) == 1 and added[0].startswith("pytorch-"), (config, recipe, added)
            assert "_py314_h" in added[0]


BOT = """\
bot:
  # conda-forge's python314t rebuilds of the release branches (pytorch-cpu-feedstock#533, #534)
  abi_migration_branches:
  - v2.11.x
  - v2.10.x
  {key}: {value}
"""


def test_bot_settings_for_the_migration_validate(tmp_path) -> None:
    text = (REPO / "conda-forge.yml").read_text()
    (tmp_path / "conda-forge.yml").write_text(text + BOT.format(key="automerge", value="false"))
    assert load_forge_yml(tmp_path)["bot"]["abi_migration_branches"] == ["v2.11.x", "v2.10.x"]


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("abi_migration_branch", "[v2.9.x]", "did you mean 'abi_migration_branches'?"),
        ("check_solvable", "[true]", "expected true or false"),
    ],
)
def test_a_bot_setting_the_bot_would_refuse_is_one_line(tmp_path, key, value, problem) -> None:
    text = (REPO / "conda-forge.yml").read_text()
    (tmp_path / "conda-forge.yml").write_text(text + BOT.format(key=key, value=value))
    with pytest.raises(UserError) as raised:
        load_forge_yml(tmp_path)
    message = str(raised.value)
    assert "\n" not in message and problem in message
    line = len(text.splitlines()) + 6
    assert message.startswith(f"{tmp_path / 'conda-forge.yml'}:{line}: bot")


# ---------------------------------------------------------------- upstream's cp314t wheel

_C_314T = "torch/_C.cpython-314t-x86_64-linux-gnu.so"
_C_314 = "torch/_C.cpython-314-x86_64-linux-gnu.so"
_TORCH_PYTHON = "torch/lib/libtorch_python.so"
_WHEEL_META = ("torch-2.15.0.dist-info/WHEEL", "torch-2.15.0.dist-info/METADATA")


@pytest.fixture(scope="module")
def python_part(upstream_cp314t_wheel: Path) -> Path:
    """The part of upstream's cp314t wheel that tells its Python ABI, under the wheel's own
    name: torch/_C, libtorch_python.so and the dist-info, byte for byte (kept in the tests'
    cache). ``tools check`` reads every binary of what it checks, and the whole wheel holds
    2.4 GB of them; python.abi reads these."""
    entry = upstream_cp314t_wheel.parent / (upstream_cp314t_wheel.stem + ".python-abi")
    wanted = (_C_314T, _TORCH_PYTHON, *_WHEEL_META)

    def build(folder: Path) -> None:
        with zipfile.ZipFile(upstream_cp314t_wheel) as source:
            _write_wheel(folder / upstream_cp314t_wheel.name, {n: source.read(n) for n in wanted})

    def complete(found: Path) -> bool:
        path = found / upstream_cp314t_wheel.name
        return path.is_file() and zipfile.is_zipfile(path)

    return cached_dir(entry, build, complete) / upstream_cp314t_wheel.name


def _write_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_layout_of_the_cp314t_wheel_passes_on_a_config_with_314t(
    migrated, upstream_cp314t_wheel
) -> None:
    root, _ = migrated
    result = tools("layout", str(upstream_cp314t_wheel), cwd=root)
    # Only the Python ABI is this test's: the wheel is 2.15.0's, and a recipe bumped to that
    # release compares the rest of the layout too (its verdict is not this test's).
    assert result.returncode in (0, 1), result.stdout[-2000:] + result.stderr
    assert not [line for line in result.stdout.splitlines() if line.startswith("python ABI:")]
    assert (
        "note: Python 3.14t (free-threaded): wheel tag cp314-cp314t, "
        f"{_C_314T}; the config builds pytorch for it"
    ) in result.stdout


def test_layout_of_the_cp314t_wheel_fails_where_no_config_builds_314t(
    upstream_cp314t_wheel,
) -> None:
    result = tools("layout", str(upstream_cp314t_wheel), cwd=REPO)
    assert result.returncode == 1
    [line] = [line for line in result.stdout.splitlines() if line.startswith("python ABI:")]
    assert "a wheel for Python 3.14t (free-threaded), but the config builds pytorch for" in line
    assert line.endswith(", 3.14") and "wheel tag cp314-cp314t" in line


def test_layout_names_both_abis_of_a_gil_extension_in_a_cp314t_wheel(
    upstream_cp314t_wheel,
) -> None:
    from dataclasses import replace

    from tools.layout.replay import Replay, check_python
    from tools.layout.wheel import read_wheel

    wheel = read_wheel(upstream_cp314t_wheel)
    torch = {k.replace(".cpython-314t-", ".cpython-314-"): v for k, v in wheel.torch.items()}
    result = Replay(wheel.platform)
    check_python(replace(wheel, torch=torch), ["3.14", "3.14t"], result)
    [problem] = result.problems
    assert problem.path == _C_314
    assert "Python 3.14 (with the GIL) in a wheel for 3.14t (free-threaded)" in problem.detail
    assert "wheel tag cp314-cp314t" in problem.detail


def _check(wheel: Path, root: Path) -> list[dict]:
    """python.abi's findings on ``wheel`` against a linux-64 config of ``root``, as
    ``python -m tools check --only python.abi --json --config CONFIG WHEEL`` prints them."""
    from tools.commands.layout import default_config
    from tools.layout.wheel import read_wheel

    config = default_config(root, read_wheel(wheel))
    result = tools(
        "check", "--only", "python.abi", "--json", "--config", config, str(wheel), cwd=root
    )
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def _check_here(wheel: Path, root: Path) -> list[dict]:
    """The same in this process (a command's start and imports cost about a second)."""
    from tools.check import load, run_checks
    from tools.check.expectations import from_rendered
    from tools.commands.layout import default_config
    from tools.layout.wheel import read_wheel

    config = default_config(root, read_wheel(wheel))
    expect = from_rendered(render_config(config, root=root), config)
    return [f.to_json() for f in run_checks(load([wheel]), expect, only={"python.abi"})]


def test_check_of_the_cp314t_wheel_agrees_with_a_config_that_builds_314t(
    migrated, python_part
) -> None:
    root, _ = migrated
    [finding] = _check(python_part, root)
    assert finding["status"] == "pass", finding
    assert finding["detail"].startswith(
        "Python 3.14t (free-threaded): wheel tag cp314-cp314t, extension suffix of "
        "_C.cpython-314t-x86_64-linux-gnu.so; config "
    )


def test_check_of_the_cp314t_wheel_fails_on_a_config_without_314t(python_part) -> None:
    [finding] = _check(python_part, REPO)
    assert finding["status"] == "fail"
    assert "a package for Python 3.14t (free-threaded), but config" in finding["detail"]
    assert "python314t migration" in finding["detail"]


def test_free_threaded_code_in_a_gil_tagged_wheel_fails_naming_both(
    migrated, python_part, tmp_path
) -> None:
    # upstream's free-threaded libtorch_python.so (it calls _Py_DecRefShared), in a wheel
    # whose tag and extension suffix say 3.14 with the GIL
    members = _members(python_part)
    members[_C_314] = members.pop(_C_314T)
    gil = _write_wheel(tmp_path / "torch-2.15.0-cp314-cp314-manylinux_2_28_x86_64.whl", members)
    root, _ = migrated
    failed = [f for f in _check_here(gil, root) if f["status"] == "fail"]
    assert [f["path"] for f in failed] == [f"{gil.name}:{_TORCH_PYTHON}"]
    assert failed[0]["detail"] == (
        "compiled for a free-threaded Python (Py_GIL_DISABLED), in a package for "
        "3.14 (with the GIL) (wheel tag cp314-cp314)"
    )


def test_gil_code_in_a_cp314t_wheel_fails_naming_both(
    migrated, python_part, torch_wheel, tmp_path
) -> None:
    # 2.13.0's libtorch_python.so, built for a CPython with the GIL (it calls _Py_Dealloc),
    # in the cp314t wheel in place of upstream's free-threaded one
    members = _members(python_part)
    with zipfile.ZipFile(torch_wheel) as gil_wheel:
        members[_TORCH_PYTHON] = gil_wheel.read(_TORCH_PYTHON)
    mixed = _write_wheel(tmp_path / python_part.name, members)
    root, _ = migrated
    [failed] = [f for f in _check_here(mixed, root) if f["status"] == "fail"]
    assert failed["path"] == f"{mixed.name}:{_TORCH_PYTHON}"
    assert failed["detail"] == (
        "compiled for a Python with the GIL, in a package for 3.14t (free-threaded) "
        "(wheel tag cp314-cp314t)"
    )


def test_a_conda_package_for_314t_holding_a_gil_extension_fails_naming_both() -> None:
    from tools.check import run_checks
    from tools.check.archive import Member, Package

    site = "lib/python3.14t/site-packages/torch"
    package = Package(
        source=Path("pytorch-2.13.0-cpu_generic_py314_hc71a66a_3.conda"),
        kind="conda",
        name="pytorch",
        version="2.13.0",
        build="cpu_generic_py314_hc71a66a_3",
        subdir="linux-64",
        depends=("python_abi 3.14.* *_cp314t",),
        members=(Member(f"{site}/_C.cpython-314-x86_64-linux-gnu.so", "file", 1),),
    )
    [finding] = run_checks([package], only={"python.abi"})
    assert finding.status == "fail"
    assert finding.detail.startswith(
        "an extension for Python 3.14 (with the GIL) in a package for 3.14t (free-threaded) "
        "(python_abi 3.14.* *_cp314t)"
    )
