"""conda-forge's python314t migration added to a copy of this feedstock: free-threaded 3.14t.

The migration file is conda-forge's own (tests/fixtures/reference/pinning, kept byte for byte):
``key_add`` of ``python: 3.14.* *_cp314t`` with ``is_freethreading: true``, waiting for
``python314``, which this feedstock carries. With it in ``.ci_support/migrations/``, ``matrix
--write`` gives every config a sixth Python; both recipes then render a ``pytorch`` for 3.14t
beside the one for 3.14, built against ``python 3.14.* *_cp314t`` (whose run_exports give it
``python_abi 3.14.* *_cp314t``, which only a free-threaded Python can install), and no package
name of the default matrix moves (tests/unit/test_default_names.py holds them without the
migration).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml
from helpers import feedstock_matrix
from helpers.cli import REPO
from helpers.default_names import GOLDEN
from helpers.python314t import (
    C_314,
    C_314T,
    TORCH_PYTHON,
    check_python_abi,
    python_abi_part,
    tools,
    wheel_members,
    write_wheel,
)
from helpers.recipe_release import current

from tools.render.config import list_configs, render_config
from tools.smithy.forge_yml import load_forge_yml

rattler_build = pytest.importorskip("rattler_build", reason="py-rattler-build renders recipe-v1")

MIGRATION = "python314t.yaml"
FREE = "3.14.* *_cp314t"
GIL = "3.14.* *_cp314"


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
        # python_abi comes from the host python's run_exports (meta.yaml says why the recipe
        # spells none), so the host python is what tells the two apart.
        assert f"python {FREE}" in free.requirements["host"], config
        assert f"python {GIL}" in gil.requirements["host"], config
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
    assert f"python {FREE}" in free and "*_cp314t" not in gil


def _one_per_platform(root: Path) -> list[str]:
    """A config of each platform (the migration covers them all): rattler-build's renders
    cost about 2 s a config, and tests/unit/test_recipe_v1_equivalence.py compares every config's
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
    from helpers.recipe_equivalence import allowed_differences, differences, from_meta, from_v1

    root, _ = migrated
    rows = allowed_differences(root / "recipe" / "README.md")
    for config in _one_per_platform(root):
        meta, skipped = from_meta(render_config(config, root=root))
        v1 = from_v1(_render_v1(root, config))
        [key] = [k for k in v1 if k[0] == "pytorch" and FREE in k[1]]
        assert f"python {FREE}" in v1[key].requirements["host"], config
        found = differences(config, {key: meta[key]}, skipped, {key: v1[key]})
        assert [str(d) for d in found if not any(row.allows(d) for row in rows)] == []


def test_the_migration_moves_no_existing_package_name(migrated) -> None:
    # meta.yaml's names for every config, rattler-build's for one config per platform, as
    # tests/helpers/default_names.py renders them for tests/unit/test_default_names.py
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


# ---------------------------------------------------------------- upstream's cp314t wheel


@pytest.fixture(scope="module")
def python_part(upstream_cp314t_wheel: Path) -> Path:
    return python_abi_part(upstream_cp314t_wheel)


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
        f"{C_314T}; the config builds pytorch for it"
    ) in result.stdout


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
    [finding] = check_python_abi(python_part, root)
    assert finding["status"] == "pass", finding
    assert finding["detail"].startswith(
        "Python 3.14t (free-threaded): wheel tag cp314-cp314t, extension suffix of "
        "_C.cpython-314t-x86_64-linux-gnu.so; config "
    )


def test_free_threaded_code_in_a_gil_tagged_wheel_fails_naming_both(
    migrated, python_part, tmp_path
) -> None:
    # upstream's free-threaded libtorch_python.so (it calls _Py_DecRefShared), in a wheel
    # whose tag and extension suffix say 3.14 with the GIL
    members = wheel_members(python_part)
    members[C_314] = members.pop(C_314T)
    gil = write_wheel(tmp_path / "torch-2.15.0-cp314-cp314-manylinux_2_28_x86_64.whl", members)
    root, _ = migrated
    failed = [f for f in _check_here(gil, root) if f["status"] == "fail"]
    assert [f["path"] for f in failed] == [f"{gil.name}:{TORCH_PYTHON}"]
    assert failed[0]["detail"] == (
        "compiled for a free-threaded Python (Py_GIL_DISABLED), in a package for "
        "3.14 (with the GIL) (wheel tag cp314-cp314)"
    )


def test_gil_code_in_a_cp314t_wheel_fails_naming_both(
    migrated, python_part, torch_wheel, tmp_path
) -> None:
    # 2.13.0's libtorch_python.so, built for a CPython with the GIL (it calls _Py_Dealloc),
    # in the cp314t wheel in place of upstream's free-threaded one
    members = wheel_members(python_part)
    with zipfile.ZipFile(torch_wheel) as gil_wheel:
        members[TORCH_PYTHON] = gil_wheel.read(TORCH_PYTHON)
    mixed = write_wheel(tmp_path / python_part.name, members)
    root, _ = migrated
    [failed] = [f for f in _check_here(mixed, root) if f["status"] == "fail"]
    assert failed["path"] == f"{mixed.name}:{TORCH_PYTHON}"
    assert failed["detail"] == (
        "compiled for a Python with the GIL, in a package for 3.14t (free-threaded) "
        "(wheel tag cp314-cp314t)"
    )
