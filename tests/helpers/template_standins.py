"""The two renders that see a recipe without its variants, modelled from their source, for
tests/unit/test_recipe_templates_without_variants.py.

- conda-smithy's linter (``recipe-lint``, and conda-forge's webservice on every pull request)
  renders meta.yaml with ``render_meta_yaml``: a sandboxed jinja2 environment whose undefined
  names are ``NullUndefined``, and only its stubs and ``os``/``environ``/``PY_VER`` defined
  (conda-forge/conda-smithy @081ec6b, conda_smithy/utils.py: ``NullUndefined``,
  ``render_meta_yaml``, ``_munge_python_min``). A variant key is undefined there.
  ``NullUndefined`` prints its name, and an attribute of it is the string ``"<name>.<attr>"``:
  a method call on it raises ``TypeError: 'str' object is not callable``.
- rattler-build-conda-compat 1.4.10, which conda-smithy renders a recipe.yaml through,
  first evaluates the whole file with only its ``context:`` (``render_recipe_with_context``):
  jinja2 with ``${{ }}``, undefined names ``_MissingUndefined`` (a ``DebugUndefined`` that
  prints ``${{ name }}``), its stubs and linux-64's platform names, and three filters of its
  own, ``version_to_buildstring`` (which passes an undefined value on), ``split`` (which calls
  ``.split`` on it and fails) and ``bool``; no test of its own (conda-forge/
  rattler-build-conda-compat @2f2d3e9, src/rattler_build_conda_compat/jinja/jinja.py,
  filters.py, objects.py, utils.py).

What the models keep is what decides the outcome: the undefined class, the names defined, the
filters and tests there are. Each reports every construct that stops the render, with its
line, instead of the first only.
"""

from __future__ import annotations

import re
import sys
import traceback
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.sandbox
from jinja2.runtime import Undefined


@dataclass(frozen=True)
class Finding:
    line: int
    construct: str
    why: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.construct}: {self.why}"


def _template_line() -> int:
    """The template line jinja2 is evaluating: the compiled template's frame maps its own
    line numbers back to the source's (jinja2's debug info)."""
    frame = sys._getframe(1)
    while frame is not None:
        template = frame.f_globals.get("__jinja_template__")
        if template is not None:
            return template.get_corresponding_lineno(frame.f_lineno)
        frame = frame.f_back
    return 0


# conda-smithy's linter -------------------------------------------------------------------


class _Survey:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def add(self, construct: str, why: str) -> None:
        finding = Finding(_template_line(), construct, why)
        if finding not in self.findings:
            self.findings.append(finding)


def _smithy_undefined(survey: _Survey) -> type[Undefined]:
    class _AttributeOfUndefined(str):
        """What ``NullUndefined.__getattr__`` returns, a str; calling it is conda-smithy's
        TypeError, recorded here so that the render goes on to the next."""

        def __call__(self, *args: Any, **kwargs: Any) -> str:
            survey.add(
                f"{self}(...)",
                "a method call on a name the linter leaves undefined (a variant key): its "
                f"NullUndefined makes {self} the string {str(self)!r}, and calling it raises "
                "TypeError: 'str' object is not callable",
            )
            return str(self)

    class NullUndefined(Undefined):
        # conda_smithy/utils.py's NullUndefined, line for line.
        def __str__(self) -> str:
            return self._undefined_name

        def __getattr__(self, name: str) -> str:
            return _AttributeOfUndefined(f"{self}.{name}")

        def __getitem__(self, name: Any) -> str:
            return f'{self}["{name}"]'

    return NullUndefined


