"""What to install into the chroot, and installing it.

Inputs are wheels, conda packages (.conda / .tar.bz2) or pip requirements.
Each distinct set gets its own environment under /opt/emulate/envs/<key>
inside the rootfs: a venv made from the rootfs's python3 (pip resolves the
Python dependencies there, so environment markers see the emulated machine),
plus a conda prefix the venv reaches through a .pth file when conda packages
are given.  An environment counts as installed once its ``.complete`` marker
exists; anything else found there is debris of an interrupted run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as PipRequirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from tools.check.archive import DAMAGED
from tools.emulate.arch import Arch
from tools.emulate.chroot import CA_BUNDLE, Chroot
from tools.emulate.conda_link import (
    declared_requirements,
    link_conda_package,
    site_packages_pythons,
)
from tools.foundation import log
from tools.foundation.errors import UserError

ENVS = PurePosixPath("/opt/emulate/envs")
PIP_CACHE = PurePosixPath("/var/cache/emulate/pip")
DEFAULT_INDEX_URL = "https://pypi.org/simple"
COMPLETE = ".complete"
CONDA_SUFFIXES = (".conda", ".tar.bz2")


@dataclass(frozen=True)
class Wheel:
    path: Path


@dataclass(frozen=True)
class CondaPackage:
    path: Path
    name: str
    subdir: str


@dataclass(frozen=True)
class Requirement:
    spec: str


Item = Wheel | CondaPackage | Requirement


@dataclass(frozen=True)
class Environment:
    key: str
    root: PurePosixPath  # inside the chroot
    has_prefix: bool

    @property
    def venv(self) -> PurePosixPath:
        return self.root / "venv"

    @property
    def prefix(self) -> PurePosixPath:
        return self.root / "prefix"

    @property
    def path_entries(self) -> tuple[str, ...]:
        entries = [str(self.venv / "bin")]
        if self.has_prefix:
            entries.append(str(self.prefix / "bin"))
        return tuple(entries)

    def run_env(self) -> dict[str, str]:
        """Variables a test in this environment runs with (PATH comes from the caller)."""
        env = {"VIRTUAL_ENV": str(self.venv)}
        if self.has_prefix:
            # conda packages expect their prefix's lib (libstdc++, libgomp...)
            # before the rootfs's older system libraries.
            env["LD_LIBRARY_PATH"] = str(self.prefix / "lib")
            env["CONDA_PREFIX"] = str(self.prefix)
        return env


def _read_conda_index(path: Path) -> dict:
    from conda_package_streaming.package_streaming import stream_conda_info

    for tar, member in stream_conda_info(str(path)):
        if member.name == "info/index.json":
            index = json.loads(tar.extractfile(member).read())
            if not isinstance(index, dict):
                raise ValueError("info/index.json is not a JSON object")
            return index
    raise UserError(f"{path}: a conda package without info/index.json")


def classify(value: str, arch: Arch) -> Item:
    """Turn one command-line argument into what it asks to install, or explain why not."""
    looks_like_file = value.endswith((".whl", *CONDA_SUFFIXES)) or os.sep in value
    if looks_like_file:
        path = Path(value)
        if not path.is_file():
            raise UserError(f"{value}: no such file")
        if value.endswith(".whl"):
            try:
                tags = parse_wheel_filename(path.name)[3]
            except InvalidWheelFilename as exc:
                raise UserError(f"{value}: not a wheel file name ({exc})") from None
            if not any(arch.accepts_wheel_platform(tag.platform) for tag in tags):
                platforms = ", ".join(sorted({tag.platform for tag in tags}))
                raise UserError(f"{value}: built for {platforms}, not {arch.name}")
            return Wheel(path.resolve())
        if value.endswith(CONDA_SUFFIXES):
            try:
                index = _read_conda_index(path)
            except DAMAGED as exc:
                raise UserError(f"{value}: not a readable conda package ({exc})") from None
            subdir = str(index.get("subdir", ""))
            if not arch.accepts_conda_subdir(subdir):
                raise UserError(
                    f"{value}: built for {subdir or 'an unknown subdir'}, not {arch.conda_subdir}"
                )
            return CondaPackage(
                path.resolve(), name=str(index.get("name", path.name)), subdir=subdir
            )
        raise UserError(f"{value}: neither a wheel (.whl) nor a conda package (.conda, .tar.bz2)")
    try:
        PipRequirement(value)
    except InvalidRequirement:
        raise UserError(f"{value}: neither a file nor a pip requirement") from None
    return Requirement(value)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def environment_key(
    items: Sequence[Item], *, python: str, index_url: str, extra: Sequence[str] = ()
) -> str:
    """Identical inputs (by content, not by name) give the same environment."""
    parts = [f"python={python}", f"index={index_url}", *(f"extra={e}" for e in extra)]
    for item in items:
        if isinstance(item, Requirement):
            parts.append(f"req={item.spec}")
        else:
            parts.append(f"{type(item).__name__}={item.path.name}:{_file_digest(item.path)}")
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()[:16]


# --- the environment -------------------------------------------------------


def _place_wheel(wheel: Path, directory: Path) -> None:
    target = directory / wheel.name
    try:
        os.link(wheel, target)
    except OSError:  # another filesystem
        shutil.copy2(wheel, target)


def pip_env(index_url: str) -> dict[str, str]:
    """pip inside the chroot: PyPI (or --index-url) only, with the host's CAs.

    The host's pip configuration is deliberately ignored: its find-links and
    extra indexes are host paths of host-architecture wheels, invisible and
    useless inside the chroot.
    """
    return {
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": index_url,
        "PIP_CERT": str(CA_BUNDLE),
        "PIP_CACHE_DIR": str(PIP_CACHE),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
        "PIP_ROOT_USER_ACTION": "ignore",
        "PIP_PROGRESS_BAR": "off",
    }


def install(
    chroot: Chroot,
    items: Sequence[Item],
    *,
    index_url: str = DEFAULT_INDEX_URL,
    extra: Sequence[str] = (),
    timeout: float | None = None,
) -> Environment:
    """Create (or reuse) the environment holding ``items`` plus ``extra`` requirements."""
    python = chroot.rootfs.python
    key = environment_key(items, python=python, index_url=index_url, extra=extra)
    conda = [item for item in items if isinstance(item, CondaPackage)]
    env = Environment(key=key, root=ENVS / key, has_prefix=bool(conda))
    on_host = chroot.host_path(env.root)
    if (on_host / COMPLETE).is_file():
        log.warn(f"reusing the environment kept in {on_host}")
        return env
    if on_host.exists():
        shutil.rmtree(on_host)
    on_host.mkdir(parents=True)
    try:
        _populate(chroot, env, items, conda, index_url=index_url, extra=extra, timeout=timeout)
    except BaseException:
        shutil.rmtree(on_host, ignore_errors=True)
        raise
    (on_host / COMPLETE).write_text("")
    return env


def _populate(
    chroot: Chroot,
    env: Environment,
    items: Sequence[Item],
    conda: Sequence[CondaPackage],
    *,
    index_url: str,
    extra: Sequence[str],
    timeout: float | None,
) -> None:
    python = chroot.rootfs.python
    on_host = chroot.host_path(env.root)
    declared: list[str] = []
    if conda:
        prefix = chroot.host_path(env.prefix)
        with log.step(f"link {len(conda)} conda package(s) into {env.prefix}"):
            for package in conda:
                link_conda_package(
                    package.path, prefix, env.prefix, on_host / "pkgs", python=python
                )
        _check_python(conda, site_packages_pythons(prefix), python, chroot)
        declared = declared_requirements(prefix)

    with log.step(f"create a venv with the rootfs's Python {python}"):
        chroot.run("python3", "-m", "venv", env.venv, timeout=timeout)
    if conda:
        site = chroot.host_path(env.venv) / "lib" / f"python{python}" / "site-packages"
        (site / "emulate-conda-prefix.pth").write_text(
            f"{env.prefix}/lib/python{python}/site-packages\n"
        )

    wheels = [item.path for item in items if isinstance(item, Wheel)]
    if wheels:
        (on_host / "wheels").mkdir()
        for wheel in wheels:
            _place_wheel(wheel, on_host / "wheels")
    requirements = [
        *(str(env.root / "wheels" / wheel.name) for wheel in wheels),
        *(item.spec for item in items if isinstance(item, Requirement)),
        *declared,
        *extra,
    ]
    if requirements:
        with log.step(f"pip install {len(requirements)} requirement(s) (emulated)"):
            # --no-compile: byte-compiling all of torch under emulation costs
            # minutes; the few modules a test imports compile on first use.
            chroot.run(
                env.venv / "bin" / "python",
                "-m",
                "pip",
                "install",
                "--no-compile",
                *requirements,
                env=pip_env(index_url),
                timeout=timeout,
            )


def _check_python(
    conda: Iterable[CondaPackage], found: set[str], python: str, chroot: Chroot
) -> None:
    foreign = sorted(found - {python})
    if foreign:
        names = ", ".join(package.path.name for package in conda)
        raise UserError(
            f"{names}: built for Python {', '.join(foreign)}, but the {chroot.rootfs.suite} "
            f"rootfs has Python {python}; pass packages built for {python} or a --suite "
            "whose python3 matches"
        )


def remove(chroot: Chroot, env: Environment) -> None:
    shutil.rmtree(chroot.host_path(env.root), ignore_errors=True)
