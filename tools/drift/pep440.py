"""PyPI requirements (PEP 440 / PEP 508) in conda terms.

Translation rules (documented in ``python -m tools drift --help``):

- ``==1.2.*`` becomes the prefix match ``1.2.*``; ``==1.2`` stays ``==1.2`` (both sides pad
  with zeros, so it matches ``1.2.0``); ``===1.2`` becomes ``==1.2``.
- ``!=``, ``<``, ``<=``, ``>``, ``>=`` keep their meaning, ``!=1.2.*`` included.
- ``~=1.4.2`` becomes ``>=1.4.2,1.4.*`` (the compatible-release definition).
- Clauses join with ``,`` (and); an empty specifier means any version.
- PEP 440 hides pre-releases from ``<V``/``>=V`` unless asked for; conda does not.  The
  translation does not model that: conda-forge's main label rarely carries pre-releases, and
  ``<V`` versus ``<Va0`` would flag every upper bound as drift.
- Environment markers are not translated: they decide which configurations a requirement applies
  to (``marker_applies``), and a requirement under ``extra == "x"`` is an optional extra.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from packaging.markers import Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from tools.foundation.errors import UserError
from tools.recipe.namespace import python_series

_SUBDIR_ENV = {
    "linux-64": ("Linux", "linux", "x86_64", "posix"),
    "linux-aarch64": ("Linux", "linux", "aarch64", "posix"),
    "linux-ppc64le": ("Linux", "linux", "ppc64le", "posix"),
    "osx-64": ("Darwin", "darwin", "x86_64", "posix"),
    "osx-arm64": ("Darwin", "darwin", "arm64", "posix"),
    "win-64": ("Windows", "win32", "AMD64", "nt"),
    "win-arm64": ("Windows", "win32", "ARM64", "nt"),
}


_PYTHONS = ("3.10", "3.11", "3.12", "3.13", "3.14")


def conda_spec(specifier: SpecifierSet) -> str | None:
    """The conda version spec admitting what ``specifier`` admits; ``None`` for any version."""
    clauses: list[str] = []
    order = {">=": 0, ">": 0, "~=": 0, "==": 1, "===": 1, "!=": 2, "<=": 3, "<": 3}
    for item in sorted(specifier, key=lambda s: (order[s.operator], s.version)):
        operator, version = item.operator, item.version
        if operator == "~=":
            parts = version.split(".")
            clauses.append(f">={version}")
            clauses.append(".".join(parts[:-1]) + ".*")
        elif operator == "===":
            clauses.append(f"=={version}")
        elif operator == "==" and version.endswith(".*"):
            clauses.append(version)
        else:
            clauses.append(f"{operator}{version}")
    return ",".join(clauses) or None


def parse_requirement(text: str, where: str) -> Requirement:
    try:
        return Requirement(text)
    except Exception as exc:  # packaging raises InvalidRequirement with a multi-line message
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"{where}: cannot parse requirement {text!r}: {first}") from None


def marker_environment(subdir: str, python: str) -> dict[str, str]:
    """The PEP 508 environment of a conda configuration (``python`` like ``3.12``)."""
    system, sys_platform, machine, os_name = _SUBDIR_ENV.get(
        subdir, ("Linux", "linux", "x86_64", "posix")
    )
    full = python if python.count(".") >= 2 else f"{python}.0"
    return {
        "implementation_name": "cpython",
        "implementation_version": full,
        "os_name": os_name,
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": system,
        "platform_version": "",
        "python_full_version": full,
        "python_version": python_series(python),
        "sys_platform": sys_platform,
        "extra": "",
    }


def marker_applies(marker: str | None, environment: Mapping[str, str], extra: str = "") -> bool:
    if not marker:
        return True
    try:
        return Marker(marker).evaluate({**environment, "extra": extra})
    except (UndefinedComparison, UndefinedEnvironmentName):
        return False


def extra_of(marker: str | None, extras: Iterable[str]) -> str | None:
    """The extra a requirement belongs to, or ``None`` when it is required without extras."""
    if not marker or "extra" not in marker:
        return None
    # Every platform and Python, so that an ``extra`` guard combined with a platform or Python
    # guard is still recognised as an extra.
    environments = [
        marker_environment(subdir, python) for subdir in _SUBDIR_ENV for python in _PYTHONS
    ]
    if any(marker_applies(marker, env) for env in environments):
        return None
    for name in extras:
        if any(marker_applies(marker, env, name) for env in environments):
            return name
    return None


def without_extra(marker: str | None) -> str | None:
    """``marker`` for display, with a pure ``extra == "x"`` guard dropped (the row names it)."""
    if not marker:
        return None
    parsed = Marker(marker)
    text = str(parsed)
    if text.startswith("extra ==") and " and " not in text and " or " not in text:
        return None
    return text
