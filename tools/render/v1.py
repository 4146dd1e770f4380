"""rattler-build's render of a v1 ``recipe.yaml``, as the records every command consumes.

A feedstock switched to rattler-build (conda-forge.yml ``conda_build_tool: rattler-build``)
keeps a v1 recipe in ``recipe/recipe.yaml``.  ``tools.render.config.render_config`` hands its
configs here instead of to the toolkit's own meta.yaml renderer: py-rattler-build renders the recipe
offline, with the variant files ``rattler-build build --recipe recipe/ -m CONFIG`` reads (the
recipe's ``conda_build_config.yaml``, then the config on top), and this module turns every
rendered output into a :class:`~tools.render.output.RenderedOutput`.  There is no second renderer of
ours: what is added here is what rattler-build itself does after rendering, before it solves:

- A bare ``build``/``host`` requirement named like a variant key is pinned to that key's value
  (rattler-build's ``apply_variant``: ``numpy`` with ``numpy: 2`` becomes ``numpy 2.*``).
- ``pin_subpackage`` becomes a spec the way rattler-build's ``Pin::apply`` writes one.
- rattler-build's render lists each output once per combination of every variant key in the
  files (libtorch once per Python); one record per output name and build string is kept.
- The v1 ``tests`` list maps onto meta.yaml's test keys: ``imports`` (python tests, which run
  ``pip check`` unless ``pip_check: false``), ``commands`` (script lines, plain ``${{ name }}``
  references filled in from the context and the variant, as rattler-build does when it writes
  the test), ``requires``, ``files`` (recipe files) and ``source_files``.

rattler-build drops skipped outputs while rendering, so no record here has ``skip`` set; the
outputs a config builds are the same as ``render --built-only`` lists for meta.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rattler import MatchSpec, Version
from rattler_build import (
    JinjaConfig,
    PlatformConfig,
    RattlerBuildError,
    RenderConfig,
    RenderedVariant,
    Stage0Recipe,
    VariantConfig,
)

from tools.foundation.errors import UserError
from tools.foundation.files import read_user_file
from tools.render.output import RenderedOutput


def render_v1_config(
    recipe: Path,
    config: Path,
    *,
    cbc: Path | None,
    name: str,
    subdir: str,
    build_subdir: str,
) -> tuple[RenderedOutput, ...]:
    """Every output the CI job ``config`` builds from the v1 recipe file ``recipe``."""
    files = [p for p in (cbc, config) if p is not None]
    texts = tuple((str(p), read_user_file(p)) for p in (recipe, *files))
    return _render_cached(texts, name, subdir, build_subdir)


@lru_cache(maxsize=64)
def _render_cached(
    texts: tuple[tuple[str, str], ...], name: str, subdir: str, build_subdir: str
) -> tuple[RenderedOutput, ...]:
    # The texts are the cache key (an edited file renders again); rattler-build reads the files
    # itself, since the recipe's own path resolves what it includes.
    recipe, *variant_files = (Path(path) for path, _ in texts)
    platform = PlatformConfig(target_platform=subdir, build_platform=build_subdir)
    try:
        stage0 = Stage0Recipe.from_file(recipe)
    except RattlerBuildError as exc:
        raise UserError(one_line_error(recipe, exc)) from None
    variants = VariantConfig()
    for path in variant_files:  # one at a time, so an error names its file
        try:
            one = VariantConfig.from_files_with_context([path], JinjaConfig(platform=platform))
        except RattlerBuildError as exc:
            raise UserError(one_line_error(path, exc)) from None
        variants = variants.merge(one)
    try:
        rendered = stage0.render(variants, RenderConfig(platform=platform))
    except RattlerBuildError as exc:
        raise UserError(one_line_error(recipe, exc)) from None
    config_keys = {
        key: str(values[0])
        for key, values in variants.to_dict().items()
        if len(values) == 1 and not isinstance(values[0], (dict, list))
    }
    return records(rendered, config=name, build_subdir=build_subdir, config_keys=config_keys)


def records(
    rendered: Sequence[RenderedVariant],
    *,
    config: str,
    build_subdir: str,
    config_keys: Mapping[str, str],
) -> tuple[RenderedOutput, ...]:
    """One record per rendered output (name and build string), in rattler-build's order."""
    versions = {v.recipe.package.name: str(v.recipe.package.version) for v in rendered}
    first: dict[tuple[str, str], RenderedVariant] = {}
    for variant in rendered:
        first.setdefault((variant.recipe.package.name, str(variant.recipe.build.string)), variant)
    return tuple(
        _record(variant, versions, config, build_subdir, config_keys) for variant in first.values()
    )


