"""Upstream's 2.15.0 win_amd64 wheel through recipe/bld.bat under Wine's cmd (issue 42).

The wheel's files stand for a Windows build of its release, as `python -m tools layout`
takes them: its torch/lib, include, share and bin are the install tree the build produces
(tests/helpers/wine/standins.py "compiles" them), its other torch/ files the package's
source. bld.bat's compile, libtorch and pytorch stages (the wheel's Python, 3.12, as the
megabuild Python) then run under Wine with the scikit-build-core layout the release uses, and
each output's files must be exactly what the layout replay says. The binaries' contents are
not copied (only share/'s CMake files, which bld.bat's helpers rewrite, are the wheel's own):
the file names decide where each file goes.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import pytest
from helpers import cache
from helpers.minitorch.support import SCIKIT_BUILD_CORE, two_interpreters
from helpers.wine.harness import Output, WineCondaBuild, host_python, run_sequence

from tools.commands.layout import default_config, host_requirements
from tools.layout.replay import load_rules, replay
from tools.layout.wheel import INSTALL_TOPS, read_wheel

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = """[build-system]
requires = ["scikit-build-core>=1.0"]
build-backend = "scikit_build_core.build"

[project]
name = "torch"
dynamic = ["version"]
"""


def _lay_out(wheel: Path, source: Path, products: Path) -> None:
    """The wheel's torch/ split into the source tree and the build's products."""
    source.mkdir(parents=True)
    (source / "pyproject.toml").write_text(PYPROJECT)
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            name = info.filename
            if info.is_dir() or not name.startswith("torch/"):
                continue
            rel = name.removeprefix("torch/")
            tree = rel.split("/")[0] in INSTALL_TOPS
            dest = (products / rel) if tree else (source / name)
            dest.parent.mkdir(parents=True, exist_ok=True)
            real = rel.startswith("share/")
            dest.write_bytes(archive.read(info) if real else name.encode())


def _split(wheel: Path) -> Path:
    """The wheel laid out once in the tests' cache (12,000 files): source/ and products/."""

    def build(folder: Path) -> None:
        _lay_out(wheel, folder / "source", folder / "products")
        (folder / "complete").write_text(wheel.name)

    entry = cache.tests_cache_root() / "wine" / f"split-{wheel.stem}"
    return cache.cached_dir(entry, build, lambda found: (found / "complete").is_file())


@pytest.fixture(scope="module")
def through_bld_bat(upstream_2_15_wheel, tmp_path_factory: pytest.TempPathFactory):
    wheel_path = upstream_2_15_wheel("win-64")
    first, _ = two_interpreters()
    if first.version != (3, 12):
        pytest.skip(f"the wheel is cp312; the megabuild Python found is {first.tag}")
    wheel = read_wheel(wheel_path)
    config = default_config(ROOT, wheel)
    host = host_requirements(config, ROOT, ROOT / "recipe")
    expected = replay(wheel, load_rules(ROOT / "recipe"), host, None)
    root = tmp_path_factory.mktemp("wine-wheel")
    split = _split(wheel_path)
    products = split / "products"
    build = WineCondaBuild(
        root,
        layout=SCIKIT_BUILD_CORE,
        products=products,
        variant={"blas_impl": "mkl", "cuda_compiler_version": "None", "PKG_VERSION": wheel.version},
        megabuild=host_python(first, SCIKIT_BUILD_CORE),
    )
    # The miniature's tree makes way for the wheel's (pyproject.toml names the backend). The
    # wheel holds none of the release's tools/: its version generator, which every build
    # runs (the miniature's model of upstream's, patched as conda-build patches it), stays.
    generator = Path("tools", "generate_torch_version.py")
    kept = (build.src_dir / generator).read_bytes()
    shutil.rmtree(build.src_dir)
    # Linked: the build writes new files into the source tree, never into the cache's.
    shutil.copytree(split / "source", build.src_dir, copy_function=os.link)
    (build.src_dir / generator).parent.mkdir()
    (build.src_dir / generator).write_bytes(kept)
    outputs = run_sequence(build, [build.megabuild])
    return expected, outputs


def _files(out: Output) -> set[str]:
    assert out.returncode == 0, out.log[-4000:]
    return {
        path.replace("Lib/site-packages/", "site-packages/", 1)
        for path in out.files
        if ".dist-info/" not in path
    }


def test_the_wheel_lays_out_without_a_problem_in_the_replay(through_bld_bat) -> None:
    expected, _ = through_bld_bat
    assert [p for p in expected.problems if p.kind != "warning"] == []


def test_libtorch_under_wine_holds_what_tools_layout_says(through_bld_bat) -> None:
    expected, outputs = through_bld_bat
    assert outputs["compile"].files == {}
    assert _files(outputs["libtorch"]) == set(expected.contents["libtorch"])


# What the kept generator writes: the miniature's name for the torch.version fields upstream's
# generator writes into torch/version.py, which the wheel's source already holds as upstream's
# wrote it (tests/fixtures/minitorch/project/tools/generate_torch_version.py).
GENERATED = "site-packages/torch/_version_info.py"


def test_pytorch_under_wine_holds_what_tools_layout_says(through_bld_bat) -> None:
    expected, outputs = through_bld_bat
    files = _files(outputs["pytorch-3.12"])
    assert GENERATED in files  # the build ran the release's generator
    assert files - {GENERATED} == set(expected.contents["pytorch"])
