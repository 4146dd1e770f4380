"""The jinja2 side of meta.yaml: an environment with conda-build's recipe functions.

``compiler()``/``stdlib()`` resolve from the variant exactly as conda-build does
(``<name>_<target_platform> <version>.*``), ``cdt()`` from ``cdt_name``/``cdt_arch``.
``pin_subpackage()`` cannot be resolved while one output is being rendered (it needs the
other outputs' build strings), so it leaves a marker that :mod:`tools.recipe.model`
replaces once every output is known.  ``pin_compatible()`` has no environment to read
versions from offline; like conda-build's render without a solve it yields the bare name,
which then receives the variant's pin.  Functions that need files or a solver
(``load_setup_py_data`` & co.) are reported as unsupported with their line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jinja2

from tools.recipe.errors import RecipeError, UnsupportedConstruct

# "name @@pin:<exact>:<min_pin>:<max_pin>@@" -- survives YAML and the variant-pin pass.
PIN_MARKER_RE = re.compile(r"^(\S+) @@pin:([01]):([^:@]*):([^:@]*)@@$")

_NATIVE_COMPILERS = {
    "linux": {"c": "gcc", "cxx": "gxx", "fortran": "gfortran"},
    "osx": {"c": "clang", "cxx": "clangxx", "fortran": "gfortran"},
    "win": {"c": "vs2017", "cxx": "vs2017", "fortran": "gfortran"},
}
# A version needing ".*": "14" -> "14.*", but not ">=14", "14.*" or "1.2 build".
_NEEDS_STAR_RE = re.compile(r"([\w\d\.\-\_]+)\s+((?<![><=])[\w\d\.\-\_]+?(?!\*))(\s+[\w\d\.\_]+)?$")


def ensure_valid_spec(spec: str) -> str:
    """conda-build's ``ensure_valid_spec``: ``gcc_linux-64 14`` -> ``gcc_linux-64 14.*``."""
    match = _NEEDS_STAR_RE.match(spec)
    if match and not match.group(3):
        if match.group(1) in ("python", "numpy") and match.group(2) == "x.x":
            return _NEEDS_STAR_RE.sub(r"\1 \2", spec)
        if "*" not in spec:
            return _NEEDS_STAR_RE.sub(r"\1 \2.*", spec)
    return spec


class _Unsupported(Exception):
    def __init__(self, construct: str) -> None:
        super().__init__(construct)
        self.construct = construct


# The undefined names a render used, where conda-build's StrictUndefined would have failed.
_USED_UNDEFINED: ContextVar[list[str] | None] = ContextVar("used_undefined", default=None)


