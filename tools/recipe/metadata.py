"""The MetaData stage of the recipe model: conda-build's MetaData logic over one parsed recipe.

What ``conda_build.metadata.MetaData`` computes for a recipe (or one of its outputs) under
one variant: the variant keys it uses (from its text, scripts and requirements), the hash
input and build string, requirements with variant pins inserted, and the per-output views
``get_output_metadata_set`` builds.  Parsing is :mod:`tools.recipe.evaluate`'s job; putting
outputs together is :mod:`tools.recipe.model`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tools.recipe import text
from tools.recipe.errors import RecipeError
from tools.recipe.evaluate import Recipe
from tools.recipe.requirements import as_str_list, expand_requirements
from tools.recipe.variant_config import ensure_list
from tools.recipe.variant_hash import HASH_LENGTH, get_loop_vars, hash_input, hash_of


class Meta:
    """One rendered view of the recipe (top level or an output) under one variant.

    Build one with :meth:`top_level` or :meth:`for_output`; every field is a constructor
    argument, so a view can never miss one.  ``used_vars`` results are cached per instance.
    """

    def __init__(
        self,
        recipe: Recipe,
        variant: dict[str, Any],
        meta: dict[str, Any],
        *,
        variants: list[dict[str, Any]],
        input_variants: list[dict[str, Any]],
        output_names: list[str],
        is_output: bool = False,
        out: dict[str, Any] | None = None,
    ) -> None:
        self.recipe = recipe
        self.variant = variant
        self.meta = meta
        self.variants = variants
        self.input_variants = input_variants
        self.output_names = output_names
        self.is_output = is_output
        self.out: dict[str, Any] = out if out is not None else {}
        self._used: dict[tuple[bool, bool], frozenset[str]] = {}

    @classmethod
    def top_level(
        cls,
        recipe: Recipe,
        variant: dict[str, Any],
        *,
        variants: list[dict[str, Any]],
        input_variants: list[dict[str, Any]],
    ) -> Meta:
        """The whole recipe parsed under ``variant``."""
        meta = recipe.parse(variant)
        names = [str(o.get("name", "")) for o in meta.get("outputs") or []]
        return cls(
            recipe,
            variant,
            meta,
            variants=variants,
            input_variants=input_variants,
            output_names=names,
        )

    def for_output(self, out: dict[str, Any]) -> Meta:
        """The view of output ``out`` (one of :func:`output_dicts`) of this top level."""
        meta, is_output = _output_meta_dict(self, out)
        return Meta(
            self.recipe,
            self.variant,
            meta,
            variants=self.variants,
            input_variants=self.input_variants,
            output_names=self.output_names,
            is_output=is_output,
            out=out,
        )

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
            raise RecipeError(
                self.recipe.source.path, f"build/number {number!r} is not an integer"
            ) from exc

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
        pattern = (
            r"(^\s*requirements:.*?)(?=^\s*test:|^\s*extra:|^\s*about:|^\s*-\s+name:|^outputs:|\Z)"
        )
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

    def used_vars(
        self, *, force_top_level: bool = False, force_global: bool = False
    ) -> frozenset[str]:
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
                self.requirements(),
                in_reqs,
                ensure_list(self.variant.get("ignore_build_only_deps")),
            )
            used = (used_all - in_reqs) | kept
        used |= self._script_vars()
        if "target_platform" in self.variant and not self.noarch():
            used.add("target_platform")
        if "channel_targets" in self.variant:
            used.add("channel_targets")
        force_use = set(as_str_list(self.build().get("force_use_keys")))
        force_ignore = set(as_str_list(self.build().get("force_ignore_keys")))
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
                    raise RecipeError(
                        self.recipe.source.path,
                        f"output {self.name()} names script {script!r}, "
                        "which is not in the recipe directory",
                    )
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
            xs = re.search(
                r"pin_\w+\([\'\"]numpy[\'\"].*((?<=x_pin=[\'\"])[x\.]*(?=[\'\"]))", reqs_text
            )
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
        source = (
            self.single_output_text(self.name(), True)
            if self.is_output
            else self.recipe.source.meta_text
        )
        raw = text.extract(source, text.PACKAGE_AND_BUILD)
        uses_hash = bool(re.search(r"\s*string:", raw)) and bool(
            re.findall(r"h\{\{\s*PKG_HASH\s*\}\}", raw)
        )
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
        features = as_str_list(self.build().get("features"))
        if parts:
            parts.append("_")
        if features:
            parts.extend(("_".join(features), "_"))
        parts.append(str(self.build_number()))
        return "".join(parts)


def output_dicts(top: Meta) -> list[dict[str, Any]]:
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


def _output_meta_dict(top: Meta, out: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """conda-build's ``get_output_metadata``: the meta dict of one output, and whether it is a
    separate output (False for the one named like the package, which is the top level)."""
    base = top.meta
    if out.get("name") == top.name():
        merged = dict(base)
        for section in ("requirements", "build", "about"):
            merged[section] = out[section]
        return merged, False
    new = {k: v for k, v in base.items() if k != "outputs"}
    new["package"] = {
        "name": str(out.get("name", top.name())),
        "version": str(out.get("version") or top.version()),
    }
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
    return new, True