def _record(
    rendered: RenderedVariant,
    versions: Mapping[str, str],
    config: str,
    build_subdir: str,
    config_keys: Mapping[str, str],
) -> RenderedOutput:
    recipe = rendered.recipe.to_dict()
    name = str(recipe["package"]["name"])
    version = str(recipe["package"]["version"])
    build = recipe.get("build") or {}
    build_string = str(build.get("string") or "")
    used = {str(k): str(v) for k, v in rendered.variant.items()}
    pins = _Pins(name, version, build_string, rendered.pin_subpackages, versions)
    reqs = recipe.get("requirements") or {}
    requirements = {
        "build": _specs(reqs.get("build"), pins, used),
        "host": _specs(reqs.get("host"), pins, used),
        "run": _specs(reqs.get("run"), pins, None),
        "run_constrained": _specs(reqs.get("run_constraints"), pins, None),
    }
    run_exports = {
        str(kind): _specs(specs, pins, None)
        for kind, specs in (reqs.get("run_exports") or {}).items()
        if specs
    }
    noarch = build.get("noarch") or None
    script = build.get("script")
    script_file = script.get("file") if isinstance(script, Mapping) else None
    names = {**used, **{k: str(v) for k, v in (recipe.get("context") or {}).items()}}
    return RenderedOutput(
        name=name,
        version=version,
        build_string=build_string,
        build_number=int(build.get("number") or 0),
        subdir="noarch" if noarch else used.get("target_platform", ""),
        skip=False,
        requirements=requirements,
        run_exports=run_exports,
        tests=tests_of(recipe.get("tests") or [], names),
        variant=dict(sorted({**config_keys, **used}.items())),
        config=config,
        build_platform=build_subdir,
        noarch=str(noarch) if noarch else None,
        script=str(script_file) if script_file else None,
        used_vars=tuple(sorted(used)),
        # rattler-build hashes the used variant, sorted, as Python's json.dumps writes it
        hash_input=dict(sorted(used.items())),
        ignore_run_exports={
            str(kind): tuple(str(n) for n in names)
            for kind, names in (reqs.get("ignore_run_exports") or {}).items()
            if names
        },
        track_features=down_prioritized(name, build),
    )


def down_prioritized(name: str, build: Mapping[str, Any]) -> tuple[str, ...]:
    """The track_features rattler-build writes for ``build.variant.down_prioritize_variant``:
    ``<name>-p-<i>`` for each step (its packaging/metadata.rs), so one name per package."""
    variant = build.get("variant") or {}
    steps = int(variant.get("down_prioritize_variant") or 0) if isinstance(variant, Mapping) else 0
    return tuple(f"{name}-p-{i}" for i in range(steps))


# -- requirements ---------------------------------------------------------------------------


class _Pins:
    """``pin_subpackage`` for one output: its own version and build string, the exact pins
    rattler-build resolved for it, and every sibling's version."""

    def __init__(
        self,
        name: str,
        version: str,
        build_string: str,
        resolved: Mapping[str, Any],
        versions: Mapping[str, str],
    ) -> None:
        self.own = name, version, build_string
        self.resolved = resolved
        self.versions = versions

    def spec(self, args: Mapping[str, Any]) -> str:
        name = str(args["name"])
        if name in self.resolved:
            info = self.resolved[name]
            version, build_string = str(info.version), str(info.build_string or "")
        elif name == self.own[0]:
            version, build_string = self.own[1], self.own[2]
        elif name in self.versions:
            version, build_string = self.versions[name], ""
        else:
            raise UserError(f"pin_subpackage({name!r}): the recipe has no output named {name!r}")
        return pin_spec(name, args, version, build_string)


def pin_spec(name: str, args: Mapping[str, Any], version: str, build_string: str) -> str:
    """The spec rattler-build's ``Pin::apply`` makes of ``pin_subpackage(name, **args)``."""
    if args.get("exact"):
        return str(MatchSpec(f"{name} =={version} {build_string}".strip()))
    bounds = []
    lower, upper = args.get("lower_bound"), args.get("upper_bound")
    if lower:
        bounds.append(f">={_truncate(version, lower) if _is_pin(lower) else lower}")
    if upper:
        bounds.append(f"<{_bump(version, upper) if _is_pin(upper) else upper}")
    build = f" {args['build']}" if args.get("build") else ""
    return str(MatchSpec(f"{name} {','.join(bounds)}{build}".strip()))


