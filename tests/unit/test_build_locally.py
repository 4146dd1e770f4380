"""build-locally's logic, without starting any process (the e2e tests do that): which
configs a command line selects, and the options it gives."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest
from helpers.build_locally_unit import CONFIGS, make_feedstock, options_for

from tools.foundation.errors import UserError
from tools.localbuild.options import (
    CONFLICTS,
    Build,
    Debug,
    DryRun,
    FetchSources,
    ListConfigs,
    build_parser,
    from_args,
)
from tools.localbuild.records.configs import (
    apply_filter,
    choose_interactively,
    docker_image,
    select,
)


@pytest.fixture(autouse=True)
def _no_processes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unit tests must not start processes")

    monkeypatch.setattr(subprocess, "Popen", refuse)


@pytest.fixture
def feedstock(tmp_path: Path) -> Path:
    return make_feedstock(tmp_path)


# ---------------------------------------------------------------- selection


def test_select_keeps_exact_names_in_the_order_given() -> None:
    assert select(CONFIGS, [CONFIGS[2], CONFIGS[0]]) == (CONFIGS[2], CONFIGS[0])


def test_select_expands_globs_without_duplicates() -> None:
    assert select(CONFIGS, ["linux_64_*mkl*", "linux_64_*"]) == (CONFIGS[2], CONFIGS[0], CONFIGS[1])


def test_select_accepts_a_path_with_yaml_suffix_as_typed_with_completion() -> None:
    assert select(CONFIGS, [f".ci_support/{CONFIGS[1]}.yaml"]) == (CONFIGS[1],)


def test_unknown_config_is_an_error_naming_the_closest_configs() -> None:
    with pytest.raises(UserError) as excinfo:
        select(CONFIGS, ["linux_64_blas_implmklcuda_compiler_version12.9"])
    first, *names = str(excinfo.value).splitlines()
    assert "no config named" in first and first.endswith("the closest are:")
    assert [n.strip() for n in names][:2] == [CONFIGS[2], CONFIGS[0]]


def test_unknown_config_is_never_replaced_by_the_only_config() -> None:
    with pytest.raises(UserError):
        select(CONFIGS[:1], ["linux_64_typo"])


def test_glob_matching_nothing_is_an_error() -> None:
    with pytest.raises(UserError, match="matches none of the 5 configs"):
        select(CONFIGS, ["linux_aarch64_*"])


def test_filter_is_matched_against_the_yaml_file_name_like_conda_smithy() -> None:
    assert apply_filter(CONFIGS, "osx_*") == (CONFIGS[3],)
    assert apply_filter(CONFIGS, "*None") == (CONFIGS[1], CONFIGS[2], CONFIGS[4])


def test_all_respects_the_filter() -> None:
    assert select(CONFIGS, [], all_configs=True, filter_glob="linux_*") == CONFIGS[:3]


def test_a_config_excluded_by_the_filter_is_an_error_not_a_silent_skip() -> None:
    with pytest.raises(UserError, match="excluded by --filter"):
        select(CONFIGS, [CONFIGS[3]], filter_glob="linux_*")


def test_names_and_all_together_are_refused() -> None:
    with pytest.raises(UserError, match="not both"):
        select(CONFIGS, [CONFIGS[0]], all_configs=True)


def test_no_request_means_ask() -> None:
    assert select(CONFIGS, []) == ()


def test_menu_picks_by_number() -> None:
    shown: list[str] = []
    assert choose_interactively(CONFIGS, lambda prompt: " 2 ", shown.append) == CONFIGS[1]
    assert any(CONFIGS[4] in line for line in shown)


def test_menu_rejects_a_number_out_of_range() -> None:
    with pytest.raises(UserError, match="1-5"):
        choose_interactively(CONFIGS, lambda prompt: "9", lambda line: None)


def test_docker_image_is_the_first_entry(feedstock: Path) -> None:
    path = feedstock / ".ci_support" / f"{CONFIGS[0]}.yaml"
    assert docker_image(path) == "quay.io/condaforge/linux-anvil-x86_64:alma10"


def test_unreadable_config_yaml_is_a_user_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("docker_image: [unclosed\n")
    with pytest.raises(UserError, match=r"bad\.yaml"):
        docker_image(bad)


# ---------------------------------------------------------------- options


def test_output_id_without_debug_is_refused(feedstock: Path) -> None:
    with pytest.raises(UserError, match="--debug"):
        options_for(feedstock, "--output-id", "pytorch", CONFIGS[0])


def test_debug_needs_a_single_config(feedstock: Path) -> None:
    with pytest.raises(UserError, match="single config"):
        options_for(feedstock, "--debug", "--all")


def test_secrets_are_removed_from_the_build_environment(feedstock: Path) -> None:
    env = {"PATH": "/usr/bin", "BINSTAR_TOKEN": "tok-123456", "GITHUB_TOKEN": "ghs-abcdef"}
    options = options_for(feedstock, CONFIGS[0], env=env)
    assert "BINSTAR_TOKEN" not in options.env and "GITHUB_TOKEN" not in options.env
    assert set(options.secrets) == {"tok-123456", "ghs-abcdef"}
    assert options.withheld == ("BINSTAR_TOKEN", "GITHUB_TOKEN")


def test_run_args_that_forward_a_token_are_refused(feedstock: Path) -> None:
    env = {"PATH": "/usr/bin", "CONDA_FORGE_DOCKER_RUN_ARGS": "--rm -e BINSTAR_TOKEN"}
    with pytest.raises(UserError, match="BINSTAR_TOKEN"):
        options_for(feedstock, CONFIGS[0], env=env)


def test_ccache_dir_with_whitespace_is_refused(feedstock: Path) -> None:
    with pytest.raises(UserError, match="whitespace"):
        options_for(feedstock, "--ccache", str(feedstock / "my cache"), CONFIGS[0])


def test_parser_accepts_conda_smithys_command_line() -> None:
    args = build_parser().parse_args(
        ["--filter", "linux_*", "--debug", "--output-id", "pytorch", "cfg"]
    )
    assert isinstance(args, argparse.Namespace)
    assert (args.config, args.filter_glob, args.debug, args.output_id) == (
        ["cfg"],
        "linux_*",
        True,
        "pytorch",
    )


@pytest.mark.parametrize(
    ("argv", "command"),
    [(["--why", "x"], "why CONFIG"), (["--report"], "report [DIR...]"),
     (["--verify=d", "--commit", "abc1234"], "verify DIR"), (["cfg", "--merge", "d"], "merge DIR"),
     (["--cfep3-request", "jdoe"], "request CHANNEL"), (["--publish", "d"], "publish DEST"),
     (["--all", "--allow-other-engine"], "verify|request|merge|publish")],
)  # fmt: skip
def test_a_flag_that_moved_to_the_review_is_refused_naming_its_command(
    tmp_path: Path, argv: list[str], command: str
) -> None:
    from tools.localbuild.options import parse

    with pytest.raises(UserError, match="moved to `python -m tools review ") as refused:
        parse(argv, {}, tmp_path, interactive=False)
    assert f"python -m tools review {command}" in str(refused.value)
    assert "\n" not in str(refused.value)  # one line


def test_the_menu_takes_a_label_as_well_as_a_number() -> None:
    said: list[str] = []
    pool = ("linux_64_long_a", "linux_64_long_b")
    label_of = {"linux_64_long_a": "linux-64 cpu", "linux_64_long_b": "linux-64 cuda13.0"}
    chosen = choose_interactively(
        pool, lambda _: "linux-64  cuda13.0", said.append, label_of=label_of
    )
    assert chosen == "linux_64_long_b"
    assert said[1:] == [
        "  1. linux-64 cpu       linux_64_long_a",
        "  2. linux-64 cuda13.0  linux_64_long_b",
    ]


# One command line per row of the conflicts table, in the table's order: each is refused with
# that row's line (and a new row without a case here fails the count below).
REFUSED = (
    (("--all", "--debug", "--shard", "1/2"), "--debug opens a shell in one build; drop --shard"),
    (("--shard", "1/2"), "--shard splits the selected configs"),
    (("--output-id", "x", "cfg"), "--output-id only makes sense with --debug"),
    (("--debug", "a", "b"), "--debug opens a shell in one build; name a single config"),
    (("--debug", "--dry-run", "cfg"), "--debug and --dry-run exclude each other"),
    (("--native", "--ccache", "/tmp/c", "cfg"), "--ccache is wired into the container build"),
    (("--native", "--engine", "docker", "cfg"), "drop it or --engine docker"),
    (("--fetch-sources", "d", "--all"), "--fetch-sources only downloads the source archive"),
)


@pytest.mark.parametrize(("argv", "message"), REFUSED)
def test_each_pair_of_flags_that_exclude_each_other_is_refused_with_its_line(
    feedstock: Path, argv: tuple[str, ...], message: str
) -> None:
    with pytest.raises(UserError) as refused:
        options_for(feedstock, *argv)
    assert message in str(refused.value)


def test_every_row_of_the_conflicts_table_has_a_case() -> None:
    assert len(REFUSED) == len(CONFLICTS)


@pytest.mark.parametrize(
    ("argv", "mode"),
    [(("--fetch-sources", "d"), FetchSources), (("--list",), ListConfigs),
     (("--debug", "cfg"), Debug), (("--dry-run", "--all"), DryRun), (("--all",), Build),
     (("--list", "--dry-run"), ListConfigs)],
)  # fmt: skip
def test_the_command_line_names_one_mode(feedstock: Path, argv: tuple[str, ...], mode) -> None:
    args = build_parser().parse_args(list(argv))
    assert type(from_args(args, {}, feedstock, interactive=False)) is mode
