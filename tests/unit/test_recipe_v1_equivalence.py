"""recipe/recipe-v1.yaml (rattler-build) builds what recipe/meta.yaml (conda-build) builds.

For every .ci_support config, rattler-build's own render of the v1 recipe (py-rattler-build,
offline, the config file as variant config) is compared with the toolkit's render of meta.yaml
(tools.render.config.render_config, what ``python -m tools render`` prints): the same packages,
and per package the same version, build number, build string but for the hash, requirements per
section, run_constrained, run_exports, ignore_run_exports and tests. A difference passes only
when a row of the table in recipe/README.md ("Where the two recipes may differ") names it, with
its reason; tests/helpers/recipe_equivalence.py says how the two renders are brought into one
shape. The two renders of all 15 configs take about 10 s on one core.
"""

from __future__ import annotations

import shutil
from functools import cache, lru_cache
from pathlib import Path

import pytest
from helpers import feedstock_matrix
from helpers.recipe_equivalence import (
    TABLE_HEADING,
    Difference,
    allowed_differences,
    conda_build_spec,
    differences,
    from_meta,
    from_v1,
)
from helpers.recipe_release import current, next_minor
from rattler import MatchSpec, Version, VersionSpec
from ruamel.yaml import YAML

from tools.render.config import (
    build_platform_for,
    list_configs,
    load_forge_yml,
    render_config,
    resolve_config,
)

rattler_build = pytest.importorskip("rattler_build", reason="py-rattler-build is not installed")

REPO = Path(__file__).resolve().parents[2]
RECIPE_DIR = REPO / "recipe"
VERSION = current().version
BUILD = current().build
# recipe-v1.yaml while conda-build builds the feedstock, recipe.yaml once it has switched.
V1_RECIPE = RECIPE_DIR / (
    "recipe.yaml" if (RECIPE_DIR / "recipe.yaml").is_file() else "recipe-v1.yaml"
)
if not (RECIPE_DIR / "meta.yaml").is_file():
    pytest.skip(
        "recipe/meta.yaml is gone: the feedstock is switched to rattler-build "
        "(`python -m tools switch --to rattler-build`), so recipe/recipe.yaml is the one recipe "
        "and there is nothing to compare it with; `switch --to conda-build` brings meta.yaml back",
        allow_module_level=True,
    )
README = RECIPE_DIR / "README.md"
CONFIGS = list_configs(REPO)


def render_v1(recipe: Path, config: str | Path, root: Path = REPO) -> list:
    path = resolve_config(config, root)
    data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    target = str(data["target_platform"][0])
    platform = rattler_build.PlatformConfig(
        target_platform=target, build_platform=build_platform_for(load_forge_yml(root), target)
    )
    return _parsed(recipe).render(
        rattler_build.VariantConfig.from_file(str(path)),
        rattler_build.RenderConfig(platform=platform),
    )


@lru_cache(maxsize=4)
def _parsed(recipe: Path):
    return rattler_build.Stage0Recipe.from_file(recipe)


def compare(config: str | Path, v1_recipe: Path = V1_RECIPE, meta_dir: Path = RECIPE_DIR):
    meta, skipped = from_meta(render_config(config, root=REPO, recipe_dir=meta_dir))
    return differences(str(config), meta, skipped, from_v1(render_v1(v1_recipe, config)))


@cache
def _differences(config: str) -> tuple[Difference, ...]:
    return tuple(compare(config))


def _unexplained(found, readme: Path = README) -> list[str]:
    rows = allowed_differences(readme)
    return [str(d) for d in found if not any(row.allows(d) for row in rows)]


def test_the_comparison_covers_the_feedstocks_configs():
    # an empty .ci_support would leave every parametrized comparison uncollected, and green
    assert CONFIGS, ".ci_support holds no configs: run `python -m tools matrix --write`"


@pytest.mark.parametrize("config", CONFIGS)
def test_both_recipes_build_the_same_packages(config):
    assert _unexplained(_differences(config)) == []


def test_every_row_of_the_differences_table_is_needed():
    found = [d for config in CONFIGS for d in _differences(config)]
    stale = [
        f"{README.name}:{row.line}: {row.output} {row.field}"
        for row in allowed_differences(README)
        if not any(row.allows(d) for d in found)
    ]
    assert stale == []


