"""Used-variable detection and the pieces of conda-smithy's CI-job split."""

from __future__ import annotations

from types import SimpleNamespace

from tools.commands.explain import format_table, job_row
from tools.recipe.text import (
    used_in_batch_script,
    used_in_shell_script,
    used_in_text,
    uses_cuda_compiler,
)
from tools.recipe.variant_config import explode
from tools.smithy.jobs import collapse, finalize_config


def test_keys_count_as_used_in_jinja_pins_requirements_selectors_and_conditions():
    text = (
        "    - mkl-devel {{ mkl }}\n"
        "    - zlib\n"
        "    - foo  # [blas_impl == 'mkl']\n"
        "{% if cuda_compiler_version != 'None' %}\n"
        "    - {{ pin_compatible('numpy') }}\n"
    )
    keys = ["mkl", "zlib", "blas_impl", "cuda_compiler_version", "numpy", "python"]
    assert used_in_text(keys, text) == {"mkl", "zlib", "cuda_compiler_version", "numpy"}
    assert used_in_text(keys, text, selectors_only=True) == {"blas_impl"}


def test_a_requirement_with_a_version_does_not_use_the_key():
    assert used_in_text(["python"], "    - python 3.12.*\n") == set()
    assert used_in_text(["python"], "    - python  # [linux]\n") == {"python"}


def test_compiler_keys_follow_the_compiler_function():
    text = "    - {{ compiler('cuda') }}\n    - {{ stdlib('c') }}\n"
    keys = ["cuda_compiler", "cuda_compiler_version", "c_stdlib", "c_stdlib_version", "c_compiler"]
    assert used_in_text(keys, text) == {
        "cuda_compiler",
        "cuda_compiler_version",
        "c_stdlib",
        "c_stdlib_version",
    }


def test_shell_scripts_use_keys_as_first_dollar_of_a_line():
    script = 'echo ${blas_impl}\nX="$cuda_compiler_version"\ncase $target_platform in\n'
    assert used_in_shell_script(
        ["blas_impl", "cuda_compiler_version", "target_platform"], script
    ) == {"blas_impl", "target_platform"}


def test_batch_scripts_use_percent_references():
    assert used_in_batch_script(["blas_impl", "python"], "if %blas_impl%==mkl (\n") == {"blas_impl"}


def test_cuda_is_enabled_only_by_an_uncommented_compiler_cuda():
    assert uses_cuda_compiler("    - {{ compiler('cuda') }}  # [linux]\n")
    assert uses_cuda_compiler('    - {{ compiler("cuda") }}\n')
    assert not uses_cuda_compiler("    # - {{ compiler('cuda') }}\n")


def test_linux_configs_keep_only_the_first_docker_image_and_its_zipped_values():
    config = {
        "docker_image": ["img:a", "img:b"],
        "cdt": ["x", "y"],
        "zip_keys": [["docker_image", "cdt"]],
    }
    out = finalize_config(config, "linux-64", "fallback")
    assert out["docker_image"] == ["img:a"] and out["cdt"] == ["x"]
    assert finalize_config({}, "linux-64", "fallback")["docker_image"] == ["fallback"]
    assert "docker_image" not in finalize_config({}, "osx-arm64", "fallback")


def _out(**kw):
    base = {
        "used_vars": frozenset({"python", "target_platform"}),
        "variants": (),
        "top_level_vars": frozenset(),
        "top_level_loop_vars": frozenset({"blas_impl"}),
    }
    base.update(kw)
    return SimpleNamespace(**base)


def test_collapse_splits_on_top_level_keys_and_keeps_always_kept_ones():
    inputs = explode(
        {
            "blas_impl": ["mkl", "generic"],
            "python": ["3.11", "3.12"],
            "target_platform": ["linux-64"],
            "channel_targets": ["conda-forge main"],
            "github_actions_labels": ["big"],
            "unused": ["u"],
        }
    )
    outputs = [
        _out(
            variant=var,
            variants=tuple(inputs),
            used_vars=frozenset({"python", "blas_impl", "target_platform"}),
        )
        for var in inputs
    ]
    configs, loop_vars = collapse(outputs, inputs, github_actions=True)
    assert loop_vars == {"blas_impl", "target_platform"}
    assert sorted(c["blas_impl"][0] for c in configs) == ["generic", "mkl"]
    for config in configs:
        assert config["python"] == ["3.11", "3.12"]
        assert config["github_actions_labels"] == ["big"] and "unused" not in config


def _rendered(name, cuda_arch_list="8.0;9.0+PTX", **variant):
    variant.setdefault("cuda_compiler_version", "12.9")
    variant.setdefault("cuda_arch_set", "full")
    variant.setdefault("blas_impl", "mkl")
    return SimpleNamespace(
        name=name,
        skip=False,
        subdir="linux-aarch64",
        build_platform="linux-64",
        variant=variant,
        used_vars=frozenset(variant),
        cuda_arch_list=cuda_arch_list,
    )


def test_explain_row_names_flavours_and_pythons():
    rendered = _rendered
    outputs = [
        rendered("libtorch"),
        rendered("libtorch-cuda-linalg", cuda_linalg_flavor="magma"),
        rendered("libtorch-cuda-linalg", cuda_linalg_flavor="nomagma"),
        rendered("pytorch", python="3.10.* *_cpython"),
        rendered("pytorch", python="3.14.* *_cp314"),
    ]
    row = job_row("cfg", outputs)
    assert row == (
        "cfg",
        "linux-aarch64",
        "linux-64 (cross)",
        "12.9",
        "8.0;9.0+PTX",
        "mkl",
        "3.10, 3.14",
        "libtorch, libtorch-cuda-linalg (magma, nomagma), pytorch (x2)",
    )
    assert format_table([row], markdown=True).splitlines()[2].startswith("| cfg | linux-aarch64 |")


def test_explain_names_a_narrower_gpu_set_beside_its_list():
    outputs = [_rendered("libtorch", cuda_arch_list="9.0", cuda_arch_set="sm90")]
    assert job_row("cfg", outputs)[4] == "9.0 (sm90)"
