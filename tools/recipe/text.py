"""conda-build reads a recipe twice: as YAML to build it, and as *text* to decide which
variant keys it uses.  This module is the text half: slicing meta.yaml into the pieces
conda-build looks at (top level, outputs section, one output's block, requirements) and
the patterns that count a key as used (``{{ key }}``, ``pin_*('key')``, a bare
requirement line, a selector or ``{% if %}`` naming it, ``compiler('c')`` for
``c_compiler``, ``$key`` in a build script).  Keeping conda-build's text rules, odd as
some are, is what makes our CI-job split and hashes agree with conda-smithy's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

# One output block: from "  - name:" (or "- type:") to the next one or the next top-level key.
OUTPUT_BLOCK_RE = re.compile(
    r"^\ +-\ +(?:name|type):.+?(?=^\w|\Z|^\ +-\ +(?:name|type))", flags=re.MULTILINE | re.DOTALL
)
OUTPUTS_SECTION = r"(^outputs:.*?)(?=^test:|^extra:|^about:|\Z)"
PACKAGE_AND_BUILD = r"(^.*?)(?=^requirements:|^test:|^extra:|^about:|^outputs:|\Z)"
TOP_REQUIREMENTS = r"(^requirements:.*?)(?=^test:|^extra:|^about:|^outputs:|\Z)"
_REQUIREMENTS_BLOCK_RE = re.compile(
    r"requirements:.+?(?=^\w|\Z|^\s+-\s(?=name|type))", flags=re.MULTILINE | re.DOTALL
)
NUMPY_XX_RE = re.compile(r"(numpy\s*x\.x)|pin_compatible\([\'\"]numpy.*max_pin=[\'\"]x\.x[\'\"]")
CUDA_COMPILER_RE = re.compile(r"^[^\#]*compiler\((\"cuda\"|\'cuda\')\).*")


@lru_cache(maxsize=4096)
def extract(text: str, pattern: str | None) -> str:
    """conda-build's ``_filter_recipe_text``: the distinct non-empty groups of a match."""
    if not pattern:
        return text
    match = re.search(pattern, text, flags=re.MULTILINE | re.DOTALL)
    if not match:
        return ""
    # conda-build joins a *set* of groups; every pattern here has one group.
    seen: list[str] = []
    for group in match.groups():
        if group and group not in seen:
            seen.append(group)
    return "\n".join(seen)


@lru_cache(maxsize=4096)
def output_blocks(outputs_text: str) -> tuple[str, ...]:
    return tuple(OUTPUT_BLOCK_RE.findall(outputs_text))


@lru_cache(maxsize=4096)
def requirements_block(text: str) -> str:
    match = _REQUIREMENTS_BLOCK_RE.search(text)
    return match.group() if match else ""


@lru_cache(maxsize=8192)
def _key_pattern(key: str, selectors_only: bool) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """The combined regex that counts ``key`` as used, and the substrings that pre-filter lines."""
    parts: list[str] = []
    needles: tuple[str, ...]
    target = re.match(r"(.*?)_(compiler|stdlib)(_version)?$", key)
    if target and not selectors_only:
        lang, kind = target.group(1), target.group(2)
        parts.append(rf"\{{\s*{kind}\([\'\"]{re.escape(lang)}[\"\'][^\{{]*?\}}")
        needles = (key, lang)
    elif key.startswith("cdt_"):
        parts.append(r"\{{\s*cdt\(")
        needles = (key, "cdt(")
    else:
        needles = ()
    k = re.escape(key)
    req_name = "[-_]".join(map(re.escape, key.split("_")))
    selector = rf"^[^#\[]*?\#?\s\[[^\]]*?(?<![_\w\d]){k}[=\s<>!\]]"
    if selectors_only:
        parts.insert(0, selector)
    else:
        parts.extend(
            [
                rf"\{{\s*(?:pin_[a-z]+\(\s*?['\"])?{k}(?:[^_0-9a-zA-Z].*?)?\}}\}}",
                rf"^\s+\-\s+{req_name}\s*(?:\s[\[#]|$)",
                r"(?:^|[^\{])\{%\s*(?:el)?if\s*.*" + k + r"\s*(?:[^%]*?)?%\}",
                r"(?:^|[^\{])\{%\s*for\s*.*\s*in\s*" + k + r"(?![a-zA-Z_0-9])(?:[^%]*?)?%\}",
                r"(?:^|[^\{])\{%\s*set\s*.*\s*=\s*.*(?<![a-zA-Z_0-9])"
                + k
                + r"(?![a-zA-Z_0-9])(?:[^%]*?)?%\}",
            ]
        )
    return re.compile("|".join(parts)), needles