@pytest.mark.parametrize("config", CONFIGS)
def test_every_v1_output_uses_the_keys_that_name_its_ci_job(config):
    # conda-smithy names a recipe.yaml feedstock's CI jobs (and fills their .ci_support
    # files) from the variant keys every output uses; these are the keys the conda-build
    # name carries (key + value, as conda-smithy spells it).
    path = REPO / ".ci_support" / f"{config}.yaml"
    data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    named = {
        key
        for key, values in data.items()
        if isinstance(values, list)
        and len(values) == 1
        and f"{key}{values[0]}".replace(" ", "_") in config
    }
    assert {"channel_targets", "is_rc"} <= named
    for item in render_v1(V1_RECIPE, config):
        used = {k.replace("-", "_") for k in item.variant}
        assert named <= used, (item.recipe.package.name, sorted(named - used))


# The config the single-change tests compare: CUDA (so the CUDA-only outputs and pins are
# there), with generic BLAS where the matrix builds it (the BLAS-switching requirements too).
_CUDA = feedstock_matrix.prefer(
    {"platform": "linux-64", "cuda": True, "blas": "generic"},
    {"cuda": True, "blas": "generic"},
    {"cuda": True},
)
GENERIC_CUDA_CONFIG = _CUDA.name if _CUDA else None
CUDA = _CUDA.cuda if _CUDA else None
# meta.yaml's offsets: +200 CUDA, +100 MKL, +50 for the magma flavour of libtorch-cuda-linalg.
MAGMA_NUMBER = BUILD + 200 + 100 * (_CUDA is not None and _CUDA.blas == "mkl") + 50
# Three of its Pythons, to name its pytorch outputs by (the first again where it has fewer).
PYTHONS = [(_CUDA.pythons * 3)[i] for i in (2, 0, 1)] if _CUDA and _CUDA.pythons else [""] * 3


# One change to one recipe, the package it shows in, and the field and items that tell.
CHANGES = {
    "a host pin in recipe-v1.yaml": (
        V1_RECIPE.name,
        ("- setuptools >=77.0.3,<82", "- setuptools >=77.0.3,<83"),
        (
            f"pytorch python={PYTHONS[0]}",
            "requirements.host",
            "setuptools >=77.0.3,<82",
            "setuptools >=77.0.3,<83",
        ),
    ),
    "a run pin in meta.yaml": (
        "meta.yaml",
        ("- sympy >=1.13.3", "- sympy >=1.14"),
        (f"pytorch python={PYTHONS[1]}", "requirements.run", "sympy >=1.14", "sympy >=1.13.3"),
    ),
    "a run_exports bound in recipe-v1.yaml": (
        V1_RECIPE.name,
        (
            'pin_subpackage("pytorch", upper_bound="x.x")',
            'pin_subpackage("pytorch", upper_bound="x")',
        ),
        (
            f"pytorch python={PYTHONS[2]}",
            "run_exports.weak",
            f"pytorch >={VERSION},<{next_minor(VERSION)}.0a0",
            f"pytorch >={VERSION},<{int(VERSION.split('.')[0]) + 1}.0a0",
        ),
    ),
    "the magma build number offset in recipe-v1.yaml": (
        V1_RECIPE.name,
        ("(50 if (cuda_linalg_flavor", "(60 if (cuda_linalg_flavor"),
        (
            "libtorch-cuda-linalg cuda_linalg_flavor=magma",
            "build_number",
            str(MAGMA_NUMBER),
            str(MAGMA_NUMBER + 10),
        ),
    ),
    "an ignored run export in meta.yaml": (
        "meta.yaml",
        (
            "        - pybind11-abi\n      ignore_run_exports_from:",
            "      ignore_run_exports_from:",
        ),
        ("libtorch", "ignore_run_exports.by_name", None, "pybind11-abi"),
    ),
    "a test command in recipe-v1.yaml": (
        V1_RECIPE.name,
        ("--timeout=1200 --durations=25", "--timeout=600 --durations=25"),
        (f"pytorch python={PYTHONS[0]}", "tests.commands[14]", None, None),
    ),
    # Before issue 30 the v1 recipe wrote `==12.9` where conda-build builds with `12.9.*`, and
    # the comparison (by text, after MatchSpec) called them equal.
    "an exact variant pin in recipe-v1.yaml where conda-build's is a series": (
        V1_RECIPE.name,
        (
            "        - cuda-version ${{ cuda_compiler_version }}.*\n        - cuda-cudart-dev\n",
            "        - cuda-version ==${{ cuda_compiler_version }}\n        - cuda-cudart-dev\n",
        ),
        (
            "libtorch-cuda-linalg cuda_linalg_flavor=magma",
            "requirements.host",
            f"cuda-version {CUDA}.*",
            f"cuda-version =={CUDA}",
        ),
    ),
    "a skip in recipe-v1.yaml": (
        V1_RECIPE.name,
        ("        - not linux\n", "        - linux\n"),
        ("libtorch-cuda-linalg cuda_linalg_flavor=nomagma", "output", "built", None),
    ),
}


