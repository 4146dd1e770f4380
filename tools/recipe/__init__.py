"""The recipe model: conda-build's meta.yaml semantics over strings, no I/O.

Recipe text (imports nothing above it):

- :mod:`~tools.recipe.selectors` -- ``# [...]`` line selectors, interpreted from an AST
  with conda-build's whitelist (never ``eval``);
- :mod:`~tools.recipe.namespace` -- the names selectors and jinja see per platform/variant;
- :mod:`~tools.recipe.jinja` -- jinja2 with ``compiler()``, ``stdlib()``, ``cdt()``,
  ``pin_subpackage()``, ``pin_compatible()``, ``environ``;
- :mod:`~tools.recipe.text` -- conda-build's text rules for which variant keys a recipe uses;
- :mod:`~tools.recipe.loader` -- rendered text to data with conda-build's YAML loader.

conda-build's semantics, in the order they run:

- :mod:`~tools.recipe.variant_config` -- conda_build_config.yaml files and variant sets
  (combine, explode, squish);
- :mod:`~tools.recipe.evaluate` -- meta.yaml + one variant -> the parsed recipe;
- :mod:`~tools.recipe.requirements` -- requirements as conda-build reads them, variant pins
  inserted, pin arithmetic;
- :mod:`~tools.recipe.variant_hash` -- the keys a hash covers, the hash, the loop variables;
- :mod:`~tools.recipe.metadata` -- conda-build's MetaData: used keys, build string, outputs;
- :mod:`~tools.recipe.model` -- variants in, one ``OutputVariant`` per package out.

Errors are :class:`~tools.recipe.errors.RecipeError` (one line: file, line, construct).
This package's ``__init__`` imports nothing, so importing a text module never pulls in the
model above it.
"""