def _surveyed_filters(env: jinja2.Environment, survey: _Survey) -> None:
    """A filter that raises on the linter's undefined value is recorded (the real render
    would stop there) and passes the value on."""

    def wrap(name: str, function: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except Exception as exc:
                undefined = next((a for a in args if isinstance(a, Undefined)), None)
                if undefined is None:
                    raise
                survey.add(
                    f"{undefined._undefined_name} | {name}",
                    f"the filter raises {type(exc).__name__}: {exc} on the linter's undefined",
                )
                return undefined

        # jinja2 passes the environment or context to filters marked for it (pass_context...).
        if hasattr(function, "jinja_pass_arg"):
            call.jinja_pass_arg = function.jinja_pass_arg
        return call

    env.filters = {name: wrap(name, function) for name, function in env.filters.items()}


def smithy_lint_findings(text: str) -> list[Finding]:
    """What stops conda-smithy's linter from rendering meta.yaml ``text`` (empty: it renders)."""
    import datetime
    import time

    survey = _Survey()
    env = jinja2.sandbox.SandboxedEnvironment(undefined=_smithy_undefined(survey))
    _surveyed_filters(env, survey)

    env.globals.update(
        compiler=lambda x: x + "_compiler_stub",
        stdlib=lambda x: x + "_stdlib_stub",
        pin_subpackage=lambda *args, **kwargs: f"subpackage_pin {args[0]}",
        pin_compatible=lambda *args, **kwargs: f"compatible_pin {args[0]}",
        cdt=lambda x: x.replace("-", "_") + "_cdt_stub",
        load_file_regex=lambda *args, **kwargs: defaultdict(str),
        load_file_data=lambda *args, **kwargs: defaultdict(str),
        load_setup_py_data=lambda *args, **kwargs: defaultdict(str),
        load_str_data=lambda *args, **kwargs: defaultdict(str),
        datetime=datetime,
        time=time,
        target_platform="linux-64",
        build_platform="linux-64",
        mpi="mpi",
        python_min="9999",
    )

    class MockOS(dict):
        def __init__(self) -> None:
            self.environ = defaultdict(str)
            self.sep = "/"

    mock_os = MockOS()
    # _munge_python_min: the recipe's own python_min is the linter's sentinel.
    text = "".join(
        "{% set python_min = '9999' %}\n" if re.match(r"{%\s+set\s+python_min\s+=", line) else line
        for line in text.splitlines(keepends=True)
    )
    try:
        env.from_string(text).render({"os": mock_os, "environ": mock_os.environ, "PY_VER": "3.7"})
    except (jinja2.TemplateError, TypeError, AttributeError) as exc:
        # What the survey does not go past (an unknown filter or test, a syntax error).
        survey.findings.append(Finding(_line_of(exc), "the render", f"{type(exc).__name__}: {exc}"))
    return survey.findings


def _line_of(exc: BaseException) -> int:
    """The template line an exception of a render was raised at (jinja2 rewrites the
    traceback to the template's own lines)."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<template>"]
    return frames[-1].lineno if frames else 0


# rattler-build-conda-compat's context pass ------------------------------------------------


class _MissingUndefined(jinja2.DebugUndefined):
    # rattler_build_conda_compat/jinja/utils.py: DebugUndefined, printed as ${{ name }}.
    def __str__(self) -> str:
        return f"${super().__str__()}"


def _version_to_build_string(value: Any) -> str:
    # compat's filters.py: the one filter that passes an undefined value on.
    if isinstance(value, _MissingUndefined):
        return f"{value._undefined_name}_version_to_build_string"
    first = value.split()[0] if value.split() else value
    parts = first.split(".")
    return (parts[0] if parts else "") + (parts[1] if len(parts) > 1 else "")


def _split(value: Any, sep: str | None = None) -> list[str]:
    # compat's filters.py: an undefined value has no .split (UndefinedError).
    return value.split(sep)


class _TestOnUndefined(jinja2.TemplateRuntimeError):
    pass


def _compat_environment() -> jinja2.Environment:
    """compat's ``jinja_env()`` without a variant config: linux-64, and its stubs."""
    env = jinja2.sandbox.SandboxedEnvironment(
        variable_start_string="${{",
        variable_end_string="}}",
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=jinja2.select_autoescape(default_for_string=False),
        undefined=_MissingUndefined,
    )
    env.globals.update(
        compiler=lambda x: x + "_compiler_stub",
        stdlib=lambda x: x + "_stdlib_stub",
        pin_subpackage=lambda *args, **kwargs: f"subpackage_pin {args[0]}",
        pin_compatible=lambda *args, **kwargs: f"compatible_pin {args[0]}",
        cdt=lambda *args, **kwargs: "cdt_stub",
        match=lambda *args, **kwargs: f"match {args[0]}",
        is_unix=lambda x: not x.startswith("win"),
        is_win=lambda x: x.startswith("win"),
        is_linux=lambda x: x.startswith("linux"),
        linux=True,
        x86_64=True,
        unix=True,
        target_platform="linux-64",
        build_platform="linux-64",
        mpi="mpi",
    )
    env.filters.update(
        version_to_buildstring=_version_to_build_string, split=_split, bool=lambda v: bool(v)
    )

    # The rule over recipe-v1.yaml (issue 58) is stricter than compat: a jinja2 test that
    # compat has (defined, string, ...) on a value defined only per variant counts too.
    def refuse_on_undefined(name: str, test: Any) -> Any:
        def call(value: Any, *args: Any) -> Any:
            if isinstance(value, Undefined):
                raise _TestOnUndefined(
                    f"the jinja test {name!r} on a value defined only per variant"
                )
            return test(value, *args)

        return call

    env.tests = {name: refuse_on_undefined(name, test) for name, test in env.tests.items()}
    return env


def _expressions(env: jinja2.Environment, text: str) -> list[tuple[int, str]]:
    """Each ``${{ ... }}`` of ``text`` with its line, by jinja2's own lexer."""
    found: list[tuple[int, str]] = []
    current: list[str] | None = None
    start = 0
    for line, token, value in env.lexer.tokeniter(text, None):
        if token == "block_begin":
            raise ValueError(
                f"line {line}: a jinja statement; this model evaluates expressions only"
            )
        if token == "variable_begin":
            current, start = [], line
        elif token == "variable_end" and current is not None:
            found.append((start, "".join(current).strip()))
            current = None
        elif current is not None:
            current.append(value)
    return found


def _compat_context(env: jinja2.Environment, text: str) -> dict[str, Any]:
    """compat's ``load_recipe_context``: each string of ``context:`` rendered in order with
    those before it, its result read back as YAML. One that fails stays undefined here, so
    that the expression check below names it at its line."""
    from ruamel.yaml import YAML

    context = dict(YAML(typ="safe").load(text).get("context") or {})
    for key, value in context.items():
        if not isinstance(value, str):
            continue
        try:
            rendered = env.from_string(value).render(context)
        except Exception:
            context[key] = env.undefined(name=key)
            continue
        context[key] = YAML(typ="safe").load("value: " + rendered)["value"]
    return context


def compat_context_findings(text: str) -> list[Finding]:
    """What stops compat's context pass over recipe-v1.yaml ``text``, or breaks the rule
    (issue 58): every ``${{ }}`` evaluated with only ``context:`` defined, as
    ``render_recipe_with_context`` evaluates the whole file (the recipe has no jinja
    statements, so each expression stands alone)."""
    env = _compat_environment()
    context = _compat_context(env, text)
    findings: list[Finding] = []
    for line, expression in _expressions(env, text):
        try:
            env.from_string("${{ " + expression + " }}").render(context)
        except (jinja2.TemplateError, TypeError, AttributeError) as exc:
            why = str(exc) if isinstance(exc, _TestOnUndefined) else f"{type(exc).__name__}: {exc}"
            findings.append(Finding(line, "${{ " + expression + " }}", why))
    if not findings:
        findings = _reloaded(env.from_string(text).render(context), text)
    return findings


def _reloaded(rendered: str, text: str) -> list[Finding]:
    """compat reads what its pass rendered back as YAML (its ``load_yaml``, ruamel's round
    trip): an undefined value printed as a message with ": " in it (``python | first`` gives
    ``${{ undefined value printed: No first item, sequence was empty. }}``) stops it there."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError

    try:
        YAML(typ="rt").load(rendered)
    except MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 0
        source = text.splitlines()[line - 1].strip() if line else "the file"
        return [Finding(line, source, f"what the pass renders is no YAML: {exc.problem}")]
    return []
