"""Drift rows: the status of each upstream claim over the recipe's configurations."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.drift.synthetic import Output, claim

from tools.drift import groups, present, table
from tools.drift.channel import read_channel_files
from tools.drift.model import Condition, Kind, Scope, Status
from tools.drift.recipe import specs_from_rendered
from tools.drift.upstream_tree import read_tree
from tools.drift.upstream_wheel import claims_from_metadata

FIXTURES = Path(__file__).parent / "fixtures" / "drift"


def _config(
    cuda: str, blas: str, libtorch_host: tuple[str, ...], run: tuple[str, ...]
) -> list[Output]:
    variant = {"cuda_compiler_version": cuda, "blas_impl": blas, "target_platform": "linux-64"}
    outputs = [Output("libtorch", {"host": libtorch_host, "run": ()}, variant)]
    for python in ("3.12", "3.13"):
        outputs.append(
            Output(
                "pytorch",
                {
                    "host": (
                        f"python {python}.* *_cpython",
                        "libcudnn-dev 9.*" if cuda != "None" else "numpy",
                    ),
                    "run": (f"python >={python},<{python}.0a0", *run),
                },
                {**variant, "python": f"{python}.* *_cpython"},
            )
        )
    outputs.append(
        Output("pytorch-gpu", {"run": ("pytorch 2.13.0",)}, variant, skip=cuda == "None")
    )
    return outputs


RUN = (
    "filelock",
    "jinja2",
    "sympy >=1.13.3",
    "typing_extensions >=4.15",
    "setuptools <82",
    "networkx <2",
    "optree >=0.13.0",
    "__cuda",
)
RENDERED = [
    (
        "linux_64_cpu_mkl",
        _config("None", "mkl", ("sleef 3.9.*", "mkl-devel 2025.*", "setuptools <82"), RUN),
    ),
    (
        "linux_64_cuda129",
        _config(
            "12.9", "generic", ("sleef 3.8.*", "cuda-version 12.9.*", "libmagma-devel 2.9.*"), RUN
        ),
    ),
    (
        "linux_64_cuda130",
        _config(
            "13.0", "generic", ("sleef 3.8.*", "cuda-version 13.0.*", "libmagma-devel 2.9.*"), RUN
        ),
    ),
]


@pytest.fixture(scope="module")
def view() -> table.RecipeView:
    specs, configs, unparsable = specs_from_rendered(RENDERED)
    assert not unparsable
    return table.RecipeView(specs, configs)


def row_for(report: table.Report, package: str) -> table.DriftRow:
    rows = [r for r in report.rows if r.package == package]
    assert len(rows) == 1, rows
    return rows[0]


def test_configurations_carry_platform_variant_and_pythons(view) -> None:
    cpu = view.configs[0]
    assert (cpu.name, cpu.subdir, cpu.python) == ("linux_64_cpu_mkl", "linux-64", ("3.12", "3.13"))
    assert cpu.variant["cuda_compiler_version"] == "None"
    assert "python" not in cpu.variant  # it differs between the pytorch outputs


def test_skipped_outputs_and_virtual_packages_are_not_recipe_specs(view) -> None:
    assert not [
        s for s in view.specs if s.output == "pytorch-gpu" and s.config == "linux_64_cpu_mkl"
    ]
    assert not [s for s in view.specs if s.name.startswith("__")]


@pytest.mark.parametrize(
    ("package", "upstream", "status", "reason"),
    [
        ("sympy", ">=1.13.3", Status.OK, "same versions admitted"),
        (
            "typing-extensions",
            ">=4.10.0",
            Status.STRICTER,
            "recipe rejects 4.14, which upstream admits",
        ),
        (
            "setuptools",
            ">=77.0.3",
            Status.LOOSER,
            "recipe admits 77.0.2, which upstream rejects (and rejects 82",
        ),
        (
            "networkx",
            ">=2.5.1",
            Status.CONFLICT,
            "no version satisfies both upstream `>=2.5.1` and recipe `<2`",
        ),
        ("fsspec", ">=0.8.5", Status.LOOSER, "missing from the recipe's run requirements"),
        ("filelock", None, Status.OK, "same versions admitted"),
    ],
)
def test_run_requirement_status(view, package, upstream, status, reason) -> None:
    row = row_for(
        table.build_report([claim(package, upstream)], view, None), table.conda_names(package)[0]
    )
    assert row.status is status
    assert reason in row.reason


def test_optional_extra_the_recipe_leaves_out_is_ok(view) -> None:
    row = row_for(
        table.build_report([claim("opt-einsum", ">=3.3", extra="opt-einsum")], view, None),
        "opt_einsum",
    )
    assert row.status is Status.OK and "optional upstream extra [opt-einsum]" in row.reason


def test_optional_extra_the_recipe_adds_is_compared(view) -> None:
    row = row_for(
        table.build_report([claim("optree", ">=0.14", extra="optree")], view, None), "optree"
    )
    assert row.status is Status.LOOSER


def test_run_dependency_supplied_through_host_run_exports_is_unknown(view) -> None:
    cudnn = claim(
        "nvidia-cudnn-cu12", "==9.10.2.21", condition=Condition({"cuda_compiler_version": r"12\.9"})
    )
    row = row_for(table.build_report([cudnn], view, None), "libcudnn-dev")
    assert row.status is Status.UNKNOWN and "run_exports" in row.reason
    assert row.recipe[0].configs == ("linux_64_cuda129",)


def test_tested_version_per_configuration_shows_each_spec_and_the_worst_status(view) -> None:
    sleef = claim(
        "sleef",
        "==3.8.0",
        kind=Kind.TESTED,
        scope=Scope.HOST,
        text="3.8.0",
        source="third_party/sleef/CMakeLists.txt",
    )
    row = row_for(table.build_report([sleef], view, None), "sleef")
    assert row.status is Status.DIFFERS
    assert (
        row.reason
        == "recipe builds with `3.9.*`, newer than upstream's 3.8.0 (in 1 of 3 configurations)"
    )
    assert [(g.spec, g.label) for g in row.recipe] == [
        ("3.8.*", "blas_impl=generic"),
        ("3.9.*", "cuda_compiler_version=None"),
    ]
    assert (
        present.recipe_cell(row, "; ")
        == "3.8.* (blas_impl=generic); 3.9.* (cuda_compiler_version=None)"
    )


def test_different_specs_in_one_configuration_say_which_output_has_which() -> None:
    rendered = [
        (
            "cpu",
            [
                Output("libtorch", {"host": ("setuptools <82",)}),
                Output("pytorch", {"host": ("setuptools",)}),
            ],
        ),
    ]
    specs, configs, _ = specs_from_rendered(rendered)
    build = claim("setuptools", ">=70", scope=Scope.HOST, source="pyproject.toml [build-system]")
    row = row_for(table.build_report([build], table.RecipeView(specs, configs), None), "setuptools")
    assert present.recipe_cell(row, "; ") == "any (pytorch host); <82 (libtorch host)"
    assert row.status is Status.LOOSER  # the pytorch host admits setuptools 69


def test_group_label_names_the_platform_a_maintainer_would() -> None:
    from tools.drift.model import RecipeConfig

    configs = [
        RecipeConfig("linux", "linux-64", {"c_compiler": "gcc"}),
        RecipeConfig("osx", "osx-arm64", {"c_compiler": "clang"}),
        RecipeConfig("win", "win-64", {"c_compiler": "vs2022"}),
    ]
    assert groups.distinguishing_label(["win"], configs) == "platform=win"
    assert groups.distinguishing_label(["linux", "osx"], configs) == "platform!=win"
    assert groups.distinguishing_label(["linux", "osx", "win"], configs) == ""


def test_tested_version_is_found_in_run_requirements_too(view) -> None:
    triton = claim(
        "triton",
        "==3.5.1",
        kind=Kind.TESTED,
        scope=Scope.HOST,
        text="3.5.1",
        source=".ci/docker/triton_version.txt",
    )
    extended = table.RecipeView(
        view.specs
        + specs_from_rendered(
            [
                (
                    "linux_64_cuda129",
                    [
                        Output(
                            "pytorch", {"run": ("triton 3.5.*",)}, {"cuda_compiler_version": "12.9"}
                        )
                    ],
                )
            ]
        )[0],
        view.configs,
    )
    row = row_for(table.build_report([triton], extended, None), "triton")
    assert row.status is Status.OK and row.recipe[0].spec == "3.5.*"


def test_bare_rendered_version_is_a_prefix_match_as_conda_build_reads_it() -> None:
    specs, _, _ = specs_from_rendered([("c", [Output("libtorch", {"host": ("mkl-devel 2025",)})])])
    assert specs[0].spec == "2025.*"


def test_tested_version_of_a_vendored_library_the_recipe_does_not_use_is_unknown(view) -> None:
    kineto = claim(
        "kineto",
        "==0.1",
        kind=Kind.TESTED,
        scope=Scope.HOST,
        text="0.1",
        source="third_party/kineto/libkineto/CMakeLists.txt",
    )
    row = row_for(table.build_report([kineto], view, None), "kineto")
    assert (row.status, row.reason) == (
        Status.UNKNOWN,
        "the recipe builds upstream's vendored copy",
    )


def test_cuda_scoped_pin_is_compared_with_that_series_only(view) -> None:
    cuda = claim(
        "cuda",
        "==12.9",
        kind=Kind.TESTED,
        scope=Scope.HOST,
        text="12.9.1",
        condition=Condition({"cuda_compiler_version": r"12\.9"}, label="CUDA 12.9"),
    )
    row = row_for(table.build_report([cuda], view, None), "cuda-version")
    assert row.status is Status.OK and row.recipe[0].configs == ("linux_64_cuda129",)


def test_pin_for_a_series_the_recipe_does_not_build_is_left_out_unless_all(view) -> None:
    old = claim(
        "cuda",
        "==12.6",
        kind=Kind.TESTED,
        scope=Scope.HOST,
        text="12.6.3",
        condition=Condition({"cuda_compiler_version": r"12\.6"}, label="CUDA 12.6"),
    )
    report = table.build_report([old], view, None)
    assert not report.rows and "no configuration of this recipe" in report.hidden[0]
    shown = table.build_report([old], view, None, show_all=True)
    assert row_for(shown, "cuda-version").status is Status.UNKNOWN


def test_marker_restricts_the_configurations(view) -> None:
    windows = claim("pywin32", None, condition=Condition(marker='platform_system == "Windows"'))
    assert not table.build_report([windows], view, None).rows


def test_development_requirements_show_only_when_the_recipe_uses_them(view) -> None:
    claims = [
        claim("hypothesis", None, source="requirements.txt", priority=40, development=True),
        claim("jinja2", ">=3", source="requirements.txt", priority=40, development=True),
    ]
    report = table.build_report(claims, view, None)
    assert [r.package for r in report.rows] == ["jinja2"]
    assert "hypothesis" in report.hidden[0]


def test_the_most_authoritative_source_wins_per_package_and_scope() -> None:
    wheel = claim("sympy", ">=1.13.3")
    requirements = claim(
        "sympy", ">=1.13.1", source="requirements.txt", priority=40, development=True
    )
    build = claim(
        "sympy", ">=1.13.1", scope=Scope.HOST, source="requirements-build.txt", priority=25
    )
    assert groups.select_claims([requirements, wheel, build]) == [wheel, build]


def test_channel_versions_fill_the_column_and_flag_unsatisfiable_rows(view) -> None:
    forge = read_channel_files([FIXTURES / "repodata-noarch.json"])
    report = table.build_report([claim("setuptools", ">=81")], view, forge)
    row = row_for(report, "setuptools")
    assert row.conda_forge.latest == "82.0.1"
    assert row.reason.endswith(
        "; no conda-forge version satisfies both"
    )  # 80.9.0 < 81, 82.0.1 >= 82


def test_without_recipe_every_row_is_unknown_with_the_reason() -> None:
    report = table.build_report([claim("sympy", ">=1.13.3")], None, None, recipe_note="--no-recipe")
    assert row_for(report, "sympy").reason == "recipe not rendered: --no-recipe"


def test_fixture_tree_and_wheel_against_the_synthetic_recipe(view) -> None:
    metadata = (
        "Metadata-Version: 2.4\nName: torch\nVersion: 2.13.0+cpu\n"
        "Requires-Dist: sympy>=1.13.3\nRequires-Dist: fsspec>=0.8.5\n"
    )
    claims = [*read_tree(FIXTURES / "pytorch-src").claims, *claims_from_metadata(metadata, "w.whl")]
    report = table.build_report(claims, view, read_channel_files([FIXTURES / "channeldata.json"]))
    statuses = {(r.package, r.upstream.condition.label): r.status for r in report.rows}
    assert statuses[("sympy", "")] is Status.OK
    assert statuses[("libmagma-devel", "CUDA")] is Status.DIFFERS  # 2.6.1 upstream, 2.9.* here
    assert statuses[("mkl-devel", "MKL")] is Status.OK  # 2025.2.0 within 2025.*
    assert statuses[("cuda-version", "CUDA 13.0")] is Status.OK
    assert ("cuda-version", "CUDA 12.6") not in statuses  # the recipe builds no CUDA 12.6
    assert row_for(report, "fmt").conda_forge.latest == "12.0.0"


@pytest.mark.parametrize(
    ("config", "name"),
    [
        (
            "linux_64_cuda_compiler_version12.9is_rcFalse",
            "linux_64_cuda_compiler_version12.9is_rcFalse",
        ),
        (".ci_support/osx_arm64_python3.12.____cpython.yaml", "osx_arm64_python3.12.____cpython"),
    ],
)
def test_config_names_keep_their_dots(config: str, name: str) -> None:
    from tools.drift.recipe import config_name

    assert config_name(config) == name
