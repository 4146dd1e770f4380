"""Both recipes render where conda-smithy renders them without variants (issues 58 and 60).

conda-smithy's linter renders meta.yaml with every variant key undefined, as its
``NullUndefined``; its v1 path (rattler-build-conda-compat 1.4.10) evaluates recipe-v1.yaml
(recipe.yaml once switched) first with only ``context:`` defined. The rules, evaluated with the
models in tests/helpers/template_standins.py (each cites the source it models):

- meta.yaml: no method call on a name the linter leaves undefined (a variant key), and no filter
  that raises on its stand-in;
- recipe-v1.yaml: at compat's context pass, no filter that does not accept an undefined value
  (compat's ``split`` does not; ``version_to_buildstring``, ``replace``, ``default`` do) and no
  jinja test (``is endingwith`` is none of compat's; none of jinja2's either) on a value defined
  only per variant.
"""

from __future__ import annotations

import pytest
from helpers.cli import REPO
from helpers.template_standins import compat_context_findings, smithy_lint_findings

META = REPO / "recipe" / "meta.yaml"
V1 = REPO / "recipe" / "recipe-v1.yaml"


def test_meta_yaml_calls_no_method_on_a_variant_key_the_linter_leaves_undefined() -> None:
    findings = smithy_lint_findings(META.read_text(encoding="utf-8"))
    assert not findings, "\n".join(f"recipe/meta.yaml {f}" for f in findings)


def test_recipe_v1_applies_no_split_or_test_to_a_variant_key_at_compats_context_pass() -> None:
    findings = compat_context_findings(V1.read_text(encoding="utf-8"))
    assert not findings, "\n".join(f"recipe/recipe-v1.yaml {f}" for f in findings)


# The models themselves, on the constructs the free-threading work brought in (meta.yaml
# lines 430 and 511, recipe-v1.yaml lines 478 and 583 before issues 58 and 60) and on those
# the recipes keep.


def test_the_linter_model_names_a_method_call_on_the_python_variant_and_its_line() -> None:
    text = 'a: 1\nb: {{ python.split(" ")[0] }}{{ "t" if python.endswith("t") else "" }}\n'
    assert [(f.line, f.construct) for f in smithy_lint_findings(text)] == [
        (2, "python.split(...)"),
        (2, "python.endswith(...)"),
    ]


@pytest.mark.parametrize(
    "construct",
    [
        "{{ python }}",
        '{{ cuda_compiler_version | replace(".", "") }}',
        '{{ (cuda_arch_set | default("full")) != "full" }}',
        "{{ (is_rc | string) == 'True' }}",
        "{{ python[0] }}",  # NullUndefined answers an item with a string
    ],
)
def test_the_linter_model_takes_what_its_null_undefined_takes(construct: str) -> None:
    assert smithy_lint_findings(f"a: {construct}\n") == []


def test_the_compat_model_names_split_and_endingwith_on_the_python_variant() -> None:
    text = (
        "context:\n  version: '1'\nb:\n"
        '  - ${{ python | split(" ") | first }}${{ "t" if python is endingwith("t") else "" }}\n'
    )
    findings = compat_context_findings(text)
    assert [(f.line, f.construct) for f in findings] == [
        (4, '${{ python | split(" ") | first }}'),
        (4, '${{ "t" if python is endingwith("t") else "" }}'),
    ]
    assert "UndefinedError: 'python' is undefined" in findings[0].why
    assert "No test named 'endingwith'" in findings[1].why


def test_the_compat_model_refuses_a_jinja_test_compat_has_on_a_variant_key() -> None:
    [finding] = compat_context_findings("b: ${{ 1 if python is string else 0 }}\n")
    assert "the jinja test 'string' on a value defined only per variant" in finding.why


@pytest.mark.parametrize("construct", ["${{ python | first }}", "${{ python | last }}"])
def test_the_compat_model_reads_what_the_pass_rendered_back_as_yaml(construct: str) -> None:
    # jinja2's first and last take an undefined value, but print a message with ": " in it.
    [finding] = compat_context_findings(f"context:\n  version: '2.13.0'\nb: {construct}\n")
    assert finding.line == 3 and "no YAML" in finding.why


@pytest.mark.parametrize(
    "construct",
    [
        "${{ python }}",
        "${{ python | version_to_buildstring }}",
        '${{ cuda_compiler_version | replace(".", "") }}',
        '${{ (cuda_arch_set | default("full")) != "full" }}',
        "${{ version | split('.') | first }}",  # defined in context: split is fine
    ],
)
def test_the_compat_model_takes_what_compat_takes(construct: str) -> None:
    assert compat_context_findings(f"context:\n  version: '2.13.0'\nb: {construct}\n") == []


def test_the_linter_model_names_the_line_of_a_filter_the_linter_lacks() -> None:
    # conda-smithy's linter has jinja2's filters only: rattler-build's split is none of them.
    [finding] = smithy_lint_findings('a: 1\nb: {{ python | split(" ") }}\n')
    assert finding.line == 2 and "No filter named 'split'" in finding.why
