"""The recipe model on small recipes: one behaviour of conda-build's meta.yaml per test."""

from __future__ import annotations

import hashlib
import json
import textwrap

import pytest

from tools.recipe.errors import RecipeError, UnsupportedConstruct
from tools.recipe.evaluate import RecipeSource, Target
from tools.recipe.model import render
from tools.recipe.requirements import apply_pin_expressions
from tools.recipe.variant_config import explode

LINUX = Target("linux-64")
BASE = {
    "target_platform": "linux-64",
    "python": "3.12.* *_cpython",
    "c_compiler": "gcc",
    "c_compiler_version": "14",
    "c_stdlib": "sysroot",
    "c_stdlib_version": "2.17",
    "cxx_compiler": "gxx",
    "cxx_compiler_version": "14",
    "ignore_build_only_deps": ["python", "numpy"],
    "extend_keys": ["ignore_build_only_deps", "extend_keys"],
}


def run(meta: str, target: Target = LINUX, scripts=(), **spec):
    variant_spec = {
        k: (v if isinstance(v, list) else [v]) for k, v in BASE.items() if k not in spec
    }
    variant_spec.update({k: (v if isinstance(v, list) else [v]) for k, v in spec.items()})
    for key in ("ignore_build_only_deps", "extend_keys"):
        variant_spec[key] = BASE[key]
    source = RecipeSource(textwrap.dedent(meta), tuple(scripts), "meta.yaml")
    return render_checked(source, explode(variant_spec), target)


def render_checked(source: RecipeSource, variants, target: Target):
    """Render with the fast YAML path, and check that the slow path agrees: the same outputs
    or the same error (tests/test_recipe_fast_path.py does the same for every CI config)."""
    outcomes = []
    for fast in (True, False):
        try:
            outcomes.append(render(source, variants, target, fast_yaml=fast))
        except RecipeError as exc:
            outcomes.append(exc)
    fast_result, slow_result = outcomes
    if isinstance(fast_result, RecipeError) or isinstance(slow_result, RecipeError):
        assert (type(fast_result), str(fast_result)) == (type(slow_result), str(slow_result))
        raise fast_result
    assert fast_result == slow_result
    return fast_result


def by_name(outputs, name):
    return [o for o in outputs if o.name == name]


SIMPLE = """\
package:
  name: pkg
  version: 1.0
build:
  number: 2
requirements:
  build:
    - {{ compiler('c') }}
    - {{ stdlib('c') }}
  host:
    - zlib
"""


def test_compiler_and_stdlib_resolve_from_the_variant():
    (out,) = run(SIMPLE, zlib="1.3")
    assert out.requirements["build"] == ("gcc_linux-64 14.*", "sysroot_linux-64 2.17.*")


def test_bare_requirement_named_like_a_variant_key_gets_the_pin():
    (out,) = run(SIMPLE, zlib="1.3")
    assert out.requirements["host"] == ("zlib 1.3.*",)


def test_build_string_carries_conda_builds_hash_of_the_used_keys():
    (out,) = run(SIMPLE, zlib="1.3")
    used = {
        "c_compiler": "gcc",
        "c_compiler_version": "14",
        "c_stdlib": "sysroot",
        "c_stdlib_version": "2.17",
        "target_platform": "linux-64",
        "zlib": "1.3",
    }
    digest = hashlib.sha1(json.dumps(used, sort_keys=True).encode()).hexdigest()[:7]
    assert out.hash_input == used
    assert out.build_string == f"h{digest}_2"


def test_selector_lines_inside_lists_and_mappings():
    meta = """\
    package:
      name: pkg
      version: 1.0
    build:
      number: 0
      skip: true  # [win]
    requirements:
      host:
        - only-linux  # [linux]
        - only-osx    # [osx]
    """
    (out,) = run(meta)
    assert out.requirements["host"] == ("only-linux",)
    assert out.skip is False
    (win,) = run(meta, Target("win-64"), target_platform="win-64")
    assert win.skip is True and win.requirements["host"] == ()


def test_duplicate_keys_chosen_by_selectors():
    meta = """\
    package:
      name: pkg
      version: 1.0
    build:
      string: cuda_{{ PKG_BUILDNUM }}  # [cuda_compiler_version != "None"]
      string: cpu_{{ PKG_BUILDNUM }}   # [cuda_compiler_version == "None"]
    """
    (cpu,) = run(meta, cuda_compiler_version="None")
    (gpu,) = run(meta, cuda_compiler_version="12.9")
    assert (cpu.build_string, gpu.build_string) == ("cpu_0", "cuda_0")


def test_a_duplicate_key_left_after_selectors_is_an_error_with_its_line():
    meta = "package:\n  name: pkg\n  version: 1.0\nbuild:\n  number: 1\n  number: 2\n"
    with pytest.raises(UnsupportedConstruct, match=r"^meta.yaml:6: duplicate key 'number'"):
        run(meta)


def test_yaml_errors_name_the_source_line():
    meta = "package:\n  name: pkg\n  version: 1.0\nbuild: [\n"
    with pytest.raises(RecipeError, match=r"^meta.yaml:\d+: not valid YAML \("):
        run(meta)


def test_jinja_syntax_errors_name_the_line():
    meta = "package:\n  name: pkg\n  version: {{ 1.0\n"
    with pytest.raises(RecipeError, match=r"^meta.yaml:3: jinja2 syntax error"):
        run(meta)


