"""The rules that name configs, as functions (tools/foundation/selection.py): exact names, globs
and prefixes, the closest names to a misspelling, and each config's short label."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures import feedstock_matrix

from tools.foundation.selection import (
    ConfigSelectionError,
    apply_filter,
    closest,
    make_labels,
    read_labels,
    select_many,
    select_one,
)

ROOT = Path(__file__).resolve().parent.parent
# The configs these tests name, read from .ci_support: a fork's tailored matrix keeps them
# meaningful (tests/fixtures/feedstock_matrix.py).
MATRIX = feedstock_matrix.configs(ROOT)
CONFIGS = [c.name for c in MATRIX]
LABELS = read_labels(ROOT / ".ci_support", CONFIGS)

pytestmark = pytest.mark.skipif(not CONFIGS, reason=".ci_support holds no configs")


# ------------------------------------------------------------------ the rules themselves


NAMES = ("linux_64_cuda12.9", "linux_64_cudaNone", "linux_aarch64_cudaNone", "osx_arm64_x")


def test_an_exact_name_wins_over_longer_names_it_starts() -> None:
    assert select_one(("linux_64", "linux_64_more"), "linux_64") == "linux_64"


def test_a_glob_matching_one_config_is_fine_where_one_is_needed() -> None:
    assert select_one(NAMES, "*aarch64*") == "linux_aarch64_cudaNone"


def test_a_glob_matching_several_where_one_is_needed_is_ambiguous() -> None:
    with pytest.raises(ConfigSelectionError) as excinfo:
        select_one(NAMES, "linux_64_*")
    assert excinfo.value.matches == NAMES[:2]


def test_select_many_keeps_the_order_given_and_each_config_once() -> None:
    assert select_many(NAMES, ["osx", "linux_*", "linux_64_cudaN"]) == (
        "osx_arm64_x",
        "linux_64_cuda12.9",
        "linux_64_cudaNone",
        "linux_aarch64_cudaNone",
    )


def test_a_glob_matching_nothing_names_the_configs_its_letters_are_closest_to() -> None:
    with pytest.raises(ConfigSelectionError) as excinfo:
        select_many(NAMES, ["linux_aarhc64_*"])
    assert excinfo.value.matches[0] == "linux_aarch64_cudaNone"


def test_closest_prefers_names_that_start_like_the_text() -> None:
    long_names = [f"linux_64_{'x' * 120}_{i}" for i in range(3)] + ["osx_arm64_y", "win_64_z"]
    assert closest("linux_99", long_names) == sorted(long_names[:3])


# ------------------------------------------------------------------ labels


def test_every_real_config_has_its_own_short_label() -> None:
    assert len(set(LABELS.values())) == len(CONFIGS)
    assert all(len(label) <= 32 and "  " not in label for label in LABELS.values())
    assert all(LABELS[c.name].split()[0] == c.platform for c in MATRIX)


def test_a_label_says_platform_cuda_or_cpu_and_blas() -> None:
    labels = make_labels(
        {
            "linux_64_a": {"target_platform": ["linux-64"], "cuda_compiler_version": ["13.0"],
                           "blas_impl": ["mkl"]},
            "win_64_b": {"target_platform": ["win-64"], "cuda_compiler_version": ["None"]},
        }
    )  # fmt: skip
    assert labels == {"linux_64_a": "linux-64 cuda13.0 mkl", "win_64_b": "win-64 cpu"}


def test_configs_alike_but_for_the_compiler_get_the_compiler_in_their_labels() -> None:
    base = {"target_platform": ["linux-64"], "cuda_compiler_version": ["None"], "c_compiler":
            ["gcc"], "c_stdlib": ["sysroot"], "c_stdlib_version": ["2.17"]}  # fmt: skip
    labels = make_labels(
        {
            "a": {**base, "c_compiler_version": ["14"], "channel_targets": ["conda-forge main"]},
            "b": {**base, "c_compiler_version": ["15"], "channel_targets": ["conda-forge main"]},
            "c": {**base, "c_compiler_version": ["15"], "channel_targets": ["conda-forge rc"]},
            "d": {"target_platform": ["osx-64"]},
        }
    )
    assert labels == {
        "a": "linux-64 cpu gcc14 conda-forge_main",
        "b": "linux-64 cpu gcc15 conda-forge_main",
        "c": "linux-64 cpu gcc15 conda-forge_rc",
        "d": "osx-64 cpu",
    }


def test_an_unreadable_config_keeps_its_long_name_as_label(tmp_path: Path) -> None:
    (tmp_path / "linux_64_x.yaml").write_text("target_platform: [linux-64\n")
    assert read_labels(tmp_path, ["linux_64_x"]) == {"linux_64_x": "linux_64_x"}


def test_a_label_a_label_prefix_and_a_label_glob_select_configs() -> None:
    labels = {"n1": "linux-64 cuda13.0 mkl", "n2": "linux-64 cuda13.0 generic", "n3": "osx-64 cpu"}
    names = tuple(labels)
    assert select_one(names, "linux-64  cuda13.0 mkl", labels=labels) == "n1"
    assert select_one(names, "osx", labels=labels) == "n3"
    assert select_many(names, ["*cuda13.0*"], labels=labels) == ("n1", "n2")
    assert apply_filter(names, "linux-64 *", labels) == ("n1", "n2")
    with pytest.raises(ConfigSelectionError) as excinfo:
        select_one(names, "linux-64 cuda13.0", labels=labels)
    assert excinfo.value.matches == ("n1", "n2")
