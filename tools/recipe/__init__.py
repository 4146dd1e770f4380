"""The recipe model: conda-build's meta.yaml semantics over strings, no I/O.

- :mod:`~tools.recipe.selectors` -- ``# [...]`` line selectors, interpreted from an AST
  with conda-build's whitelist (never ``eval``);
- :mod:`~tools.recipe.namespace` -- the names selectors and jinja see per platform/variant;
- :mod:`~tools.recipe.jinja` -- jinja2 with ``compiler()``, ``stdlib()``, ``cdt()``,
  ``pin_subpackage()``, ``pin_compatible()``, ``environ``;
- :mod:`~tools.recipe.text` -- conda-build's text rules for which variant keys a recipe uses;
- :mod:`~tools.recipe.model` -- variants in, one :class:`OutputVariant` per package out.

Errors are :class:`~tools.recipe.errors.RecipeError` (one line: file, line, construct).
"""

from tools.recipe.errors import RecipeError, UnsupportedConstruct
from tools.recipe.model import OutputVariant, RecipeSource, Target, render

__all__ = ["OutputVariant", "RecipeError", "RecipeSource", "Target", "UnsupportedConstruct", "render"]