def used_in_text(keys: Iterable[str], text: str, *, selectors_only: bool = False) -> set[str]:
    """Variant keys the recipe text uses, by conda-build's ``find_used_variables_in_text``."""
    return _used_in_text(tuple(sorted(keys)), text, selectors_only)


@lru_cache(maxsize=4096)
def _used_in_text(keys: tuple[str, ...], text: str, selectors_only: bool) -> frozenset[str]:
    lines = text.splitlines()
    dashless = [ln.replace("-", "_") for ln in lines]
    joined = "\n".join(dashless)
    found: set[str] = set()
    for key in keys:
        pattern, needles = _key_pattern(key, selectors_only)
        if needles and not selectors_only:
            first, second = needles
            if first not in text and second not in text:
                continue
            candidates = [ln for ln in lines if first in ln or second in ln]
        else:
            if key not in joined:
                continue
            candidates = [ln for ln, d in zip(lines, dashless) if key in d]
        if candidates and any(pattern.search(ln) for ln in candidates):
            found.add(key)
            if key in ("c_stdlib", "c_compiler", "cxx_compiler") and "CONDA_BUILD_SYSROOT" in keys:
                found.add("CONDA_BUILD_SYSROOT")
    return frozenset(found)


def used_in_shell_script(keys: Iterable[str], text: str) -> set[str]:
    return set(_used_in_shell_script(tuple(sorted(keys)), text))


@lru_cache(maxsize=1024)
def _used_in_shell_script(keys: tuple[str, ...], text: str) -> frozenset[str]:
    r"""Keys referenced as ``$key`` or ``${key}`` in a shell script.

    conda-build's pattern is ``^[^$]*?\$\{?\s*KEY\s*[\s|}]`` (multi-line, dot-all): the
    reference must be the first ``$`` of its line and be followed by a space, ``|`` or
    ``}`` (so ``"$KEY"`` does not count).  We test exactly that, one line at a time,
    instead of letting the regex backtrack over the whole file for every key.
    """
    starts = []
    offset = 0
    for line in text.split("\n"):
        dollar = line.find("$")
        if dollar >= 0:
            starts.append(offset + dollar)
        offset += len(line) + 1
    found = set()
    for key in keys:
        if key not in text:
            continue
        pattern = _shell_ref(key)
        if any(pattern.match(text, pos) for pos in starts):
            found.add(key)
    return frozenset(found)


@lru_cache(maxsize=4096)
def _shell_ref(key: str) -> re.Pattern[str]:
    return re.compile(rf"\$\{{?\s*{re.escape(key)}\s*[\s|\}}]")


def used_in_batch_script(keys: Iterable[str], text: str) -> set[str]:
    """Keys referenced as ``%key%`` in a batch script."""
    return {key for key in keys if key in text and f"%{key}%" in text}


def trim_build_only_deps(
    requirements: Mapping[str, Sequence[str]],
    used: set[str],
    ignore_build_only_deps: Sequence[str],
) -> set[str]:
    """Drop keys that only name run requirements (or build-only ones listed as ignorable)."""
    build = {r.split()[0].replace("-", "_") for r in requirements.get("build", ()) if r}
    host = {r.split()[0].replace("-", "_") for r in requirements.get("host", ()) if r}
    run = list(requirements.get("run", ()))
    removed = set()
    for dep in used:
        if dep in run:
            if dep not in build and dep not in host:
                removed.add(dep)
        elif dep in build and dep not in host and dep in ignore_build_only_deps:
            removed.add(dep)
    return used - removed


def uses_cuda_compiler(meta_text: str) -> bool:
    """conda-smithy's test for ``compiler('cuda')`` (not after a ``#``), which sets
    CF_CUDA_ENABLED."""
    return any(CUDA_COMPILER_RE.match(line) for line in meta_text.splitlines(keepends=True))
