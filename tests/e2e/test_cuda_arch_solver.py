"""What a solver does with a fork's narrower GPU set (``cuda_arch_set``), proved over built
packages with py-rattler, and the track features both recipes give such a build (issue 44).

A lab's CUDA build for fewer GPUs (here: one config of .ci_support tailored as
tests/helpers/cuda_arch_fork.py tailors it, its row cut to sm_90 and ``cuda_arch_set: sm90``) gets
the track feature ``<name>-p-0`` on every output, in meta.yaml and recipe-v1.yaml alike: one
feature name per package, as rattler-build's ``down_prioritize_variant`` writes it, so classic
conda (which counts distinct features) weighs both engines' packages the same.

The solves run over stand-in packages built by py-rattler-build, one per output of each
channel: the name, version, build string, build number and run requirements (the exact pins
between libtorch, pytorch and pytorch-gpu) are the rendered recipe's, the track features are
written by the engine from ``down_prioritize_variant`` as the v1 recipe asks for them; nothing
else decides a solve. conda-forge's channel holds the full build of the recipe's version, the
lab's channel the subset build of the next minor version. recipe/README.md ("Outputs") and
docs/fork.md ("What to watch") state each case.
"""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from pathlib import Path

import pytest
from helpers.cuda_arch_fork import REPO, cuda_config, meta_outputs, tailored_fork, v1_outputs
from helpers.recipe_release import current, next_minor

pytestmark = pytest.mark.slow  # builds packages with py-rattler-build

OUTPUTS = ("libtorch", "pytorch", "pytorch-gpu")


def _meta(recipe: Path, config: Path) -> dict:
    return {o.name: o for o in meta_outputs(recipe, config)}


def _v1(recipe: Path, config: Path) -> dict:
    return {o.name: o for o in v1_outputs(recipe, config)}


# ------------------------------------------------------- the same features in both recipes


def test_both_recipes_give_a_subset_build_one_feature_per_package(tmp_path: Path) -> None:
    # Before: meta.yaml wrote one shared name (pytorch_cuda_arch_subset) where rattler-build
    # writes libtorch-p-0, pytorch-p-0, ...: classic conda counted 1 feature against 3.
    recipe, config = tailored_fork(tmp_path, "sm90")
    meta, v1 = _meta(recipe, config), _v1(recipe, config)
    assert set(meta) == set(v1)
    for name in meta:
        assert meta[name].track_features == (f"{name}-p-0",), name
        assert v1[name].track_features == meta[name].track_features, name


def test_a_full_build_has_no_track_features_in_either_recipe() -> None:
    # conda-forge's configs name no cuda_arch_set: their lists are the full ones.
    recipe, config = REPO / "recipe", cuda_config()
    for outputs in (_meta(recipe, config), _v1(recipe, config)):
        assert {n: o.track_features for n, o in outputs.items() if o.track_features} == {}


# ------------------------------------------------------- the solves over built packages


def _stand_in_recipe(output, version: str, steps: int) -> str:
    """A noarch package named, versioned, numbered and pinned as ``output`` renders."""
    string = output.build_string.replace(current().version, version)
    runs = [
        re.sub(r"==\S+", f"=={version}", spec) if spec.split()[0] in OUTPUTS else spec
        for spec in output.requirements.get("run", ())
        if spec.split()[0] in (*OUTPUTS, "__cuda")
    ]
    return (
        f"package:\n  name: {output.name}\n  version: '{version}'\n"
        f"build:\n  number: {output.build_number}\n  string: {string}\n  noarch: generic\n"
        f"  variant:\n    down_prioritize_variant: {steps}\n"
        "  script:\n    - mkdir -p $PREFIX/share && echo x > $PREFIX/share/${PKG_NAME}.txt\n"
        f"requirements:\n  run: {json.dumps(runs)}\n"
    )


