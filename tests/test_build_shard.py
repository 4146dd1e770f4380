"""`build-locally.py --shard K/N`: the partition, the cost model and --durations (no processes)."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from tools.foundation.errors import UserError
from tools.localbuild.options import build_parser, from_args
from tools.localbuild.schedule.facts import ConfigFacts, facts_from_mapping, read_facts
from tools.localbuild.schedule.shard import (
    DEFAULT_CUDA_ARCHS,
    Shard,
    choose_shard,
    cuda_arch_counts,
    expected_seconds,
    makespan,
    measured_seconds,
    model_minutes,
    parse_shard,
    partition,
)
from tools.render.cuda_archs import read_rows

REPO = Path(__file__).resolve().parent.parent


def real_facts() -> list[ConfigFacts]:
    return [read_facts(p) for p in sorted((REPO / ".ci_support").glob("*.yaml"))]


def real_costs() -> dict[str, float]:
    return expected_seconds(real_facts(), cuda_arch_counts(REPO / "recipe"), {})


def cpu(name: str, pythons: int = 5, platform: str = "linux-64") -> ConfigFacts:
    return ConfigFacts(name, platform, None, pythons, (), None)


def cuda(name: str, version: str, platform: str = "linux-64", pythons: int = 5) -> ConfigFacts:
    return ConfigFacts(name, platform, version, pythons, (), None)


def optimum(costs: dict[str, float], machines: int) -> float:
    """The best makespan over every assignment of configs to machines (brute force)."""
    names = list(costs)
    best = float("inf")
    for owners in itertools.product(range(machines), repeat=len(names)):
        loads = [0.0] * machines
        for name, owner in zip(names, owners):
            loads[owner] += costs[name]
        best = min(best, max(loads))
    return best


# ---------------------------------------------------------------- the partition


@pytest.mark.parametrize("machines", range(1, 9))
def test_every_selected_config_lands_in_exactly_one_shard(machines: int) -> None:
    costs = real_costs()
    parts = partition(costs, machines)
    assert len(parts) == machines
    flat = [name for part in parts for name in part]
    assert sorted(flat) == sorted(costs)
    assert len(flat) == len(set(flat))


def test_the_partition_is_the_same_whatever_order_the_configs_were_selected_in() -> None:
    costs = real_costs()
    shuffled = list(costs.items())
    random.Random(7).shuffle(shuffled)
    first = partition(costs, 4)
    again = partition(dict(shuffled), 4)
    assert [sorted(p) for p in first] == [sorted(p) for p in again]
    assert partition(costs, 4) == first


def test_each_shard_keeps_the_selection_order() -> None:
    costs = real_costs()
    order = list(costs)
    for part in partition(costs, 3):
        assert list(part) == sorted(part, key=order.index)


def test_equal_costs_are_split_by_name_not_by_chance() -> None:
    costs = dict.fromkeys(("c", "a", "d", "b"), 1.0)
    assert partition(costs, 2) == (("c", "a"), ("d", "b"))


@pytest.mark.parametrize("seed", range(40))
def test_makespan_is_within_four_thirds_of_the_brute_force_optimum(seed: int) -> None:
    rng = random.Random(seed)
    machines = rng.randint(2, 4)
    count = rng.randint(machines + 1, 7)
    costs = {f"config{i}": float(rng.randint(1, 40)) for i in range(count)}
    assert makespan(partition(costs, machines), costs) <= optimum(costs, machines) * 4 / 3


def test_longest_first_beats_a_naive_round_robin_on_a_skewed_release() -> None:
    # Two huge CUDA configs and many small CPU ones: dealing them out in order puts both
    # CUDA configs on one machine; the cost model must not.
    costs = {"a_cuda": 10.0, "b_cpu": 1.0, "c_cuda": 10.0, "d_cpu": 1.0, "e_cpu": 1.0}
    parts = partition(costs, 2)
    assert not any({"a_cuda", "c_cuda"} <= set(part) for part in parts)
    assert makespan(parts, costs) == optimum(costs, 2)


def test_more_machines_than_configs_leaves_some_shards_empty() -> None:
    parts = partition({"a": 1.0, "b": 2.0}, 4)
    assert sorted(len(p) for p in parts) == [0, 0, 1, 1]


# ---------------------------------------------------------------- the cost model


def test_arch_counts_come_from_the_recipes_build_scripts() -> None:
    counts = cuda_arch_counts(REPO / "recipe")
    # One count per row of the recipe's arch-list file, Linux (build.sh) and win-64 (bld.bat)
    # alike, one per entry: a change there moves the cost.
    rows = read_rows(REPO / "recipe" / "cuda_arch_lists.txt")
    assert rows, "recipe/cuda_arch_lists.txt has no row"
    assert counts == {key: len(arch_list.split(";")) for key, arch_list in rows.items()}


def test_a_cuda_config_costs_more_than_the_same_cpu_config() -> None:
    assert model_minutes(cuda("x", "12.9"), {}) > model_minutes(cpu("x"), {})


def test_more_cuda_architectures_cost_more() -> None:
    counts = {("12.9", "linux-64"): 9, ("13.0", "linux-64"): 7}
    assert model_minutes(cuda("x", "12.9"), counts) > model_minutes(cuda("x", "13.0"), counts)


def test_an_unknown_cuda_version_gets_a_typical_architecture_count() -> None:
    counts = {("12.9", "linux-64"): DEFAULT_CUDA_ARCHS}
    assert model_minutes(cuda("x", "14.0"), {}) == model_minutes(cuda("x", "12.9"), counts)


def test_more_pythons_cost_more() -> None:
    assert model_minutes(cpu("x", pythons=5), {}) > model_minutes(cpu("x", pythons=2), {})


def test_facts_read_cuda_pythons_and_labels_from_a_config() -> None:
    facts = facts_from_mapping(
        "linux_64_cuda_compiler_version12.9",
        {
            "cuda_compiler_version": ["12.9"],
            "python": ["3.10.* *_cpython", "3.11.* *_cpython"],
            "target_platform": ["linux-64"],
            "github_actions_labels": ["cirun-openstack-gpu-2xlarge"],
        },
    )
    assert (facts.cuda, facts.pythons, facts.labels) == (
        "12.9",
        2,
        ("cirun-openstack-gpu-2xlarge",),
    )
    assert facts_from_mapping("osx_arm64_x", {"cuda_compiler_version": ["None"]}).cuda is None
    assert facts_from_mapping("osx_arm64_x", {}).target_platform == "osx-arm64"


# ---------------------------------------------------------------- --durations


def summary(tmp_path: Path, name: str, configs: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"version": 1, "configs": configs}))
    return path


def test_measured_durations_replace_the_model(tmp_path: Path) -> None:
    facts = [cpu("a"), cpu("b"), cpu("c"), cpu("d")]
    # The model sees four equal configs; the measurement says `a` takes as long as the rest.
    path = summary(
        tmp_path,
        "summary.json",
        {n: {"status": "done", "duration_seconds": s} for n, s in zip("abcd", (30, 10, 10, 10))},
    )
    costs = expected_seconds(facts, {}, measured_seconds([path]))
    assert partition(costs, 2) == (("a",), ("b", "c", "d"))


def test_unmeasured_configs_are_scaled_to_the_measured_clock(tmp_path: Path) -> None:
    facts = [cpu("a"), cpu("b")]
    model = model_minutes(cpu("a"), {}) * 60
    path = summary(tmp_path, "s.json", {"a": {"status": "done", "duration_seconds": model / 2}})
    costs = expected_seconds(facts, {}, measured_seconds([path]))
    assert costs == {"a": model / 2, "b": model / 2}


def test_failed_builds_do_not_count_as_measurements_and_later_files_win(tmp_path: Path) -> None:
    first = summary(
        tmp_path,
        "1.json",
        {
            "a": {"status": "done", "duration_seconds": 100},
            "b": {"status": "failed", "duration_seconds": 5},
        },
    )
    second = summary(tmp_path, "2.json", {"a": {"status": "skipped", "duration_seconds": 200}})
    assert measured_seconds([first, second]) == {"a": 200.0}


def test_a_durations_file_that_is_not_a_summary_is_one_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("a took ages\n")
    with pytest.raises(UserError, match=r"--durations .*notes.txt:1: not valid JSON \("):
        measured_seconds([path])
    with pytest.raises(UserError, match="cannot read"):
        measured_seconds([tmp_path / "missing.json"])


def test_choose_shard_describes_its_share(tmp_path: Path) -> None:
    facts = [cuda("big", "12.9"), cpu("small1"), cpu("small2")]
    choice = choose_shard(facts, Shard(1, 2), recipe_dir=REPO / "recipe")
    assert choice.names == ("big",)
    assert choice.describe(Shard(1, 2)).startswith("shard 1/2: 1 of 3 configs, expected ")


# ---------------------------------------------------------------- the command line


@pytest.mark.parametrize("text", ["3", "0/2", "3/2", "a/b", "1/0", "-1/2"])
def test_a_bad_shard_is_one_clear_error(text: str) -> None:
    with pytest.raises(UserError, match="--shard"):
        parse_shard(text)


def test_shard_parses_k_of_n() -> None:
    assert parse_shard(" 2/3 ") == Shard(2, 3)


def options(*argv: str):
    return from_args(build_parser().parse_args(list(argv)), {}, REPO, interactive=False)


def test_shard_needs_a_selection_to_split() -> None:
    with pytest.raises(UserError, match="add --all"):
        options("--shard", "1/2")
    assert options("--all", "--shard", "1/2").shard == Shard(1, 2)
    assert options("linux_*", "--shard", "2/2").shard == Shard(2, 2)


def test_durations_without_shard_feed_the_eta() -> None:
    assert options("--all", "--durations", "summary.json").durations == (Path("summary.json"),)
