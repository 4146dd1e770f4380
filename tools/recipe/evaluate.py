"""The evaluation stage of the recipe model: meta.yaml text + one variant -> the parsed recipe.

conda-build selects lines, renders jinja2, selects again and parses YAML.  The fast path
(:meth:`Recipe.parse` with ``fast=True``) compiles meta.yaml once with every selector turned
into a jinja condition and parses the result piece by piece (:func:`loader.load_chunked`);
whenever it cannot handle a recipe, or rendering or parsing fails, it falls back to the slow
path, which reports the error with its source line.  Both give the same data
(tests/test_recipe_fast_path.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from tools.foundation.files import yaml_error_line, yaml_error_reason
from tools.recipe import jinja
from tools.recipe.errors import RecipeError, UndefinedName, UnsupportedConstruct
from tools.recipe.loader import DuplicateKey, load_chunked, load_yaml
from tools.recipe.namespace import python_series, selector_namespace
from tools.recipe.selectors import cache_key_value, evaluate, names_read, select_lines
from tools.recipe.variant_config import freeze

SECTIONS = ("package", "source", "build", "requirements", "test", "about", "extra", "outputs")


@dataclass(frozen=True)
class RecipeSource:
    """meta.yaml and the build scripts next to it, as text."""

    meta_text: str
    scripts: tuple[tuple[str, str], ...] = ()  # (path relative to the recipe, text)
    path: str = "meta.yaml"

    def script(self, name: str) -> str | None:
        return dict(self.scripts).get(name)


@dataclass(frozen=True)
class Target:
    """Where the packages run (``subdir``) and where the build runs (``build_subdir``)."""

    subdir: str
    build_subdir: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict)

    @property
    def build(self) -> str:
        return self.build_subdir or self.subdir

    @property
    def platform(self) -> str:
        return self.subdir.split("-")[0]


class Recipe:
    """A meta.yaml rendered for one target; cheap to query for many variants.

    The per-variant caches live on the instance: one ``Recipe`` per render call, nothing
    kept between calls except the pure-function caches of the text stages.  ``fast=False``
    always takes the slow path (the differential test compares the two).
    """

    def __init__(self, source: RecipeSource, target: Target, *, fast: bool = True) -> None:
        self.source = source
        self.target = target
        self.fast = fast
        self._names: dict[tuple, dict[str, Any]] = {}
        self._parsed: dict[tuple, dict[str, Any]] = {}
        self._selected: dict[tuple, str] = {}
        self._keys: dict[int, tuple[Mapping[str, Any], tuple]] = {}
        self._selector_values: dict[tuple, bool] = {}

    def key(self, variant: Mapping[str, Any]) -> tuple:
        """A hashable identity of ``variant`` (computed once per dict; the dict is kept alive)."""
        found = self._keys.get(id(variant))
        if found is None or found[0] is not variant:
            found = (variant, freeze(variant))
            self._keys[id(variant)] = found
        return found[1]

    def names(self, variant: Mapping[str, Any]) -> dict[str, Any]:
        key = self.key(variant)
        found = self._names.get(key)
        if found is None:
            found = selector_namespace(
                self.target.subdir,
                variant,
                build_subdir=self.target.build,
                environ=self.target.environ,
            )
            self._names[key] = found
        return found

    def select(self, raw: str, variant: Mapping[str, Any]) -> str:
        key = (raw, self.key(variant))
        found = self._selected.get(key)
        if found is None:
            found = select_lines(raw, self.names(variant), source=self.source.path).text
            self._selected[key] = found
        return found

    def parse(self, variant: Mapping[str, Any]) -> dict[str, Any]:
        key = self.key(variant)
        found = self._parsed.get(key)
        if found is None:
            found = self._parse(variant)
            self._parsed[key] = found
        return found

    def _parse(self, variant: Mapping[str, Any]) -> dict[str, Any]:
        names = self.names(variant)
        extra: dict[str, Any] = {
            "PKG_NAME": "",
            "PKG_VERSION": "",
            "PKG_BUILDNUM": "0",
            "PKG_HASH": "1234567",
            "PKG_BUILD_STRING": "placeholder",
        }
        extra.update(language_vars(variant))
        # conda-build's last parse is strict (StrictUndefined), unless the recipe as a whole
        # is skipped for this variant: an undefined name is then an error, not "".
        with jinja.recording_undefined() as used:
            meta = self._render_once(names, variant, extra)
        if re.search(r"PKG_(NAME|VERSION|BUILDNUM|BUILD_STRING)", self.source.meta_text):
            # conda-build re-parses until the package name/version settle.
            package = meta.get("package") or {}
            build = meta.get("build") or {}
            extra.update(
                PKG_NAME=str(package.get("name", "")),
                PKG_VERSION=str(package.get("version", "")),
                PKG_BUILDNUM=str(build.get("number", 0) or 0),
            )
            with jinja.recording_undefined() as used:
                meta = self._render_once(names, variant, extra)
        if used and not (meta.get("build") or {}).get("skip"):
            raise UndefinedName(self._line_using(used[0]), used[0])
        self._check_package(meta)
        return meta

    def _line_using(self, name: str) -> str:
        """``meta.yaml:<line>`` of the first jinja expression naming ``name``."""
        word = re.compile(rf"\{{[{{%].*\b{re.escape(name)}\b.*[%}}]\}}")
        for number, line in enumerate(self.source.meta_text.splitlines(), start=1):
            if word.search(line):
                return f"{self.source.path}:{number}"
        return self.source.path

    def _check_package(self, meta: Mapping[str, Any]) -> None:
        """conda-build's MetaData.name()/version(): a recipe must name its package."""
        package = meta.get("package") or {}
        name = str(package.get("name") or "")
        if not name:
            raise RecipeError(self.source.path, "package/name missing; add `package: name: ...`")
        if name != name.lower():
            raise RecipeError(self.source.path, f"package/name must be lowercase, got {name!r}")
        if not str(package.get("version") or "") and not meta.get("outputs"):
            raise RecipeError(
                self.source.path, "package/version missing; add `package: version: ...`"
            )

    def _rendered_text(
        self, names: dict[str, Any], variant: Mapping[str, Any], extra: dict[str, Any]
    ) -> str | None:
        """The fast path: one compiled template per recipe, selections as context values.

        None means "take the slow path"; so does a rendering error, which the slow path then
        raises with its source line.  Anything else (a selector that cannot be evaluated, a
        bug) propagates, exactly as it would from the slow path.
        """
        if not self.fast:
            return None
        structure = tuple(
            self._selector_value(selector, names)
            for selector in jinja.structural_selectors(self.source.meta_text)
        )
        compiled = jinja.conditional_template(self.source.meta_text, structure)
        if compiled is None:
            return None
        template, selectors = compiled
        selections = {
            f"_cfsel{index}": self._selector_value(selector, names)
            for index, selector in enumerate(selectors)
        }
        info = jinja.TargetInfo(self.target.subdir, self.target.build)
        try:
            rendered = jinja.render_conditional(
                template, selections, names, variant, info, extra=extra
            )
        except jinja.RENDER_ERRORS:
            return None
        return rendered

    def _selector_value(self, selector: str, names: Mapping[str, Any]) -> bool:
        """A selector's truth value, memoised on the values of the names it reads (the
        recipe's selectors repeat on many lines and variants share most values)."""
        read = names_read(selector)
        key = (selector, tuple(cache_key_value(names.get(n)) for n in read))
        value = self._selector_values.get(key)
        if value is None:
            text = self.source.meta_text
            line = next(
                (i for i, ln in enumerate(text.splitlines(), 1) if f"[{selector}]" in ln), "?"
            )
            value = evaluate(selector, names, where=f"{self.source.path}:{line}")
            self._selector_values[key] = value
        return value

    def _render_once(
        self, names: dict[str, Any], variant: Mapping[str, Any], extra: dict[str, Any]
    ) -> dict[str, Any]:
        fast = self._rendered_text(names, variant, extra)
        data = None
        if fast is not None:
            try:
                data = load_chunked(fast, names, self.source.path)
            except (DuplicateKey, yaml.YAMLError):
                data = None  # the slow path reports it with the source line
        if data is None:
            data = self._slow(names, variant, extra)  # also raises errors with their source line
        return self._check(data)

    def _slow(
        self, names: dict[str, Any], variant: Mapping[str, Any], extra: dict[str, Any]
    ) -> Any:
        """Select, render, select again, keeping track of source lines for error messages."""
        path = self.source.path
        first = select_lines(
            self.source.meta_text, names, source=path, origin=_identity(self.source.meta_text)
        )
        info = jinja.TargetInfo(self.target.subdir, self.target.build)
        rendered = jinja.render(
            first.text, names, variant, info, extra=extra, source=path, line_of=first.source_line
        )
        second = select_lines(rendered, names, source=path, origin=first.origin)
        try:
            return load_yaml(second.text)
        except DuplicateKey as exc:
            raise UnsupportedConstruct(
                f"{path}:{second.source_line(exc.line)}",
                f"duplicate key {exc.key!r} left after applying selectors; "
                "give each copy a selector",
            ) from exc
        except yaml.YAMLError as exc:
            line = yaml_error_line(exc, second.text)
            where = f"{path}:{second.source_line(line)}" if line is not None else path
            reason = f"{yaml_error_reason(exc)}, after selectors and jinja"
            raise RecipeError(where, f"not valid YAML ({reason})") from exc

    def _check(self, data: Any) -> dict[str, Any]:
        path = self.source.path
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise RecipeError(path, "meta.yaml must be a mapping at the top level")
        for section in SECTIONS:
            if section in data and not data[section]:
                data[section] = [] if section == "outputs" else {}
        if "outputs" in data and not isinstance(data["outputs"], list):
            raise RecipeError(path, 'outputs: must be a list of mappings ("- name: ...")')
        _check_sections(path, "", data)
        for index, out in enumerate(data.get("outputs") or [], start=1):
            if not isinstance(out, dict):
                raise RecipeError(path, f"outputs item {index} must be a mapping (- name: ...)")
            _check_sections(path, f"outputs item {index}: ", out)
        return data


def _check_sections(path: str, where: str, data: Mapping[str, Any]) -> None:
    """conda-build reads these sections as mappings (requirements may be a plain list)."""
    for section in ("package", "build", "requirements", "test", "about", "extra"):
        value = data.get(section)
        if value is None or isinstance(value, dict):
            continue
        if section == "requirements" and isinstance(value, list):
            continue
        raise RecipeError(path, f"{where}the {section} section must be a mapping")


def _identity(text: str) -> tuple[int, ...]:
    return tuple(range(1, text.count("\n") + 2))


def language_vars(variant: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    python = variant.get("python")
    if isinstance(python, str) and python:
        out["PY_VER"] = python_series(python)
        out["CONDA_PY"] = out["PY_VER"].replace(".", "")
    numpy = variant.get("numpy")
    if isinstance(numpy, str) and numpy:
        out["CONDA_NPY"] = "".join(numpy.split(".")[:2])
        out["NPY_VER"] = ".".join(numpy.split(".")[:2])
    return out