def test_functions_needing_files_are_unsupported_with_their_line():
    meta = "{% set data = load_setup_py_data() %}\npackage:\n  name: pkg\n  version: 1.0\n"
    with pytest.raises(
        UnsupportedConstruct, match=r"^meta.yaml:1: unsupported construct load_setup_py_data\(\)"
    ):
        run(meta)


def test_cdt_uses_cdt_name_and_arch():
    meta = (
        "package:\n  name: pkg\n  version: 1.0\n"
        "requirements:\n  build:\n    - {{ cdt('mesa-libgl-devel') }}\n"
    )
    (out,) = run(meta, cdt_name="conda")
    assert out.requirements["build"] == ("mesa-libgl-devel-conda-x86_64",)


def test_environ_is_available_to_jinja():
    meta = "package:\n  name: pkg\n  version: {{ environ.get('PKG_VER', '9.9') }}\n"
    (out,) = run(meta, Target("linux-64", environ={"PKG_VER": "3.1"}))
    assert out.version == "3.1"


MULTI = """\
{% set version = "2.0.0" %}
package:
  name: libx
  version: {{ version }}
build:
  number: 4
  string: {{ flavor }}_h{{ PKG_HASH }}_4
  run_exports:
    - {{ pin_subpackage('libx', max_pin='x.x') }}
requirements:
  build:
    - {{ compiler('c') }}
  host:
    - python 3.12.*
    - openblas
  run_constrained:
    - x-extra <0a0
test:
  commands:
    - test -f lib/libx.so
outputs:
  - name: libx
    requirements:
      run:
        - libgomp
  - name: py-x
    script: build.sh
    build:
      string: {{ flavor }}_py{{ CONDA_PY }}_h{{ PKG_HASH }}_4
    requirements:
      host:
        - python
        - {{ pin_subpackage('libx', exact=True) }}
      run:
        - python
        - {{ pin_subpackage('libx', max_pin='x') }}
    test:
      imports:
        - x
  - name: meta-x
    requirements:
      run:
        - {{ pin_subpackage('py-x', exact=True) }}
"""


def multi(**spec):
    spec.setdefault("python", ["3.11.* *_cpython", "3.12.* *_cpython"])
    spec.setdefault("flavor", "cpu")
    spec.setdefault("openblas", "0.3")
    return run(MULTI, scripts=(("build.sh", "echo $PKG_NAME\n"),), **spec)


def test_per_output_variant_reduction():
    outputs = multi()
    assert [o.name for o in outputs].count("libx") == 1
    assert sorted(o.variant["python"] for o in by_name(outputs, "py-x")) == [
        "3.11.* *_cpython",
        "3.12.* *_cpython",
    ]


def test_output_named_like_the_package_merges_top_level_requirements():
    (lib,) = by_name(multi(), "libx")
    assert lib.requirements["host"] == ("python 3.12.*", "openblas 0.3.*")
    assert lib.requirements["run"] == ("libgomp",)
    assert lib.requirements["run_constrained"] == ("x-extra <0a0",)
    assert lib.test["commands"] == ["test -f lib/libx.so"]


def test_other_outputs_do_not_inherit_top_level_requirements_or_test_commands():
    py = by_name(multi(), "py-x")[0]
    assert "openblas 0.3.*" not in py.requirements["host"]
    assert py.requirements["run_constrained"] == ()
    assert "commands" not in py.test and py.test["imports"] == ["x"]


def test_pin_subpackage_resolves_against_the_sibling_output():
    outputs = multi()
    (lib,) = by_name(outputs, "libx")
    for py in by_name(outputs, "py-x"):
        assert f"libx 2.0.0 {lib.build_string}" in py.requirements["host"]
        assert "libx >=2.0.0,<3.0a0" in py.requirements["run"]
    assert lib.run_exports == {"weak": ("libx >=2.0.0,<2.1.0a0",)}


def test_exact_pin_to_a_per_python_output_matches_shared_keys():
    outputs = multi()
    (meta,) = by_name(outputs, "meta-x")
    pinned = {py.build_string for py in by_name(outputs, "py-x")}
    assert meta.requirements["run"][0].split(" ")[2] in pinned


def test_python_is_in_the_hash_of_outputs_that_use_it():
    py311, py312 = sorted(by_name(multi(), "py-x"), key=lambda o: o.variant["python"])
    assert py311.build_string.startswith("cpu_py311_h")
    assert py311.hash_input["python"] == "3.11.* *_cpython"
    assert py311.build_string != py312.build_string


def test_output_script_variables_count_as_used():
    outputs = run(
        MULTI,
        scripts=(("build.sh", "cmake -DX=${flavor} .\n"),),
        python="3.12.* *_cpython",
        flavor="cpu",
        openblas="0.3",
        unused="a",
    )
    py = by_name(outputs, "py-x")[0]
    assert "flavor" in py.used_vars


def test_pin_expressions():
    assert apply_pin_expressions("2.13.0", "x.x.x.x.x.x", "x.x") == ">=2.13.0,<2.14.0a0"
    assert apply_pin_expressions("2.13.0", None, "x") == "<3.0a0"


def test_pin_compatible_without_an_environment_leaves_the_name_for_the_variant_pin():
    meta = """\
    package:
      name: pkg
      version: 1.0
    requirements:
      host:
        - numpy
      run:
        - {{ pin_compatible('numpy') }}
        - {{ pin_compatible('zlib', lower_bound='1.2', upper_bound='2') }}
    """
    (out,) = run(meta, numpy="2")
    assert out.requirements["host"] == ("numpy 2.*",)
    assert out.requirements["run"] == ("numpy", "zlib >=1.2,<2")
