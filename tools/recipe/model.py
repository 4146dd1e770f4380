"""The recipe model: meta.yaml text + a list of variants -> one record per output variant.

This follows conda-build's own algorithm (``distribute_variants`` and
``get_output_metadata_set``) closely, because that algorithm *is* the specification of
what a CI job builds:

1. the top level is rendered with the first variant to find the keys it uses; one
   top-level variant per distinct combination of those keys (``_distribute``);
2. per top-level variant, every output is rendered for each combination of the keys the
   whole recipe uses, and outputs are deduplicated on the keys *they* use
   (``_output_set``) -- so a ``pytorch`` output that uses ``python`` appears once per
   Python while ``libtorch`` appears once;
3. build strings get conda-build's hash (sha1 of the JSON of the used keys) in place of
   ``h{{ PKG_HASH }}``; ``pin_subpackage`` is resolved against the sibling outputs.

Inputs are strings (meta.yaml and the scripts it names); there is no I/O here.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from tools.recipe import jinja, text
from tools.recipe.errors import RecipeError, UnsupportedConstruct
from tools.recipe.namespace import selector_namespace
from tools.recipe.selectors import select_lines

HASH_LENGTH = 7
# Keys that never split variants (conda-build's get_vars special keys).
SPECIAL_KEYS = frozenset({"pin_run_as_build", "zip_keys", "ignore_version", "extend_keys"})
SECTIONS = ("package", "source", "build", "requirements", "test", "about", "extra", "outputs")
REQUIREMENT_KINDS = ("build", "host", "run", "run_constrained")


@dataclass(frozen=True)
class RecipeSource:
    """meta.yaml and the build scripts next to it, as text."""

    meta_text: str
    scripts: tuple[tuple[str, str], ...] = ()   # (path relative to the recipe, text)
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


@dataclass(frozen=True)
class OutputVariant:
    """One package a variant set produces, with everything conda-build knows about it."""

    name: str
    version: str
    build_number: int
    build_string: str
    skip: bool
    noarch: str | None
    requirements: Mapping[str, tuple[str, ...]]
    run_exports: Mapping[str, tuple[str, ...]]
    test: Mapping[str, Any]
    script: str | None
    variant: Mapping[str, Any]
    used_vars: frozenset[str]
    hash_input: Mapping[str, str]
    # For the CI-job split (conda-smithy's view of this output).
    top_level_vars: frozenset[str]
    top_level_loop_vars: frozenset[str]
    variants: tuple[Mapping[str, Any], ...] = field(repr=False, default=())
    top_skip: bool = False


def _freeze(variant: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k, v if isinstance(v, str) else repr(v)) for k, v in variant.items()))


class _DuplicateKey(Exception):
    def __init__(self, key: str, line: int) -> None:
        super().__init__(key)
        self.key, self.line = key, line


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """conda-build parses meta.yaml with PyYAML's safe loader (YAML 1.1 scalars); so do we,
    except that a key left twice after selectors is an error instead of "last one wins"."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise _DuplicateKey(str(key), key_node.start_mark.line + 1)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


@lru_cache(maxsize=512)
def _load_yaml(rendered: str) -> Any:
    return yaml.load(rendered, Loader=_StrictLoader)


