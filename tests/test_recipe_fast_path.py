"""Differential test: the fast YAML path and the slow one render the same outputs.

The fast path (:mod:`tools.recipe.evaluate`) compiles meta.yaml once with selectors as jinja
conditions and parses it piece by piece; the slow path selects, renders, selects again and
parses the whole text, the way conda-build does.  On every CI config of this feedstock and of
the fixture feedstocks they must agree field by field.  The recipe unit tests
(tests/test_render_recipe.py) render every recipe both ways too, errors included.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools.foundation.files import read_user_file
from tools.recipe.errors import RecipeError, UnsupportedConstruct
from tools.recipe.evaluate import RecipeSource, Target
from tools.recipe.model import render
from tools.recipe.variant_config import explode, load_variant_yaml
from tools.render.config import build_platform_for, list_configs, load_forge_yml
from tools.render.meta import load_recipe_source, variants_for_config

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "recipes"
FEEDSTOCKS = {"feedstock": REPO, "torchlike": FIXTURES / "torchlike", "pyext": FIXTURES / "pyext"}
CASES = [
    pytest.param(root, config, id=f"{name}-{config}")
    for name, root in FEEDSTOCKS.items()
    for config in list_configs(root)
]


def render_both_ways(source: RecipeSource, variants, target: Target):
    """Both paths' outcome: the outputs, or the error each raised (type and message)."""
    outcomes = []
    for fast in (True, False):
        try:
            outcomes.append(render(source, variants, target, fast_yaml=fast))
        except RecipeError as exc:
            outcomes.append((type(exc), str(exc)))
    return outcomes


def test_every_feedstock_has_configs_to_compare() -> None:
    assert {
        name: len(list_configs(root)) > 0 for name, root in FEEDSTOCKS.items()
    } == dict.fromkeys(FEEDSTOCKS, True)


def _inputs(root: Path, config: str) -> tuple[RecipeSource, list, Target]:
    """What a render of ``config`` of the feedstock at ``root`` reads."""
    config_path = root / ".ci_support" / f"{config}.yaml"
    config_text = read_user_file(config_path)
    subdir = load_variant_yaml(config_text)["target_platform"][0]
    build_subdir = build_platform_for(load_forge_yml(root), subdir)
    cbc = root / "recipe" / "conda_build_config.yaml"
    variants = variants_for_config(
        config_text,
        read_user_file(cbc) if cbc.is_file() else None,
        config_source=str(config_path),
        cbc_source=str(cbc),
        subdir=subdir,
        build_subdir=build_subdir,
    )
    return load_recipe_source(root / "recipe"), variants, Target(subdir, build_subdir)


@pytest.mark.parametrize(("root", "config"), CASES)
def test_fast_and_slow_paths_render_the_same_outputs(root: Path, config: str) -> None:
    fast, slow = render_both_ways(*_inputs(root, config))
    assert isinstance(fast, list) and len(fast) > 0
    assert fast == slow


def _render(meta: str, **values: str):
    spec = {"target_platform": ["linux-64"], **{k: [v] for k, v in values.items()}}
    source = RecipeSource(textwrap.dedent(meta), (), "meta.yaml")
    return render_both_ways(source, explode(spec), Target("linux-64"))


def test_an_error_in_a_jinja_expression_is_one_recipe_error_on_both_paths() -> None:
    # The fast path's jinja raises; it must fall back so the slow path reports the error,
    # never return a result of its own (nor a traceback).
    meta = """\
    package:
      name: pkg
      version: {{ 1 // 0 }}
    """
    fast, slow = _render(meta)
    assert fast == slow
    assert fast[0] is RecipeError and fast[1].startswith("meta.yaml:3: jinja2 evaluation failed")


def test_a_duplicate_key_is_an_error_on_both_paths() -> None:
    meta = """\
    package:
      name: pkg
      version: 1.0
    outputs:
      - name: a
        build:
          number: 1
          number: 2
    """
    fast, slow = _render(meta)
    assert fast == slow
    assert fast[0] is UnsupportedConstruct and "duplicate key 'number'" in fast[1]


def test_a_selector_that_cannot_be_evaluated_is_the_same_error_on_both_paths() -> None:
    meta = """\
    package:
      name: pkg
      version: 1.0
    requirements:
      host:
        - zlib  # [undefined_name.attribute]
    """
    fast, slow = _render(meta)
    assert fast == slow
    assert fast[0] is UnsupportedConstruct and fast[1].startswith("meta.yaml:6: selector")


def test_a_selected_jinja_statement_is_selected_before_the_template_compiles() -> None:
    # conda-build drops the `{% if %}` and `{% endif %}` lines on linux, so `a` stays; wrapped
    # in selector conditions of their own, the `{% endif %}` closed the wrapper and the fast
    # path dropped `a`: a valid recipe, so nothing fell back to the slow path.
    meta = """\
    package:
      name: pkg
      version: 1.0
    requirements:
      host:
        {% if foo %}   # [win]
        - a
        {% endif %}    # [win]
        - b
    """
    fast, slow = _render(meta)
    assert fast == slow
    assert fast[0].requirements["host"] == ("a", "b")


def test_every_config_of_the_feedstock_renders_on_the_fast_path(monkeypatch) -> None:
    # The CUDA configs' track_features blocks (an `{% if %}` on a selector line) sent every
    # CUDA variant down the slow path: half the renders of `python -m tools matrix`.
    from tools.recipe.evaluate import Recipe

    def slow(*args, **kwargs):
        raise AssertionError("a config of the feedstock took the slow path")

    monkeypatch.setattr(Recipe, "_slow", slow)
    for config in list_configs(REPO):
        source, variants, target = _inputs(REPO, config)
        assert render(source, variants, target)
