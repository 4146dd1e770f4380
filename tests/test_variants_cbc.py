"""Variant files, combination, zip_keys, CFEP-9 migrations and job naming."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.foundation.errors import UserError
from tools.recipe.variant_config import combine_specs, explode, parse_cbc, squish, validate_spec
from tools.smithy.jobs import job_name, prune_spec
from tools.smithy.migrations import (
    MigrationFile,
    apply_migrations,
    plan_migrations,
    read_migration_file,
)


def test_cbc_values_stay_strings_after_selectors():
    text = "c_compiler_version:  # [unix]\n  - 15  # [linux]\n  - 21  # [osx]\nflag:\n  - true\n"
    assert parse_cbc(text, "linux-64", source="cbc") == {
        "c_compiler_version": ["15"],
        "flag": ["true"],
    }


def test_keys_emptied_by_selectors_disappear():
    text = "m2w64_c_stdlib:  # [win]\n  - m2w64-sysroot  # [win]\nzlib:\n  - 1\n"
    assert parse_cbc(text, "linux-64", source="cbc") == {"zlib": ["1"]}


def test_cbc_selectors_see_the_environment():
    text = (
        "cuda_compiler_version:\n  - None\n"
        "  - 12.9  # [os.environ.get('CF_CUDA_ENABLED', 'False') == 'True']\n"
    )
    assert parse_cbc(text, "linux-64", source="c", environ={})["cuda_compiler_version"] == ["None"]
    cuda = parse_cbc(text, "linux-64", source="c", environ={"CF_CUDA_ENABLED": "True"})
    assert cuda["cuda_compiler_version"] == ["None", "12.9"]


def test_later_specs_win_and_extend_keys_merge():
    combined = combine_specs(
        [
            ("a", {"zlib": ["1"], "pin_run_as_build": {"python": {"max_pin": "x.x"}}}),
            ("b", {"zlib": ["2"], "pin_run_as_build": {"zstd": {"max_pin": "x"}}}),
        ]
    )
    assert combined["zlib"] == ["2"]
    assert set(combined["pin_run_as_build"]) == {"python", "zstd"}


def test_a_zipped_key_is_replaced_with_its_whole_group():
    base = {"zip_keys": [["python", "numpy"]], "python": ["3.11", "3.12"], "numpy": ["1", "2"]}
    combined = combine_specs(
        [("pin", base), ("recipe", {"python": ["3.12", "3.13"], "numpy": ["2", "2"]})]
    )
    assert combined["python"] == ["3.12", "3.13"] and combined["numpy"] == ["2", "2"]


def test_zipped_lists_of_different_lengths_are_rejected_naming_the_file():
    with pytest.raises(UserError, match=r"^cbc.yaml: the zip_keys group \['a', 'b'\]"):
        validate_spec("cbc.yaml", {"zip_keys": [["a", "b"]], "a": ["1", "2"], "b": ["1"]})


def test_setting_half_a_zip_group_to_new_values_is_a_clear_error():
    base = {"zip_keys": [["python", "numpy"]], "python": ["3.11", "3.12"], "numpy": ["1", "2"]}
    with pytest.raises(UserError, match="is zipped with"):
        combine_specs([("pin", base), ("recipe.yaml", {"python": ["3.14"]})])


def test_explode_zips_keys_together():
    spec = {
        "zip_keys": [["python", "numpy"]],
        "python": ["3.11", "3.12"],
        "numpy": ["1", "2"],
        "blas": ["a", "b"],
    }
    variants = explode(spec)
    assert len(variants) == 4
    assert {(x["python"], x["numpy"]) for x in variants} == {("3.11", "1"), ("3.12", "2")}


def test_squish_inverts_explode():
    spec = {
        "zip_keys": [["python", "numpy"]],
        "python": ["3.11", "3.12"],
        "numpy": ["1", "2"],
        "blas": ["a", "b"],
    }
    back = squish(explode(spec))
    assert (
        back["python"] == ["3.11", "3.12"]
        and back["numpy"] == ["1", "2"]
        and back["blas"] == ["a", "b"]
    )


PY314 = {
    "__migrator": {
        "operation": "key_add",
        "primary_key": "python",
        "ordering": {"python": ["3.11.* *_cpython", "3.12.* *_cpython", "3.14.* *_cp314"]},
    },
    "python": ["3.14.* *_cp314"],
    "is_python_min": ["false"],
    "migrator_ts": "1724712607",
}


def test_key_add_migration_appends_in_order_and_keeps_zips_aligned():
    spec = {
        "zip_keys": [["python", "is_python_min"]],
        "python": ["3.12.* *_cpython", "3.11.* *_cpython"],
        "is_python_min": ["false", "true"],
    }
    out = apply_migrations(spec, [("py314", PY314)])
    assert out["python"] == ["3.11.* *_cpython", "3.12.* *_cpython", "3.14.* *_cp314"]
    assert out["is_python_min"] == ["true", "false", "false"]


def test_plain_migration_takes_the_higher_version():
    spec = {"libabseil": ["20250127"], "libprotobuf": ["5.29"]}
    out = apply_migrations(
        spec,
        [
            (
                "absl",
                {"__migrator": {"kind": "version"}, "libabseil": ["20260526"], "migrator_ts": "1"},
            )
        ],
    )
    assert out["libabseil"] == ["20260526"] and out["libprotobuf"] == ["5.29"]


def _migration(
    tmp: Path, name: str, ts: str, *, number: str = "1", use_local: bool = False
) -> MigrationFile:
    path = tmp / name
    path.write_text(
        f"migrator_ts: {ts}\n__migrator:\n  migration_number: {number}\n"
        + ("  use_local: true\n" if use_local else "")
    )
    return read_migration_file(path)


def test_migration_plan_follows_conda_smithy(tmp_path):
    (tmp_path / "up").mkdir()
    (tmp_path / "fs").mkdir()
    upstream = [_migration(tmp_path / "up", "py314.yaml", "1724712607")]
    local = [
        _migration(tmp_path / "fs", "py314.yaml", "1724712607"),
        _migration(tmp_path / "fs", "closed.yaml", "1600000000"),
        _migration(tmp_path / "fs", "mine.yaml", "1700000000", use_local=True),
    ]
    plan = plan_migrations(local, upstream)
    assert [p.name for p in plan.closed] == ["closed.yaml"]
    assert tmp_path / "up" / "py314.yaml" in plan.apply
    assert tmp_path / "fs" / "mine.yaml" in plan.apply
    assert plan.replaced == ("py314.yaml",)


def test_migration_with_another_number_than_upstream_stays_local(tmp_path):
    (tmp_path / "up").mkdir()
    (tmp_path / "fs").mkdir()
    plan = plan_migrations(
        [_migration(tmp_path / "fs", "m.yaml", "5", number="2")],
        [_migration(tmp_path / "up", "m.yaml", "5", number="1")],
    )
    assert plan.apply == (tmp_path / "fs" / "m.yaml",)


def test_job_names_sort_keys_and_sanitise_values():
    config = {
        "python": ["3.12.* *_cpython"],
        "channel_targets": ["conda-forge main"],
        "target_platform": ["linux-64"],
    }
    name = job_name("linux_64", config, {"python", "channel_targets", "target_platform"}, "pytorch")
    assert name.name == "linux_64_channel_targetsconda-forge_mainpython3.12.____cpython"
    assert name.short.startswith(name.name[:40] + "_h") and len(name.short) == 50


def test_long_job_names_are_cut_for_windows_paths():
    config = {f"key{i:02d}": ["value" * 3] for i in range(15)}
    name = job_name("win_64", config, set(config), "pytorch-cpu")
    prefix = len("C:/Users/runnerx/_work/pytorch-cpu-feedstock/pytorch-cpu-feedstock/.ci_support/")
    assert prefix + len(name.name + ".yaml") == 259
    assert name.name[-10:-8] == "_h"


def test_prune_keeps_only_keys_the_recipe_can_name():
    spec = {
        "zlib": ["1"],
        "ffmpeg": ["7"],
        "c_compiler": ["gcc"],
        "zip_keys": [["ffmpeg", "zlib"]],
        "channel_targets": ["conda-forge main"],
    }
    out = prune_spec(spec, ["requirements:\n  host:\n    - zlib\n"])
    assert set(out) - {"zip_keys"} == {"zlib", "c_compiler", "channel_targets"}
    assert out["zip_keys"] == [["zlib"]]