def ensure_list(value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _as_str_list(value: Any) -> list[str]:
    return [str(v) for v in ensure_list(value) if v is not None and str(v) != ""]


def expand_requirements(entry: Any) -> dict[str, list[str]]:
    """conda-build's ``expand_reqs``: a bare list means host and run."""
    if entry is None:
        return {}
    if not isinstance(entry, Mapping):
        values = _as_str_list(entry)
        return {"host": list(values), "run": list(values)} if values else {}
    return {str(k): _as_str_list(v) for k, v in entry.items()}


_BARE_RE = re.compile(r"^(\S+)\s*$")
_XX_RE = re.compile(r"([0-9a-zA-Z\.\-\_]+)\s+x\.x")


def insert_variant_versions(reqs: dict[str, list[str]], variant: Mapping[str, Any], env: str) -> None:
    """A bare requirement named like a variant key receives the key's value as its pin.

    (conda-build matches ``^key$`` with ``_`` standing for ``-`` or ``_``; a bare name
    normalised to underscores is the same test.)
    """
    build_deps = list(reqs.get("build", [])) + list(reqs.get("host", []))
    items = list(reqs.get(env, []))
    if not items:
        return
    for index, item in enumerate(items):
        match = _BARE_RE.match(item)
        if not match:
            continue
        name = match.group(1)
        key = name.replace("-", "_")
        if key in variant and (env in ("build", "host") or name in build_deps):
            value = variant[key]
            pin = value if isinstance(value, str) else value[0]
            items[index] = jinja.ensure_valid_spec(f"{name} {pin}")
    for index, item in enumerate(items):
        match = _XX_RE.match(item)
        if match and variant.get(match.group(1)):
            items[index] = jinja.ensure_valid_spec(f"{match.group(1)} {variant[match.group(1)]}")
    reqs[env] = items


def _increment(part: str, alpha: bool) -> str:
    try:
        return str(int(part) + 1) + ("a" if alpha else ".0a0")
    except ValueError:
        return chr(ord(part[0]) + 1)


def apply_pin_expressions(version: str, min_pin: str | None = "x.x.x.x.x.x", max_pin: str | None = "x") -> str:
    """conda-build's pin arithmetic for dotted numeric versions: ``2.13.0``, ``x.x`` -> ``<2.14.0a0``."""
    parts = version.replace("_", ".").split(".")
    bounds = ["", ""]
    for index, pin in enumerate((min_pin, max_pin)):
        if not pin:
            continue
        places = len(pin.split("."))
        if index == 1:
            places = min(places, len(parts))
        chosen = parts[:places]
        if index == 1:
            alpha = parts[min(places, len(parts) - 1)].isalpha()
            chosen = chosen[:-1] + [_increment(chosen[-1], alpha)]
        bounds[index] = ".".join(chosen)
    lower, upper = bounds
    out = []
    if lower:
        out.append(">=" + lower)
    if upper:
        out.append("<" + upper)
    return ",".join(out)


def hash_input(variant: Mapping[str, Any], used: set[str] | frozenset[str], run: Sequence[str],
               *, numpy_excluded: bool = False) -> dict[str, str]:
    """conda-build's ``get_hash_contents``: the used keys whose values the hash covers."""
    excludes = ["python", "r_base", "perl", "lua", *ensure_list(variant.get("ignore_version"))]
    if numpy_excluded:
        excludes.append("numpy")
    pattern = re.compile("|".join(rf"{e}[\s$]?.*" for e in excludes))
    deps = [k for k in sorted(used) if k in variant and (not pattern.match(k) or " " in str(variant[k]))]
    contents = {} if deps == ["target_platform"] else {k: variant[k] for k in deps}
    for req in run:
        if req.startswith("__"):
            contents[req.split(" ")[0]] = req
    return contents


def hash_of(contents: Mapping[str, Any]) -> str:
    if not contents:
        return ""
    digest = hashlib.sha1(json.dumps(contents, sort_keys=True).encode()).hexdigest()
    return f"h{digest}"[: HASH_LENGTH + 1]


def get_loop_vars(variants: Sequence[Mapping[str, Any]], subset: set[str] | None = None) -> set[str]:
    first, *others = variants
    consider = set(first)
    if subset is not None:
        consider &= subset
    consider -= SPECIAL_KEYS | set(ensure_list(first.get("extend_keys")))
    return {k for k in consider if any(first.get(k) != o.get(k) for o in others)}


def reduce_variants(variants: Sequence[Mapping[str, Any]], used: set[str]) -> list[dict[str, Any]]:
    """conda-build's ``get_reduced_variant_set``: one value for every key nobody uses."""
    from tools.variants import explode, squish, zip_groups

    squished = squish(variants)
    groups = zip_groups(variants[0].get("zip_keys"))
    used_groups = [g for g in groups if set(g) & used]
    extend = set(ensure_list(squished.get("extend_keys")))
    for key in set(variants[0]) - used:
        if any(key in g for g in used_groups) or key in extend or key == "zip_keys":
            continue
        values = squished.get(key)
        if isinstance(values, list) and values:
            squished[key] = [values[0]]
    return explode(squished)


class _Meta:
    """One rendered view of the recipe (top level or an output) under one variant."""

    def __init__(self, recipe: Recipe, variant: dict[str, Any], *, variants: list[dict[str, Any]],
                 input_variants: list[dict[str, Any]]) -> None:
        self.recipe = recipe
        self.variant = variant
        self.variants = variants
        self.input_variants = input_variants
        self.meta: dict[str, Any] = recipe.parse(variant)
        self.output_names = [str(o.get("name", "")) for o in self.meta.get("outputs") or []]
        self.is_output = False
        self.out: dict[str, Any] = {}
        self._used: dict[tuple[bool, bool], frozenset[str]] = {}

    # -- identity ----------------------------------------------------------------
    def name(self) -> str:
        return str(self.meta.get("package", {}).get("name", ""))

    def version(self) -> str:
        return str(self.meta.get("package", {}).get("version", ""))

    def build(self) -> dict[str, Any]:
        return self.meta.get("build") or {}

    def build_number(self) -> int:
        number = self.build().get("number")
        try:
            return int(number) if number not in (None, "") else 0
        except (TypeError, ValueError) as exc:
            raise RecipeError(self.recipe.source.path, f"build/number {number!r} is not an integer") from exc

    def skip(self) -> bool:
        return bool(self.build().get("skip", False))

    def noarch(self) -> str | None:
        value = self.build().get("noarch")
        return str(value) if value else None

    def requirements(self) -> dict[str, list[str]]:
        return expand_requirements(self.meta.get("requirements"))

    # -- text views (conda-build's extract_* helpers) ------------------------------
    def names(self) -> dict[str, Any]:
        return self.recipe.names(self.variant)

    def _select(self, raw: str) -> str:
        return self.recipe.select(raw, self.variant)

    def outputs_text(self, apply: bool) -> str:
        raw = text.extract(self.recipe.source.meta_text, text.OUTPUTS_SECTION)
        return self._select(raw).rstrip() if apply else raw.rstrip()

    def single_output_text(self, name: str, apply: bool) -> str:
        blocks = text.output_blocks(self.outputs_text(apply))
        names = self.output_names or [self.name()]
        if name not in names:
            return self.name()
        index = names.index(name)
        if not blocks:
            return ""
        return blocks[index] if index < len(blocks) else ""

    def recipe_text(self, *, force_top_level: bool = False, apply: bool = True) -> str:
        raw = self.recipe.source.meta_text
        if self.is_output and not force_top_level:
            raw = self.single_output_text(self.name(), True)
        return (self._select(raw) if apply else raw).rstrip()

    def requirements_text(self) -> str:
        full = self.recipe_text()
        pattern = r"(^\s*requirements:.*?)(?=^\s*test:|^\s*extra:|^\s*about:|^\s*-\s+name:|^outputs:|\Z)"
        if "package:" in full:
            pattern = text.TOP_REQUIREMENTS
        raw = self.recipe.source.meta_text
        if self.is_output:
            raw = self.single_output_text(self.name(), True)
        return self._select(text.extract(raw, pattern)).rstrip()

    # -- used variables --------------------------------------------------------------
    def _texts(self, force_top_level: bool, force_global: bool, apply: bool) -> tuple[str, str]:
        if force_global:
            whole = self.recipe_text(force_top_level=force_top_level, apply=apply)
            return whole, whole
        if self.is_output and not force_top_level:
            whole = self.single_output_text(self.name(), apply)
        else:
            whole = self.recipe_text(force_top_level=force_top_level, apply=apply).replace(
                self.outputs_text(apply).strip(), ""
            ) + self.single_output_text(self.name(), apply)
        return text.requirements_block(whole), whole

    def used_vars(self, *, force_top_level: bool = False, force_global: bool = False) -> frozenset[str]:
        key = (force_top_level, force_global)
        if key in self._used:
            return self._used[key]
        keys = tuple(sorted(self.variant))
        _, raw_text = self._texts(force_top_level, force_global, False)
        used = set(text.used_in_text(keys, raw_text, selectors_only=True))
        reqs_text, selected = self._texts(force_top_level, force_global, True)
        used_all = set(text.used_in_text(keys, selected)) | used
        if force_global:
            used = used_all
        else:
            in_reqs = set(text.used_in_text(keys, reqs_text))
            kept = text.trim_build_only_deps(
                self.requirements(), in_reqs, ensure_list(self.variant.get("ignore_build_only_deps"))
            )
            used = (used_all - in_reqs) | kept
        used |= self._script_vars()
        if "target_platform" in self.variant and not self.noarch():
            used.add("target_platform")
        if "channel_targets" in self.variant:
            used.add("channel_targets")
        force_use = set(_as_str_list(self.build().get("force_use_keys")))
        force_ignore = set(_as_str_list(self.build().get("force_ignore_keys")))
        if force_use or force_ignore:
            used = (used - force_ignore) | force_use
        result = frozenset(used)
        self._used[key] = result
        return result

    def _script_vars(self) -> set[str]:
        keys = list(self.variant)
        scripts = dict(self.recipe.source.scripts)
        if "package:" not in self.recipe_text():
            script = self.out.get("script")
            if not isinstance(script, str):
                return set()
            body = scripts.get(script)
            if body is None:
                if script.endswith((".sh", ".bat")):
                    # conda-build reads the file to find the keys it uses, and fails without it.
                    raise RecipeError(self.recipe.source.path,
                                      f"output {self.name()} names script {script!r}, which is not in the recipe directory")
                return set()
            if script.endswith(".sh"):
                return text.used_in_shell_script(keys, body)
            if script.endswith(".bat"):
                return text.used_in_batch_script(keys, body)
            return set()
        used = set()
        if "build.sh" in scripts:
            used |= text.used_in_shell_script(keys, scripts["build.sh"])
        if self.recipe.target.platform == "win" and "bld.bat" in scripts:
            used |= text.used_in_batch_script(keys, scripts["bld.bat"])
        return used

    def used_loop_vars(self, **kw: bool) -> set[str]:
        return get_loop_vars(self.input_variants, set(self.used_vars(**kw)))

    # -- numpy special cases for the hash -------------------------------------------
    def numpy_excluded(self) -> bool:
        reqs_text = self.requirements_text()
        if text.NUMPY_XX_RE.search(reqs_text):
            return True
        if re.search(r"pin_\w+\([\'\"]numpy[\'\"]", reqs_text):
            xs = re.search(r"pin_\w+\([\'\"]numpy[\'\"].*((?<=x_pin=[\'\"])[x\.]*(?=[\'\"]))", reqs_text)
            not_xx = xs.group(1).count("x") != 2 if xs else True
            return not not_xx
        return False

    # -- build string --------------------------------------------------------------------
    def hash_contents(self) -> dict[str, str]:
        run = self.requirements().get("run", [])
        return hash_input(self.variant, self.used_vars(), run, numpy_excluded=self.numpy_excluded())

    def build_string(self) -> str:
        manual = self.build().get("string")
        # conda-build looks for "h{{ PKG_HASH }}" in the *raw* package/build text of this
        # meta: the top level's for the top-level output, the output block for the others.
        source = self.single_output_text(self.name(), True) if self.is_output else self.recipe.source.meta_text
        raw = text.extract(source, text.PACKAGE_AND_BUILD)
        uses_hash = bool(re.search(r"\s*string:", raw)) and bool(re.findall(r"h\{\{\s*PKG_HASH\s*\}\}", raw))
        if manual and not uses_hash:
            return str(manual)
        out = str(manual) if manual else self.default_build_string()
        digest = hash_of(self.hash_contents())
        if not re.findall(f"h[0-9a-f]{{{HASH_LENGTH}}}", out):
            head, *tail = out.rsplit("_", 1)
            try:
                int(head)
                out = f"{digest}_{head}" if digest else head
            except ValueError:
                out = head + digest
            if tail:
                out = "_".join([out, *tail])
        else:
            out = re.sub(f"h[0-9a-f]{{{HASH_LENGTH}}}", digest, out)
        return out

    def default_build_string(self) -> str:
        reqs = self.requirements()
        cross = self.recipe.target.build != self.recipe.target.subdir
        build_names = {r.split()[0] for r in reqs.get("host" if cross else "build", []) if r}
        run_names = {r.split()[0] for r in reqs.get("run", []) if r}
        parts: list[str] = []
        for prefix, name, places in (("py", "python", 2), ("pl", "perl", 3), ("lua", "lua", 2)):
            if name in run_names and name in build_names:
                value = str(self.variant.get(name, ""))
                parts.append(prefix + "".join(value.split(" ")[0].split(".")[:places]))
        features = _as_str_list(self.build().get("features"))
        if parts:
            parts.append("_")
        if features:
            parts.extend(("_".join(features), "_"))
        parts.append(str(self.build_number()))
        return "".join(parts)


class Recipe:
    """A meta.yaml rendered for one target; cheap to query for many variants."""

    def __init__(self, source: RecipeSource, target: Target) -> None:
        self.source = source
        self.target = target
        self._names: dict[tuple, dict[str, Any]] = {}
        self._parsed: dict[tuple, dict[str, Any]] = {}
        self._selected: dict[tuple, str] = {}
        self._keys: dict[int, tuple[Mapping[str, Any], tuple]] = {}

    def key(self, variant: Mapping[str, Any]) -> tuple:
        """A hashable identity of ``variant`` (computed once per dict; the dict is kept alive)."""
        found = self._keys.get(id(variant))
        if found is None or found[0] is not variant:
            found = (variant, _freeze(variant))
            self._keys[id(variant)] = found
        return found[1]

    def names(self, variant: Mapping[str, Any]) -> dict[str, Any]:
        key = self.key(variant)
        found = self._names.get(key)
        if found is None:
            found = selector_namespace(self.target.subdir, variant, build_subdir=self.target.build,
                                       environ=self.target.environ)
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
        extra: dict[str, Any] = {"PKG_NAME": "", "PKG_VERSION": "", "PKG_BUILDNUM": "0",
                                 "PKG_HASH": "1234567", "PKG_BUILD_STRING": "placeholder"}
        extra.update(_language_vars(variant))
        meta = self._render_once(names, variant, extra)
        if re.search(r"PKG_(NAME|VERSION|BUILDNUM|BUILD_STRING)", self.source.meta_text):
            # conda-build re-parses until the package name/version settle.
            package = meta.get("package") or {}
            build = meta.get("build") or {}
            extra.update(PKG_NAME=str(package.get("name", "")), PKG_VERSION=str(package.get("version", "")),
                         PKG_BUILDNUM=str(build.get("number", 0) or 0))
        # conda-build's last parse is strict (StrictUndefined), unless the recipe as a whole
        # is skipped for this variant: an undefined name is then an error, not "".
        with jinja.recording_undefined() as used:
            meta = self._render_once(names, variant, extra)
        if used and not (meta.get("build") or {}).get("skip"):
            raise RecipeError(self._line_using(used[0]),
                              f"failed to render jinja template: {used[0]!r} is undefined")
        self._check_package(meta)
        return meta

    def _check_package(self, meta: Mapping[str, Any]) -> None:
        """conda-build's MetaData.name()/version(): a recipe must name its package."""
        package = meta.get("package") or {}
        name = str(package.get("name") or "")
        if not name:
            raise RecipeError(self.source.path, "package/name missing; add `package: name: ...`")
        if name != name.lower():
            raise RecipeError(self.source.path, f"package/name must be lowercase, got {name!r}")
        if not str(package.get("version") or "") and not meta.get("outputs"):
            raise RecipeError(self.source.path, "package/version missing; add `package: version: ...`")

    def _line_using(self, name: str) -> str:
        """``meta.yaml:<line>`` of the first jinja expression naming ``name``."""
        word = re.compile(rf"\{{[{{%].*\b{re.escape(name)}\b.*[%}}]\}}")
        for number, line in enumerate(self.source.meta_text.splitlines(), start=1):
            if word.search(line):
                return f"{self.source.path}:{number}"
        return self.source.path

    def _rendered_text(self, names: dict[str, Any], variant: Mapping[str, Any],
                       extra: dict[str, Any]) -> str | None:
        """The fast path: one compiled template per recipe, selections as context values."""
        compiled = jinja.conditional_template(self.source.meta_text)
        if compiled is None:
            return None
        template, selectors = compiled
        selections = {}
        for index, selector in enumerate(selectors):
            selections[f"_cfsel{index}"] = _selector_value(selector, names, self.source.path,
                                                           self.source.meta_text)
        info = jinja.TargetInfo(self.target.subdir, self.target.build)
        try:
            rendered = jinja.render_conditional(template, selections, names, variant, info, extra=extra)
        except Exception:  # noqa: BLE001 -- the slow path raises it again, with its source line
            return None
        return rendered

    def _render_once(self, names: dict[str, Any], variant: Mapping[str, Any],
                     extra: dict[str, Any]) -> dict[str, Any]:
        fast = self._rendered_text(names, variant, extra)
        data = None
        if fast is not None:
            try:
                data = _load_chunked(fast, names, self.source.path)
            except (_DuplicateKey, yaml.YAMLError):
                data = None
        if data is None:
            data = self._slow(names, variant, extra)  # also raises errors with their source line
        return self._check(data)

    def _slow(self, names: dict[str, Any], variant: Mapping[str, Any], extra: dict[str, Any]) -> Any:
        """Select, render, select again, keeping track of source lines for error messages."""
        path = self.source.path
        first = select_lines(self.source.meta_text, names, source=path, origin=_identity(self.source.meta_text))
        info = jinja.TargetInfo(self.target.subdir, self.target.build)
        rendered = jinja.render(first.text, names, variant, info, extra=extra, source=path,
                                line_of=first.source_line)
        second = select_lines(rendered, names, source=path, origin=first.origin)
        try:
            return _load_yaml(second.text)
        except _DuplicateKey as exc:
            raise UnsupportedConstruct(
                f"{path}:{second.source_line(exc.line)}",
                f"duplicate key {exc.key!r} left after applying selectors; give each copy a selector",
            ) from exc
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = second.source_line(mark.line + 1) if mark else "?"
            problem = (exc.problem or exc.context or "invalid YAML").strip()
            raise RecipeError(f"{path}:{line}", f"YAML error after rendering: {problem}") from exc
        except yaml.YAMLError as exc:
            raise RecipeError(path, f"YAML error after rendering: {exc}") from exc

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
            raise RecipeError(path, "outputs: must be a list of mappings (\"- name: ...\")")
        for section in ("package", "build", "requirements", "test", "about", "extra"):
            if section in data and not isinstance(data[section], dict):
                if section == "requirements" and isinstance(data[section], list):
                    continue
                raise RecipeError(path, f"the {section} section must be a mapping")
        return data


def _split_outputs(text: str) -> tuple[str, list[str]] | None:
    """Rendered meta.yaml as (everything but ``outputs:``, one text per output item)."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.rstrip() == "outputs:"), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in ("", " ", "\t", "#")),
               len(lines))
    body = lines[start + 1:end]
    first = next((i for i, line in enumerate(body) if line.strip()), None)
    if first is None or not body[first].lstrip().startswith("- "):
        return None
    indent = len(body[first]) - len(body[first].lstrip())
    prefix = " " * indent + "- "
    starts = []
    for index, line in enumerate(body):
        if not line.strip():
            continue
        if line.startswith(prefix):
            starts.append(index)
        elif len(line) - len(line.lstrip()) <= indent:
            return None  # not a plain list of mappings at one indentation
    blocks = ["\n".join(body[a:b]) for a, b in zip(starts, [*starts[1:], len(body)])]
    return "\n".join(lines[:start] + lines[end:]), blocks


def _load_chunked(rendered: str, names: Mapping[str, Any], source: str) -> dict[str, Any] | None:
    """Select and parse the top level and each output separately, caching each piece.

    Variants of one config differ in a few outputs only (the Python of ``pytorch``, the
    flavour of a library), so most pieces are parsed once.  Selection is line-local and
    every piece ends at a line boundary, so the result equals selecting and parsing the
    whole text; anything unusual returns None and the caller parses the whole text.
    """
    split = _split_outputs(rendered)
    if split is None:
        return _load_yaml(select_lines(rendered, names, source=source).text)
    head, blocks = split
    data = _load_yaml(select_lines(head, names, source=source).text)
    if not isinstance(data, dict) or "outputs" in data:
        return None
    items = []
    for block in blocks:
        parsed = _load_yaml("outputs:\n" + select_lines(block + "\n", names, source=source).text)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("outputs"), list) or len(parsed["outputs"]) != 1:
            return None
        items.append(parsed["outputs"][0])
    data = dict(data)
    data["outputs"] = items
    return data


def _identity(text: str) -> tuple[int, ...]:
    return tuple(range(1, text.count("\n") + 2))


_SELECTOR_VALUES: dict[tuple, bool] = {}


def _selector_value(selector: str, names: Mapping[str, Any], source: str, text: str) -> bool:
    from tools.recipe.selectors import cache_key_value, evaluate, referenced_names

    key = (selector, tuple(cache_key_value(names.get(n)) for n in sorted(referenced_names(selector))))
    value = _SELECTOR_VALUES.get(key)
    if value is None:
        line = next((i for i, ln in enumerate(text.splitlines(), 1) if f"[{selector}]" in ln), "?")
        value = evaluate(selector, names, where=f"{source}:{line}")
        if len(_SELECTOR_VALUES) > 65536:
            _SELECTOR_VALUES.clear()
        _SELECTOR_VALUES[key] = value
    return value


def _language_vars(variant: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    python = variant.get("python")
    if isinstance(python, str) and python:
        short = python.split(" ")[0]
        major_minor = short.split(".")[:2]
        out["CONDA_PY"] = "".join(major_minor)
        out["PY_VER"] = ".".join(major_minor)
    numpy = variant.get("numpy")
    if isinstance(numpy, str) and numpy:
        out["CONDA_NPY"] = "".join(numpy.split(".")[:2])
        out["NPY_VER"] = ".".join(numpy.split(".")[:2])
    return out


def _filter(variants: list[dict[str, Any]], key: str, value: Any) -> list[dict[str, Any]]:
    return [v for v in variants if v.get(key) is not None and v.get(key) == value]


def _output_dicts(top: _Meta) -> list[dict[str, Any]]:
    """Output dicts of a rendered top level; the one named like the package merges the top level."""
    outputs = [dict(o) for o in (top.meta.get("outputs") or []) if isinstance(o, Mapping)]
    if len(outputs) != len(top.meta.get("outputs") or []):
        raise RecipeError(top.recipe.source.path, "every entry of outputs: must be a mapping")
    if not outputs:
        outputs = [{"name": top.name()}]
    for out in outputs:
        if out.get("name") == top.name():
            for section in ("requirements", "build", "about"):
                base = top.meta.get(section) or {}
                mine = out.get(section) or {}
                if section == "requirements":
                    mine = expand_requirements(mine)
                    base = expand_requirements(base)
                merged = dict(mine)
                for k, v in base.items():
                    merged.setdefault(k, v)
                out[section] = merged
    return outputs


def _output_meta(top: _Meta, out: dict[str, Any]) -> _Meta:
    meta = _Meta.__new__(_Meta)
    meta.recipe, meta.variant, meta.variants = top.recipe, top.variant, top.variants
    meta.input_variants = top.input_variants
    meta.output_names = top.output_names
    meta.out = out
    meta._used = {}
    base = top.meta
    if out.get("name") == top.name():
        meta.is_output = False
        meta.meta = dict(base)
        for section in ("requirements", "build", "about"):
            meta.meta[section] = out[section]
        return meta
    meta.is_output = True
    new = {k: v for k, v in base.items() if k != "outputs"}
    new["package"] = {"name": str(out.get("name", top.name())),
                      "version": str(out.get("version") or top.version())}
    test = dict(base.get("test") or {})
    test.pop("commands", None)
    test.pop("imports", None)
    build = dict(base.get("build") or {})
    for key in ("entry_points", "run_exports", "script"):
        if key in out:
            build[key] = out[key]
        else:
            build.pop(key, None)
    reqs = expand_requirements(out.get("requirements"))
    own = re.compile(r"(?:^{}(?:\s|$|\Z))".format(re.escape(str(out.get("name", "")))))
    for kind in ("build", "host", "run"):
        if kind in reqs:
            reqs[kind] = [r for r in reqs[kind] if not own.match(r)]
    new["requirements"] = {k: v for k, v in reqs.items() if v}
    for key in ("number", "string", "run_exports", "track_features", "features"):
        if out.get(key):
            build[key] = out[key]
    if "build" in out:
        build = dict(out["build"] or {})
        build.setdefault("number", out.get("number", top.build_number()))
    new["build"] = build
    new["test"] = dict(out["test"] or {}) if "test" in out else test
    if "about" in out:
        new["about"] = out["about"]
    meta.meta = new
    return meta


@dataclass
class _Rendered:
    meta: _Meta
    top: _Meta


def render(source: RecipeSource, variants: Sequence[Mapping[str, Any]], target: Target, *,
           ci_split: bool = True) -> list[OutputVariant]:
    """Every (non-skipped and skipped) output variant of the recipe for ``variants``.

    ``ci_split=False`` leaves ``top_level_vars``/``top_level_loop_vars`` empty: only the
    CI-job split needs them, and they cost a third of a render.
    """
    if not variants:
        return []
    recipe = Recipe(source, target)
    variants = [dict(v) for v in variants]
    rendered: list[_Rendered] = []
    for top in _distribute(recipe, variants):
        for meta in _output_set(top):
            rendered.append(_Rendered(meta, top))
    return _finish(rendered, ci_split)


def _distribute(recipe: Recipe, variants: list[dict[str, Any]]) -> list[_Meta]:
    first = _Meta(recipe, variants[0], variants=variants, input_variants=variants)
    used = first.used_loop_vars()
    tops: dict[tuple, _Meta] = {}
    for variant in reduce_variants(variants, used):
        subset = variants
        for key in used:
            subset = _filter(subset, key, variant[key]) or subset
        top = _Meta(recipe, variant, variants=subset, input_variants=variants)
        key = (top.name(), top.version(), tuple((k, str(variant.get(k))) for k in sorted(top.used_vars())))
        tops[key] = top
    return list(tops.values())


def _output_set(top: _Meta) -> list[_Meta]:
    used = top.used_loop_vars(force_global=True)
    loop = reduce_variants(top.variants, used) or top.variants[:1]
    found: dict[tuple, _Meta] = {}
    for variant in loop:
        ref = _Meta(top.recipe, variant, variants=top.variants, input_variants=top.input_variants)
        for out in _output_dicts(ref):
            reqs = expand_requirements(out.get("requirements"))
            if reqs:
                for env in ("build", "host", "run"):
                    insert_variant_versions(reqs, variant, env)
                out["requirements"] = reqs
            meta = _output_meta(ref, out)
            key = (meta.name(), tuple((k, str(variant.get(k))) for k in sorted(meta.used_vars())))
            found[key] = meta  # a repeat replaces the value but keeps the first position
    return list(found.values())


def _finish(rendered: list[_Rendered], ci_split: bool = True) -> list[OutputVariant]:
    # Build strings first: pin_subpackage(exact=True) needs its sibling's.
    strings = {id(r.meta): r.meta.build_string() for r in rendered}
    results = []
    for item in rendered:
        meta = item.meta
        siblings = [r.meta for r in rendered if r.top is item.top]
        reqs = {kind: tuple(_resolve(meta, spec, siblings, strings) for spec in specs)
                for kind, specs in meta.requirements().items()}
        reqs = {kind: reqs.get(kind, ()) for kind in REQUIREMENT_KINDS} | {
            k: v for k, v in reqs.items() if k not in REQUIREMENT_KINDS}
        exports = meta.build().get("run_exports") or {}
        if not isinstance(exports, Mapping):
            exports = {"weak": exports}
        run_exports = {str(k): tuple(_resolve(meta, s, siblings, strings) for s in _as_str_list(v))
                       for k, v in exports.items()}
        test = meta.meta.get("test") or {}
        script = meta.out.get("script") if meta.is_output else meta.build().get("script")
        results.append(
            OutputVariant(
                name=meta.name(),
                version=meta.version(),
                build_number=meta.build_number(),
                build_string=strings[id(meta)],
                skip=meta.skip() or item.top.skip(),
                noarch=meta.noarch(),
                requirements=reqs,
                run_exports=run_exports,
                test=dict(test),
                script=script if isinstance(script, str) else None,
                variant=dict(meta.variant),
                used_vars=meta.used_vars(),
                hash_input=meta.hash_contents(),
                top_level_vars=meta.used_vars(force_top_level=True) if ci_split else frozenset(),
                top_level_loop_vars=(frozenset(meta.used_loop_vars(force_top_level=True))
                                     if ci_split else frozenset()),
                variants=tuple(meta.variants),
                top_skip=item.top.skip(),
            )
        )
    return results


def _resolve(meta: _Meta, spec: str, siblings: list[_Meta], strings: dict[int, str]) -> str:
    match = jinja.PIN_MARKER_RE.match(spec)
    if not match:
        return spec
    name, exact, min_pin, max_pin = match.groups()
    candidates = [s for s in siblings if s.name() == name]
    chosen = None
    if len(candidates) == 1:
        chosen = candidates[0]
    else:
        for other in candidates:
            used = {k: other.variant.get(k) for k in other.used_vars()}
            shared = set(used) & set(meta.variant)
            if not shared or all(used[k] == meta.variant[k] for k in shared):
                chosen = other
                break
    if chosen is None:
        return name
    if exact == "1":
        return f"{name} {chosen.version()} {strings[id(chosen)]}"
    return f"{name} {apply_pin_expressions(chosen.version(), min_pin, max_pin)}"