class RecordingUndefined(jinja2.Undefined):
    """Undefined names render as "" -- conda-build's permissive render, which conda-smithy uses --
    and each use that conda-build's final, strict render fails on is recorded
    (:func:`recording_undefined`).  ``is defined`` and ``default()`` are no such use."""

    def _record(self) -> None:
        used = _USED_UNDEFINED.get()
        if used is not None and self._undefined_name is not None:
            used.append(self._undefined_name)

    def __str__(self) -> str:
        self._record()
        return ""

    def __iter__(self):
        self._record()
        return iter(())

    def __bool__(self) -> bool:
        self._record()
        return False

    def __len__(self) -> int:
        self._record()
        return 0

    def __eq__(self, other: object) -> bool:
        self._record()
        return type(self) is type(other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = jinja2.Undefined.__hash__

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._record()
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> RecordingUndefined:
        self._record()
        return self


@contextmanager
def recording_undefined() -> Iterator[list[str]]:
    """Collect the undefined names the renders inside the block used (in order, repeated)."""
    used: list[str] = []
    token = _USED_UNDEFINED.set(used)
    try:
        yield used
    finally:
        _USED_UNDEFINED.reset(token)


@dataclass(frozen=True)
class TargetInfo:
    subdir: str  # host/target subdir, e.g. linux-aarch64
    build_subdir: str  # where the build runs, e.g. linux-64


def _target(language: str, variant: Mapping[str, Any], target: TargetInfo, component: str) -> str:
    platform = target.subdir.split("-")[0]
    prefix = language
    if component == "compiler":
        prefix = _NATIVE_COMPILERS.get(platform, {}).get(language, language)
    prefix = variant.get(f"{language}_{component}", prefix)
    version = variant.get(f"{language}_{component}_version")
    target_platform = variant.get("target_platform", target.subdir)
    package = f"{prefix}_{target_platform}"
    if version:
        package = ensure_valid_spec(f"{package} {version}")
    return package


def _cdt(name: str, variant: Mapping[str, Any], target: TargetInfo) -> str:
    arch = target.subdir.split("-")[1]
    cdt_arch, cdt_name = {"64": ("x86_64", "cos6"), "32": ("i686", "cos6")}.get(
        arch, (arch, "cos7")
    )
    cdt_name = variant.get("cdt_name", cdt_name)
    cdt_arch = variant.get("cdt_arch", cdt_arch)
    base, _, rest = name.partition(" ")
    return f"{base}-{cdt_name}-{cdt_arch}" + (f" {rest}" if rest else "")


def _pin_subpackage(
    name: str, min_pin: str = "x.x.x.x.x.x", max_pin: str = "x", exact: bool = False
) -> str:
    return f"{name} @@pin:{int(bool(exact))}:{min_pin or ''}:{max_pin or ''}@@"


def _pin_compatible(
    name: str,
    lower_bound: str | None = None,
    upper_bound: str | None = None,
    min_pin: str = "x.x.x.x.x.x",
    max_pin: str = "x",
    exact: bool = False,
) -> str:
    if lower_bound and upper_bound:
        return f"{name} >={lower_bound},<{upper_bound}"
    if upper_bound:
        return f"{name} <{upper_bound}"
    return name


def _unsupported(construct: str):
    def fail(*args: Any, **kwargs: Any) -> None:
        raise _Unsupported(construct)

    return fail


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        undefined=RecordingUndefined, keep_trailing_newline=True, autoescape=False
    )
    return env


@lru_cache(maxsize=64)
def _template(text: str) -> jinja2.Template:
    return environment().from_string(text)


_STATEMENT = re.compile(r"\{%-?\s*(\w+)(\s+\w+\s*=)?")


def _is_structural(text: str) -> bool:
    """A line holding a jinja statement that opens or closes a block (``{% if %}``,
    ``{% endif %}``, ``{% for %}``...): wrapped in an ``{% if %}`` of its own it would cross
    the nesting (an ``{% endif %}`` on a selected line closes the wrapper, not its block). An
    assignment, ``{% set name = ... %}``, stands alone and is safe to wrap."""
    return any(
        keyword != "set" or not assignment for keyword, assignment in _STATEMENT.findall(text)
    )


@lru_cache(maxsize=16)
def structural_selectors(raw: str) -> tuple[str, ...]:
    """The selectors of meta.yaml's lines that open or close a jinja block, in order: their
    values are fixed when :func:`conditional_template` compiles, as conda-build's selection
    removes such a line before jinja sees it."""
    from tools.recipe.selectors import split_lines

    return tuple(
        item.selector
        for item in split_lines(raw)
        if item.selector is not None and _is_structural(item.text)
    )


@lru_cache(maxsize=16)
def conditional_template(
    raw: str, structure: tuple[bool, ...]
) -> tuple[jinja2.Template, tuple[str, ...]] | None:
    """meta.yaml with each selector line turned into ``{% if _cfselN %}line\n{% endif %}``.

    Selecting lines and then compiling the result costs a jinja compile per distinct
    selection (one per Python, per platform ...).  Compiled once this way, the selection
    becomes context values; the output is the same text conda-build's select-then-render
    produces.  A selector line that opens or closes a jinja block is selected here instead, by
    ``structure`` (the values of :func:`structural_selectors`, in order), so a recipe costs a
    compile per distinct value of those few (CUDA or not).  Returns None when that is not
    possible (a selector inside a multi-line jinja expression), and callers then select first.
    """
    from tools.recipe.selectors import split_lines

    pieces: list[str] = []
    selectors: list[str] = []
    fixed = iter(structure)
    for item in split_lines(raw):
        if item.selector is None:
            pieces.append(item.text + "\n")
        elif _is_structural(item.text):
            if next(fixed):
                pieces.append(item.text + "\n")
        else:
            pieces.append(f"{{% if _cfsel{len(selectors)} %}}{item.text}\n{{% endif %}}")
            selectors.append(item.selector)
    try:
        return _template("".join(pieces)), tuple(selectors)
    except jinja2.TemplateSyntaxError:
        return None