def _channel(folder: Path, outputs: dict, version: str) -> Path:
    import rattler_build

    for name in OUTPUTS:
        output = outputs[name]
        recipe = folder / "recipes" / name / "recipe.yaml"
        recipe.parent.mkdir(parents=True)
        recipe.write_text(_stand_in_recipe(output, version, len(output.track_features)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            rattler_build.build_recipes(
                [str(recipe)], output_dir=str(folder / "channel"), channel=[
                    (folder / "channel").as_uri()], test="skip"
            )  # fmt: skip
    return folder / "channel"


@pytest.fixture(scope="module")
def channels(tmp_path_factory) -> tuple[Path, Path]:
    """(conda-forge's, the lab's): the full build of the recipe's version, and the subset
    build of the next minor version."""
    tmp = tmp_path_factory.mktemp("solver")
    recipe, subset = tailored_fork(tmp / "lab", "sm90")
    full = cuda_config()
    forge = _channel(tmp / "forge", _v1(REPO / "recipe", full), current().version)
    lab = _channel(tmp / "lab-channel", _v1(recipe, subset), next_minor(current().version))
    return forge, lab


def _solve(channels: list[Path], spec: str, priority: str) -> dict[str, tuple[str, str]]:
    import rattler

    cuda = rattler.GenericVirtualPackage(
        rattler.PackageName("__cuda"), rattler.Version("13.0"), rattler.BuildString("0")
    )
    records = asyncio.run(
        rattler.solve(
            [c.as_uri() for c in channels],
            [spec],
            platforms=["linux-64", "noarch"],
            virtual_packages=[cuda],
            channel_priority=getattr(rattler.ChannelPriority, priority),
        )
    )
    return {r.name.normalized: (str(r.version), r.channel) for r in records}


def test_the_built_packages_carry_the_features_the_recipes_render(channels) -> None:
    forge, lab = channels
    for channel, expected in ((forge, lambda n: []), (lab, lambda n: [f"{n}-p-0"])):
        repodata = json.loads((channel / "noarch" / "repodata.json").read_text())
        features = {
            r["name"]: r.get("track_features", "").split()
            for r in repodata["packages.conda"].values()
        }
        assert features == {n: expected(n) for n in OUTPUTS}, channel


def test_strict_priority_with_the_lab_first_installs_the_labs_subset_build(channels) -> None:
    forge, lab = channels
    picked = _solve([lab, forge], "pytorch-gpu", "Strict")
    # Strict priority takes every package from the first channel that has it: the track
    # feature weighs only among the lab's own builds.
    assert {n: v for n, (v, _) in picked.items()} == dict.fromkeys(
        OUTPUTS, next_minor(current().version)
    )
    assert all(lab.as_uri() in c for _, c in picked.values())


def test_strict_priority_with_conda_forge_first_installs_conda_forges_full_build(channels) -> None:
    forge, lab = channels
    picked = _solve([forge, lab], "pytorch-gpu", "Strict")
    assert {n: v for n, (v, _) in picked.items()} == dict.fromkeys(OUTPUTS, current().version)


def test_without_channel_priority_the_older_full_build_beats_the_newer_subset(channels) -> None:
    forge, lab = channels
    # A track feature outranks the version: conda-forge's older full build wins, whichever
    # channel is listed first.
    for order in ([lab, forge], [forge, lab]):
        picked = _solve(order, "pytorch-gpu", "Disabled")
        assert {n: v for n, (v, _) in picked.items()} == dict.fromkeys(OUTPUTS, current().version)


def test_without_channel_priority_asking_for_the_version_gets_the_subset_build(channels) -> None:
    forge, lab = channels
    newer = next_minor(current().version)
    picked = _solve([forge, lab], f"pytorch-gpu =={newer}", "Disabled")
    assert {n: v for n, (v, _) in picked.items()} == dict.fromkeys(OUTPUTS, newer)
    assert all(lab.as_uri() in c for _, c in picked.values())