def _is_pin(bound: object) -> bool:
    text = str(bound)
    return bool(text) and set(text) <= {"x", "."}


def _truncate(version: str, pin: str) -> Version:
    parsed = Version(version)
    return parsed.with_segments(0, min(pin.count("x"), parsed.segment_count))


def _bump(version: str, pin: str) -> Version:
    digits = pin.count("x")
    return _truncate(version, pin).bump_segment(digits - 1).with_alpha().remove_local()


def _normalized(name: str) -> str:
    return name.replace("-", "_").replace(".", "_")


def _specs(items: Iterable[Any] | None, pins: _Pins, variant: Mapping[str, str] | None) -> tuple:
    """Rendered requirements as specs; ``variant`` (build and host only) pins bare names."""
    pinned = {_normalized(k): v for k, v in (variant or {}).items()}
    found = []
    for item in items or ():
        if isinstance(item, Mapping) and "pin_subpackage" in item:
            found.append(pins.spec(item["pin_subpackage"]))
        elif isinstance(item, Mapping) and "pin_compatible" in item:
            # resolved against the solved host environment, which a render does not have
            found.append(str(item["pin_compatible"]["name"]))
        else:
            found.append(_with_variant(str(item), pinned) if variant is not None else str(item))
    return tuple(found)


def _with_variant(text: str, pinned: Mapping[str, str]) -> str:
    try:
        spec = MatchSpec(text)
    except Exception:  # rattler-build solves with it as written; so does the record
        return text
    if spec.version is not None or spec.build is not None or spec.name is None:
        return text
    value = pinned.get(_normalized(spec.name.normalized))
    if value is None:
        return text
    # a plain version means "starts with" (rattler-build adds the "=")
    if all(c.isalnum() or c == "." for c in value):
        value = f"={value}"
    return str(MatchSpec(f"{spec.name.normalized} {value}"))


# -- tests ----------------------------------------------------------------------------------

_REFERENCE = re.compile(r"\$\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def tests_of(items: Iterable[Mapping[str, Any]], names: Mapping[str, str]) -> dict[str, Any]:
    """meta.yaml's test keys from a rendered v1 ``tests`` list."""
    found: dict[str, list[Any]] = {
        "requires": [],
        "files": [],
        "source_files": [],
        "imports": [],
        "commands": [],
    }

    def fill(line: str) -> str:
        return _REFERENCE.sub(lambda m: names.get(m[1], m[0]), line)

    for item in items:
        if "python" in item:
            python = item["python"] or {}
            found["imports"] += [str(i) for i in python.get("imports") or ()]
            if python.get("pip_check", True):
                found["commands"].append("pip check")
        elif "script" in item:
            script = item["script"]
            if isinstance(script, Mapping):
                script = script.get("content") or []
            lines = [script] if isinstance(script, str) else list(script)
            found["commands"] += [fill(str(line)) for line in lines]
            reqs = item.get("requirements") or {}
            for kind in ("run", "build"):
                found["requires"] += [str(r) for r in reqs.get(kind) or ()]
            files = item.get("files") or {}
            found["files"] += [str(f) for f in files.get("recipe") or ()]
            found["source_files"] += [str(f) for f in files.get("source") or ()]
        else:  # package_contents, downstream, ...: kept as rattler-build rendered them
            for kind, value in item.items():
                found.setdefault(str(kind), []).append(value)
    return {k: v for k, v in found.items() if v}


# -- errors ---------------------------------------------------------------------------------

_POSITION = re.compile(r"line:? (\d+),? column:? (\d+)")
_WRAPPED = re.compile(r'^\w+\("(.*)"\)$')
_LEADING_POSITION = re.compile(r"(?:^|: )(\d+):(\d+): ")
_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')


def one_line_error(path: Path, exc: BaseException) -> str:
    """``FILE:LINE:COLUMN: what rattler-build said`` (no position when it gives none)."""
    text = str(exc)
    position = _POSITION.search(text)
    message = _MESSAGE.search(text)
    if message:
        text = message[1].replace('\\"', '"').replace("\\'", "'")
    leading = _LEADING_POSITION.search(text)
    if leading and not position:
        position = leading
    if leading:
        text = text[: leading.start()] + (": " if leading.start() else "") + text[leading.end() :]
    for prefix in ("Render error: ", "parse error: "):
        text = text.removeprefix(prefix)
    wrapped = _WRAPPED.match(text)  # InvalidConfig("...")
    if wrapped:
        text = wrapped[1]
    where = f"{path}:{position[1]}:{position[2]}" if position else str(path)
    return f"{where}: {' '.join(text.split())}"
