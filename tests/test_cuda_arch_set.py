"""The GPU list is part of what is built: a CUDA build for fewer GPUs than conda-forge's
full lists names its set (``cuda_arch_set``, which conda-forge's files leave out) in its build
string and hash, in both recipes; ``render`` refuses a "full" claim that a row of
recipe/cuda_arch_lists.txt does not keep, a set name on a full row, and any name but the
row's own.

Each test tailors a copy of the recipe the way a lab's fork does: the row of one CUDA config
of .ci_support cut to one architecture, and ``cuda_arch_set`` set in the config (replacing a
fork's own). conda-forge's policy (every row full, no set name in its files) is tested where
the feedstock builds for conda-forge; a test that needs the full row a fork dropped skips,
saying so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import feedstock_matrix
from ruamel.yaml import YAML

from tools.foundation.errors import UserError
from tools.recipe.selectors import top_level_keys
from tools.render.config import render_config
from tools.render.cuda_archs import parse_arch_list, read_rows, set_name, uncovered

REPO = Path(__file__).resolve().parent.parent
ARCH_LISTS = REPO / "recipe" / "cuda_arch_lists.txt"


def _values(config: Path) -> dict:
    return YAML(typ="safe").load(config.read_text())


def _cuda_config() -> Path:
    """The first linux-64 CUDA config of .ci_support (the matrix decides which)."""
    config = feedstock_matrix.need(platform="linux-64", cuda=True)
    return REPO / ".ci_support" / f"{config.name}.yaml"


def _full_cuda_config() -> Path:
    """``_cuda_config()`` where its row is conda-forge's full list; a fork's narrower row
    skips (the tests compare with, or keep, the full row)."""
    config = _cuda_config()
    cuda = str(_values(config)["cuda_compiler_version"][0])
    row = read_rows(ARCH_LISTS)[(cuda, "linux-64")]
    if uncovered(cuda, "linux-64", parse_arch_list(row)):
        pytest.skip(f"recipe/cuda_arch_lists.txt's CUDA {cuda} linux-64 row ({row}) is not full")
    return config


# a config's own cuda_arch_set entry (a fork's), replaced when a test tailors it
_OWN_SET = re.compile(r"^cuda_arch_set:\n(?:- .*\n)*", flags=re.MULTILINE)


def _tailored(tmp_path: Path, arch_set: str, one_arch: str | None = "9.0") -> tuple[Path, Path]:
    """A recipe copy whose row for the config is ``one_arch`` (None: conda-forge's row
    kept), and the config with ``cuda_arch_set: [arch_set]``."""
    config = _cuda_config()
    cuda = str(_values(config)["cuda_compiler_version"][0])
    recipe = shutil.copytree(REPO / "recipe", tmp_path / "recipe")
    if one_arch is not None:
        (recipe / "cuda_arch_lists.txt").write_text(f"{cuda} linux-64 {one_arch}\n")
    text = _OWN_SET.sub("", config.read_text()) + f"cuda_arch_set:\n- {arch_set}\n"
    tailored = tmp_path / config.name
    tailored.write_text(text)
    return recipe, tailored


def test_every_row_a_config_builds_in_full_is_a_full_list():
    # conda-forge's own lists keep the "full" promise, so its configs carry no set name; a
    # fork's narrower row is held to it only where a config names no set (render refuses
    # that too).
    rows = read_rows(ARCH_LISTS)
    assert rows
    if feedstock_matrix.targets_conda_forge():
        claimed = set(rows)  # conda-forge builds for every GPU its CUDA versions support
    else:
        claimed = {
            (c.cuda, c.platform)
            for c in feedstock_matrix.select(cuda=True)
            if c.first("cuda_arch_set") in (None, "full")
        }
    for cuda, platform in sorted(claimed):
        text = rows[(cuda, platform)]
        assert uncovered(cuda, platform, parse_arch_list(text)) == [], (cuda, platform)


def test_a_one_arch_list_leaves_out_every_other_gpu():
    gaps = uncovered("13.0", "linux-64", parse_arch_list("9.0+PTX"))
    assert "sm_80" in gaps and "sm_120" in gaps and "sm_90" not in gaps
    assert not any(g.startswith("PTX") for g in gaps)


def test_a_named_set_joins_every_cuda_build_string_and_changes_its_hash(tmp_path):
    full = {o.name: o for o in render_config(_full_cuda_config(), root=REPO) if not o.skip}
    recipe, config = _tailored(tmp_path, "sm90")
    tailored = [o for o in render_config(config, root=REPO, recipe_dir=recipe) if not o.skip]
    assert {o.name for o in tailored} == set(full)
    for out in tailored:
        tag = full[out.name].build_string.split("_")[0]
        assert out.build_string.startswith(f"{tag}_sm90_"), out.build_string
        assert out.hash_input.get("cuda_arch_set") == "sm90", out.name
        assert out.cuda_arch_list == "9.0"
        assert "cuda_arch_set" not in full[out.name].hash_input, out.name


def test_both_recipes_name_the_set_in_the_same_build_strings(tmp_path):
    rattler_build = pytest.importorskip("rattler_build", reason="py-rattler-build is missing")
    recipe, config = _tailored(tmp_path, "sm90")
    meta = {(o.name, _unhashed(o.build_string)) for o in meta_outputs(recipe, config)}
    v1 = v1_outputs(recipe, config)
    assert rattler_build and meta == {(o.name, _unhashed(o.build_string)) for o in v1}
    assert all("_sm90_" in string for _, string in meta)


def meta_outputs(recipe: Path, config: Path) -> list:
    """The outputs meta.yaml in ``recipe`` builds for the linux-64 ``config`` (skips left out)."""
    return [o for o in render_config(config, root=REPO, recipe_dir=recipe) if not o.skip]


def v1_outputs(recipe: Path, config: Path) -> list:
    """The outputs recipe-v1.yaml in ``recipe`` builds for the linux-64 ``config``."""
    from tools.render.v1 import render_v1_config

    return render_v1_config(
        recipe / "recipe-v1.yaml",
        config,
        cbc=recipe / "conda_build_config.yaml",
        name=config.stem,
        subdir="linux-64",
        build_subdir="linux-64",
    )


def _unhashed(build_string: str) -> str:
    return "_".join(
        "h" if p.startswith("h") and len(p) == 8 else p for p in build_string.split("_")
    )


def test_render_refuses_a_full_claim_the_row_does_not_keep(tmp_path):
    recipe, config = _tailored(tmp_path, "full")
    with pytest.raises(UserError) as caught:
        render_config(config, root=REPO, recipe_dir=recipe)
    message = str(caught.value)
    assert "cuda_arch_lists.txt" in message and "leaves out sm_" in message and "sm_80" in message
    assert "cuda_arch_set" in message and "conda_build_config.yaml" in message


def test_the_refusal_is_one_error_line_and_exit_2(tmp_path):
    recipe, config = _tailored(tmp_path, "full")
    result = subprocess.run(
        [sys.executable, "-m", "tools", "render", str(config), "--recipe-dir", str(recipe)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.splitlines()
    assert (
        line.startswith("error: ")
        and "cuda_arch_lists.txt:1: " in line
        and "9.0 leaves out" in line
    )


def test_the_set_name_is_read_off_the_list():
    assert set_name(parse_arch_list("9.0")) == "sm90"
    assert set_name(parse_arch_list("8.0;9.0+PTX")) == "sm80sm90ptx"


def test_conda_forges_files_carry_no_set_name():
    # A variant key in the files enters every CUDA config's hash (conda-build and
    # rattler-build alike): the default matrix keeps the names it had before the key existed.
    if not feedstock_matrix.targets_conda_forge():
        pytest.skip("the feedstock builds for its own channel: a fork names its set")
    cbc = (REPO / "recipe" / "conda_build_config.yaml").read_text()
    assert "cuda_arch_set" not in top_level_keys(cbc)  # under any selector
    assert not any("cuda_arch_set" in _values(c) for c in (REPO / ".ci_support").glob("*.yaml"))


def test_render_refuses_a_set_name_on_the_full_row(tmp_path):
    # The lab named its set sm90, then put conda-forge's row back: the packages would hold
    # every GPU under a name that says sm90.
    _full_cuda_config()
    recipe, config = _tailored(tmp_path, "sm90", one_arch=None)
    with pytest.raises(UserError) as caught:
        render_config(config, root=REPO, recipe_dir=recipe)
    message = str(caught.value)
    assert "is the full list" in message and "'sm90'" in message
    assert "remove cuda_arch_set" in message


def test_render_refuses_a_set_name_its_row_does_not_have(tmp_path):
    recipe, config = _tailored(tmp_path, "sm90", one_arch="8.0;9.0")
    with pytest.raises(UserError) as caught:
        render_config(config, root=REPO, recipe_dir=recipe)
    message = str(caught.value)
    assert "cuda_arch_lists.txt:1: " in message and "is the set 'sm80sm90'" in message
    assert "cuda_arch_set: [sm80sm90]" in message


def test_a_set_name_that_cannot_be_a_build_string_word_is_refused(tmp_path):
    recipe, config = _tailored(tmp_path, "sm_90")
    with pytest.raises(UserError, match="not a build-string word"):
        render_config(config, root=REPO, recipe_dir=recipe)


def test_render_and_explain_show_the_list_per_config(tmp_path):
    recipe, config = _tailored(tmp_path, "sm90")
    render = subprocess.run(
        [sys.executable, "-m", "tools", "render", str(config), "--recipe-dir", str(recipe)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "  TORCH_CUDA_ARCH_LIST: 9.0\n" in render.stdout
    explain = subprocess.run(
        [sys.executable, "-m", "tools", "explain", "--markdown"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    cuda = str(_values(_cuda_config())["cuda_compiler_version"][0])
    row = next(r for r in explain.stdout.splitlines() if r.startswith(f"| {_cuda_config().stem} "))
    # the list, then the set's name where it is not conda-forge's full one: "9.0 (sm90)"
    assert re.search(rf"\| {re.escape(cuda)} \| {re.escape(_row(cuda))}( \(\w+\))? \|", row)


def _row(cuda: str) -> str:
    return read_rows(ARCH_LISTS)[(cuda, "linux-64")]


def _activate(cudaarchs_preset: str | None, conda_build: str = "1") -> str:
    """CUDAARCHS after sourcing the stand-in cuda-nvcc activation (13.0, linux-64)."""
    from fixtures.standin_channel.cuda import CUDAARCHS, TARGETS, activation_script

    script = activation_script(TARGETS["linux-64"], CUDAARCHS[("13.0", "linux-64")])
    env = {"PATH": "/usr/bin:/bin", "CXX": "g++", "CONDA_BUILD": conda_build}
    if cudaarchs_preset is not None:
        env["CUDAARCHS"] = cudaarchs_preset
    return subprocess.run(
        ["bash", "-c", f'{script}\nprintf %s "${{CUDAARCHS-unset}}"'],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_the_stand_in_nvcc_activation_sets_cudaarchs_in_a_build_as_conda_forges_does():
    # cuda-nvcc-feedstock's activate.sh: `if [[ ! -v CUDAARCHS ]]; then export CUDAARCHS=
    # "@default_cudaarchs@"` under CONDA_BUILD=1; the value is that feedstock's
    # DEFAULT_CUDAARCHS (CMake's form: every generation, the newest also as PTX).
    from fixtures.standin_channel.cuda import CUDAARCHS

    exported = _activate(None)
    assert exported == CUDAARCHS[("13.0", "linux-64")]
    assert exported.startswith("75-real;80-real;") and exported.endswith(";121-virtual")


def test_the_stand_in_nvcc_activation_keeps_a_preset_cudaarchs():
    assert _activate("90-real") == "90-real"


def test_the_stand_in_nvcc_activation_leaves_cudaarchs_alone_outside_a_build():
    assert _activate(None, conda_build="0") == "unset"


def test_explain_on_a_terminal_shows_the_list_under_each_cuda_row():
    result = subprocess.run(
        [sys.executable, "-m", "tools", "explain"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    notes = [line for line in result.stdout.splitlines() if line.startswith("  GPU arch")]
    rows = read_rows(ARCH_LISTS)
    cuda_configs = [
        c
        for c in (REPO / ".ci_support").glob("*.yaml")
        if (str(_values(c).get("cuda_compiler_version", ["None"])[0]), _platform(c)) in rows
    ]
    assert len(notes) == len(cuda_configs) > 0
    shown = [line.removeprefix("  GPU architectures: ").split(" (")[0] for line in notes]
    assert all(arch_list in rows.values() for arch_list in shown)


def _platform(config: Path) -> str:
    return str(_values(config)["target_platform"][0])
