"""PyPI requirements translated into conda specs and configuration conditions."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from tools.drift import pep440
from tools.drift.compare import admits
from tools.drift.names import canonical, conda_names
from tools.foundation.errors import UserError


@pytest.mark.parametrize(
    ("pypi", "conda"),
    [
        ("", None),
        ("==1.13.1", "==1.13.1"),
        (">=4.10.0", ">=4.10.0"),
        ("!=1.13.2,>=1.13.1", ">=1.13.1,!=1.13.2"),
        ("==1.13.*", "1.13.*"),
        ("!=1.13.*", "!=1.13.*"),
        ("~=1.4.2", ">=1.4.2,1.4.*"),
        ("~=2.2", ">=2.2,2.*"),
        ("===1.0", "==1.0"),
        ("<82,>=77.0.0", ">=77.0.0,<82"),
    ],
)
def test_specifier_translation(pypi: str, conda: str | None) -> None:
    assert pep440.conda_spec(SpecifierSet(pypi)) == conda


def test_compatible_release_keeps_its_meaning() -> None:
    spec = pep440.conda_spec(SpecifierSet("~=1.4.2"))
    assert admits(spec, "1.4.9") and not admits(spec, "1.5.0") and not admits(spec, "1.4.1")


def test_platform_marker_applies_to_linux_configurations_only() -> None:
    marker = 'platform_system == "Linux" and platform_machine == "x86_64"'
    assert pep440.marker_applies(marker, pep440.marker_environment("linux-64", "3.12"))
    assert not pep440.marker_applies(marker, pep440.marker_environment("linux-aarch64", "3.12"))
    assert not pep440.marker_applies(marker, pep440.marker_environment("win-64", "3.12"))


def test_python_version_marker_uses_the_configuration_python() -> None:
    marker = 'python_version >= "3.12"'
    assert pep440.marker_applies(marker, pep440.marker_environment("osx-arm64", "3.13"))
    assert not pep440.marker_applies(marker, pep440.marker_environment("osx-arm64", "3.10"))


def test_extra_guard_marks_an_optional_requirement() -> None:
    assert pep440.extra_of('extra == "optree"', ["optree", "pyyaml"]) == "optree"
    assert pep440.extra_of('platform_system == "Linux"', ["optree"]) is None
    assert pep440.extra_of(None, ["optree"]) is None


def test_pure_extra_guard_is_not_shown_as_a_condition() -> None:
    assert pep440.without_extra('extra == "optree"') is None
    assert pep440.without_extra('python_version >= "3.12"') == 'python_version >= "3.12"'


def test_unparsable_requirement_names_its_file() -> None:
    with pytest.raises(
        UserError, match=r"requirements.txt: cannot parse requirement 'torch >>= 2'"
    ):
        pep440.parse_requirement("torch >>= 2", "requirements.txt")


@pytest.mark.parametrize(
    ("upstream", "first"),
    [
        ("typing-extensions", "typing_extensions"),
        ("Jinja2", "jinja2"),
        ("nvidia-cudnn-cu12", "cudnn"),
        ("nvidia-cuda-runtime-cu12", "cuda-cudart"),
        ("protobuf", "libprotobuf"),
        ("magma", "libmagma-devel"),
    ],
)
def test_upstream_names_map_to_conda_forge_names(upstream: str, first: str) -> None:
    assert conda_names(upstream)[0] == first


def test_canonical_names_ignore_separator_and_case() -> None:
    assert canonical("Typing_Extensions") == canonical("typing-extensions") == "typing-extensions"


def test_extra_guard_combined_with_a_platform_guard_is_still_an_extra() -> None:
    marker = 'extra == "cuda" and platform_system == "Windows"'
    assert pep440.extra_of(marker, ["cuda"]) == "cuda"
    assert pep440.without_extra(marker) == marker  # the platform part still selects configs
    windows = pep440.marker_environment("win-64", "3.13")
    assert pep440.marker_applies(marker, windows, "cuda")
    assert not pep440.marker_applies(marker, pep440.marker_environment("linux-64", "3.13"), "cuda")
