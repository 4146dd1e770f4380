"""The embedded engine's side of a plan: which configs it can build on this machine, and the
command that builds one (``python -m tools.rattler_build build ...``).

It builds the v1 recipe (recipe/recipe.yaml once the feedstock is switched, else
recipe/recipe-v1.yaml beside meta.yaml) natively: only configs of this machine's platform,
and a CUDA config only where its CUDA packages can be installed.  The decisions are
.scripts/build_steps.sh's for rattler-build (test mode, package format, package cache), so
the two paths build the same packages.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path

from tools.foundation.errors import UserError
from tools.localbuild.engines import ccache
from tools.localbuild.engines.base import BuildPlan, HostFacts, Steps, v1_recipe
from tools.localbuild.engines.engine import ContainerEngine
from tools.localbuild.engines.offline import airgap
from tools.localbuild.options import Options
from tools.localbuild.records.configs import Config, read_variant
from tools.localbuild.records.provenance import package_time
from tools.smithy.forge import pkg_format_of, zstd_level_of
from tools.smithy.forge_yml import load_forge_yml

ENGINE_MODULE = "tools.rattler_build"
# The distribution the embedded engine comes from (requirements.txt).
EMBEDDED_DISTRIBUTION = "py-rattler-build"
INSTEAD = None  # a config it cannot build is refused
#: The EXTRA_CB_OPTIONS words the embedded engine understands (build_steps.sh's mapping).
EXTRA_OPTIONS = ("--no-test", "--keep-build", "--no-build-id")


def _first(variant: Mapping[str, object], key: str) -> str | None:
    value = variant.get(key)
    if isinstance(value, list):
        value = value[0] if value else None
    return None if value is None else str(value)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def probe_embedded() -> str:
    """Refuse an engine that is not installed; else py-rattler-build's version."""
    try:
        return metadata.version(EMBEDDED_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise UserError(
            f"the embedded engine needs {EMBEDDED_DISTRIBUTION}: "
            "`python -m pip install -r requirements.txt`"
        ) from None


def probe(config: Config, host: HostFacts) -> str | None:
    """Why the embedded engine cannot build ``config`` on this machine; None when it can."""
    variant = read_variant(config.path)
    target = _first(variant, "target_platform") or config.name.split("_")[0]
    if target != host.subdir:
        # The first clause says what and why: the menu shows it beside the config.
        return (
            f"{_a(target)} {target} config, and the embedded engine builds only "
            f"for this machine ({host.subdir}); {_where_instead(target)}"
        )
    cuda = _first(variant, "cuda_compiler_version")
    needed = _first(variant, "c_stdlib_version")
    glibc = host.glibc
    cuda_here = cuda not in (None, "None") and host.subdir.startswith("linux-") and needed
    if cuda_here and (glibc is None or _version(glibc) < _version(needed)):
        return (
            f"its CUDA {cuda} packages need glibc >= {needed} "
            f"(c_stdlib_version), this machine has {glibc or 'no glibc'}, so they cannot "
            "be installed here; build it in a container (--engine docker)"
        )
    return None


def cuda_override(config: Config) -> str | None:
    """CONDA_OVERRIDE_CUDA for a CUDA config, as build_steps.sh exports it: pytorch and
    pytorch-gpu run-depend on ``__cuda``, so the test phase's environment solves only with the
    virtual package present, and a build machine has no GPU to show it."""
    cuda = _first(read_variant(config.path), "cuda_compiler_version")
    return None if cuda in (None, "None") else cuda


def _a(word: str) -> str:
    """The article before a platform name: "an osx-64", "a linux-64"."""
    return "an" if word[:1] in "aeiou" else "a"


def _where_instead(target: str) -> str:
    """Where a config of another platform builds: Windows ones only on Windows
    (.scripts/run_win_build.bat); the others in conda-forge's container too, osx ones
    cross-compiled there with the macOS SDK."""
    if target.startswith("win-"):
        return f"build it on {_a(target)} {target} machine (Windows configs build only on Windows)"
    container = "in a container (--engine docker"
    container += ", with OSX_SDK_DIR)" if target.startswith("osx-") else ")"
    return f"build it on {_a(target)} {target} machine or {container}"


def extra_options(env: Mapping[str, str]) -> tuple[str, list[str]]:
    """EXTRA_CB_OPTIONS in rattler-build's words, as build_steps.sh maps them: the test mode,
    and the options passed on."""
    test, passed = "native", []
    for word in env.get("EXTRA_CB_OPTIONS", "").split():
        if word == "--no-test":
            test = "skip"
        elif word in EXTRA_OPTIONS:
            passed.append(word)
        else:
            raise UserError(
                f"EXTRA_CB_OPTIONS={env['EXTRA_CB_OPTIONS']!r}: {word} is not an option the "
                f"embedded engine takes ({', '.join(EXTRA_OPTIONS)})"
            )
    return test, passed


def package_format(root: Path) -> str:
    """rattler-build's ``--package-format``: conda-forge.yml's ``conda_build`` format and zstd
    level, read as build_steps.sh reads them (the environment does not change them there)."""
    forge = load_forge_yml(root)
    if pkg_format_of(forge) == "1":
        return "tar-bz2"
    return f"conda:{zstd_level_of(forge)}"


def argv(
    root: Path,
    config: Config,
    subdir: str,
    env: Mapping[str, str],
    *,
    artifacts: Path,
    channels: tuple[str, ...],
    source_archive: Path | None,
    ccache: tuple[Path, Path] | None,
) -> tuple[str, ...]:
    """The command that builds ``config`` with the embedded engine, run from ``root``."""
    test, passed = extra_options(env)
    command = [sys.executable, "-m", ENGINE_MODULE, "build"]
    command += ["--recipe", str(v1_recipe(root)), "-m", str(config.path)]
    command += ["--output-dir", str(artifacts)]
    command += ["--build-platform", subdir, "--target-platform", subdir]
    command += ["--test", test, "--package-format", package_format(root), *passed]
    for channel in channels:
        command += ["-c", channel]
    if source_archive is not None:
        command += ["--source-archive", str(source_archive)]
    if ccache is not None:
        # A fixed work folder keeps compile commands, and so cache keys, stable (as in
        # build_steps.sh).
        command += ["--ccache", str(ccache[0]), "--ccache-stats", str(ccache[1])]
        if "--no-build-id" not in command:
            command.append("--no-build-id")
    command += ["--feedstock-license", str(root / "LICENSE.txt")]
    # Every time in the packages is the commit's, so two builds of it agree (repack.py).
    command += ["--timestamp", str(package_time(root, env))]
    return tuple(command)


def plan(options: Options, config: Config, engine: ContainerEngine, host: HostFacts) -> Steps:
    # rattler-build's package cache beside the packages, as build_steps.sh keeps it.
    changes = {"RATTLER_CACHE_DIR": str(options.artifacts / "pkg_cache")}
    cuda = cuda_override(config)
    if cuda is not None:
        changes["CONDA_OVERRIDE_CUDA"] = cuda
    command = argv(
        options.root,
        config,
        host.subdir,
        options.env,
        artifacts=options.artifacts,
        channels=tuple(airgap.channel_url(c, options.artifacts) for c in options.channels),
        source_archive=airgap.cached_archive(options.root, options.source_cache),
        ccache=None
        if options.ccache is None
        else (options.ccache, ccache.stats_file(options.artifacts, config.name)),
    )
    return Steps(argv=command, changes=changes)


def describe(plan: BuildPlan, engine: ContainerEngine, rel: Callable[[Path], str]) -> list[str]:
    return [
        "  engine:  rattler-build, embedded (py-rattler-build), no container",
        f"  recipe:  {rel(Path(plan.argv[plan.argv.index('--recipe') + 1]))}",
    ]