def _need_cuda_config() -> str:
    if GENERIC_CUDA_CONFIG is None:
        pytest.skip(".ci_support holds no CUDA config")
    return GENERIC_CUDA_CONFIG


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_to_one_recipe_alone_is_reported(tmp_path, change):
    _need_cuda_config()
    name, (old, new), (output, field, meta, v1) = CHANGES[change]
    copy = tmp_path / "recipe"
    shutil.copytree(RECIPE_DIR, copy)
    text = (copy / name).read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {name}: update this test's CHANGES"
    (copy / name).write_text(text.replace(old, new), encoding="utf-8")
    if name == "meta.yaml":
        found = compare(GENERIC_CUDA_CONFIG, meta_dir=copy)
    else:
        found = compare(GENERIC_CUDA_CONFIG, v1_recipe=copy / name)
    reported = [d for d in found if d.field == field and output in (None, d.output)]
    assert reported, "\n".join(map(str, found)) or "no difference reported"
    if meta or v1:
        assert any((d.meta, d.v1) == (meta, v1) for d in reported), "\n".join(map(str, found))
    assert _unexplained(found)


def test_a_row_of_the_differences_table_allows_exactly_its_difference(tmp_path):
    _need_cuda_config()
    copy = tmp_path / "recipe"
    shutil.copytree(RECIPE_DIR, copy)
    v1 = copy / V1_RECIPE.name
    v1.write_text(
        v1.read_text(encoding="utf-8").replace(
            "- setuptools >=77.0.3,<82", "- setuptools >=77.0.3,<83"
        )
    )
    found = compare(GENERIC_CUDA_CONFIG, v1_recipe=v1)
    readme = copy / "README.md"
    row = (
        "| `*` | `requirements.host` | `setuptools >=77.0.3,<82` | `setuptools >=77.0.3,<83` "
        "| a test row |"
    )
    head, table = readme.read_text(encoding="utf-8").split(TABLE_HEADING)
    rule = "|---|---|---|---|---|\n"
    readme.write_text(head + TABLE_HEADING + table.replace(rule, rule + row + "\n", 1))
    assert [r.reason for r in allowed_differences(readme)][-1:] == ["a test row"]
    assert _unexplained(found) != []
    assert _unexplained(found, readme) == []


def test_both_recipes_skip_a_release_candidate_config_of_a_final_release(tmp_path):
    config = _need_cuda_config()
    text = (REPO / ".ci_support" / f"{config}.yaml").read_text(encoding="utf-8")
    target = _CUDA.first("channel_targets")
    assert f"- {target}\n" in text and "- 'False'\n" in text
    rc_target = f"{target.split()[0]} pytorch_rc"
    rc = tmp_path / "rc.yaml"
    rc.write_text(
        text.replace(f"- {target}\n", f"- {rc_target}\n").replace("- 'False'\n", "- 'True'\n"),
        encoding="utf-8",
    )
    meta, skipped = from_meta(render_config(rc, root=REPO))
    assert meta == {} and skipped
    assert render_v1(V1_RECIPE, rc) == []


def test_both_recipes_apply_the_same_patches_from_the_same_directory():
    meta_text = (RECIPE_DIR / "meta.yaml").read_text(encoding="utf-8")
    rendered = render_v1(V1_RECIPE, _need_cuda_config())[0].recipe.to_dict()
    patches = [p for source in rendered["staging_caches"][0]["source"] for p in source["patches"]]
    assert patches == sorted(patches)
    for patch in patches:
        assert (RECIPE_DIR / patch).is_file()
        assert f"- {patch}\n" in meta_text


def test_the_recipe_folder_never_holds_both_meta_yaml_and_recipe_yaml():
    # conda-smithy's lint R-051 refuses that; recipe/README.md says how to switch.
    assert not ((RECIPE_DIR / "meta.yaml").exists() and (RECIPE_DIR / "recipe.yaml").exists())


@pytest.mark.parametrize(
    ("spec", "version", "matches"),
    [
        ("mkl-devel 2026", "2026.0.1", True),
        ("mkl-devel 2026", "2027", False),
        ("cuda-version 12.9", "12.9", True),
        ("setuptools >=77.0.3,<82", "82.0", False),
    ],
)
def test_meta_yaml_specs_are_compared_by_what_conda_build_makes_them_match(spec, version, matches):
    # conda-build builds `mkl-devel 2026` as `mkl-devel 2026.*`, which a v1 `==2026` is not.
    built_with = MatchSpec(conda_build_spec(spec)).version
    assert VersionSpec(built_with).matches(Version(version)) is matches