def _context(
    names: Mapping[str, Any],
    variant: Mapping[str, Any],
    target: TargetInfo,
    extra: Mapping[str, Any] | None,
) -> dict[str, Any]:
    context: dict[str, Any] = dict(names)
    context.update({k: v for k, v in variant.items() if isinstance(v, str)})
    context.update(extra or {})
    context.update(
        compiler=lambda lang: _target(lang, variant, target, "compiler"),
        stdlib=lambda lang: _target(lang, variant, target, "stdlib"),
        cdt=lambda name: _cdt(name, variant, target),
        pin_subpackage=_pin_subpackage,
        pin_compatible=_pin_compatible,
        ccache=lambda method: "ccache",
        load_setup_py_data=_unsupported("load_setup_py_data()"),
        load_setuptools=_unsupported("load_setuptools()"),
        load_file_regex=_unsupported("load_file_regex()"),
        load_file_data=_unsupported("load_file_data()"),
        load_str_data=_unsupported("load_str_data()"),
        load_npm=_unsupported("load_npm()"),
        resolved_packages=_unsupported("resolved_packages()"),
        environ=dict(names.get("environ", {})),
        CONDA_BUILD_STATE="RENDER",
    )
    return context


def render_conditional(
    template: jinja2.Template,
    selections: Mapping[str, bool],
    names: Mapping[str, Any],
    variant: Mapping[str, Any],
    target: TargetInfo,
    *,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """Render a :func:`conditional_template` with the selector values; errors propagate raw."""
    context = _context(names, variant, target, extra)
    context.update(selections)
    return template.render(context)


# What rendering a template can raise for a recipe error; :func:`render` turns each into a
# RecipeError with the line, and the fast path falls back to :func:`render` on them.
_EVALUATION_ERRORS = (TypeError, ValueError, AttributeError, ArithmeticError, LookupError)
RENDER_ERRORS = (_Unsupported, jinja2.TemplateError, *_EVALUATION_ERRORS)


def render(
    text: str,
    names: Mapping[str, Any],
    variant: Mapping[str, Any],
    target: TargetInfo,
    *,
    extra: Mapping[str, Any] | None = None,
    source: str = "meta.yaml",
    line_of: Any = None,
) -> str:
    """Render ``text`` with conda-build's context for one variant."""
    context = _context(names, variant, target, extra)
    try:
        template = _template(text)
    except jinja2.TemplateSyntaxError as exc:
        line = line_of(exc.lineno) if line_of and exc.lineno else exc.lineno
        raise RecipeError(f"{source}:{line}", f"jinja2 syntax error: {exc.message}") from exc
    try:
        return template.render(context)
    except _Unsupported as exc:
        name = exc.construct.rstrip("()")
        number = next((i for i, ln in enumerate(text.splitlines(), 1) if name in ln), None)
        line = line_of(number) if line_of and number else number
        raise UnsupportedConstruct(
            f"{source}:{line}", f"unsupported construct {exc.construct} (needs files or a solver)"
        ) from exc
    except jinja2.TemplateError as exc:
        raise RecipeError(_where(source, exc, line_of), f"jinja2 error: {exc}") from exc
    except _EVALUATION_ERRORS as exc:
        # An expression that fails as Python ({{ 1 / 0 }}, {{ x[9] }}, {{ "a" + 1 }}).
        raise RecipeError(
            _where(source, exc, line_of), f"jinja2 evaluation failed: {type(exc).__name__}: {exc}"
        ) from exc


def _where(source: str, exc: BaseException, line_of: Any) -> str:
    """``source:line`` of the template line that raised, when jinja's traceback names it."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is None:
        return source
    return f"{source}:{line_of(line) if line_of else line}"
