"""Conda environments from packages, with py-rattler, and what a package holds.

The end-to-end tests solve and install the packages a build made (and the stand-in channel's)
as a user's conda would, and read a .conda package's members."""

from __future__ import annotations

import asyncio
from pathlib import Path


def solve(channels: list[Path], specs: list[str], cuda: str | None = None):
    """The records py-rattler solves ``specs`` to on linux-64 (a machine with glibc 2.36,
    and a GPU driver for ``cuda`` when given)."""
    import rattler

    found = {"__glibc": "2.36", "__unix": "0", "__linux": "6.1", "__archspec": "1"}
    if cuda:
        found["__cuda"] = cuda
    virtual = [
        rattler.GenericVirtualPackage(
            rattler.PackageName(name), rattler.Version(version), rattler.BuildString("0")
        )
        for name, version in found.items()
    ]
    return asyncio.run(
        rattler.solve(
            [c.as_uri() for c in channels],
            specs,
            platforms=["linux-64", "noarch"],
            virtual_packages=virtual,
        )
    )


def install(records, prefix: Path, cache: Path) -> Path:
    """``records`` installed with py-rattler into the new environment ``prefix``."""
    import rattler

    asyncio.run(rattler.install(records, prefix, cache_dir=cache, show_progress=False))
    return prefix


def bytecode_outside_site_packages(package: Path) -> list[str]:
    """Paths under a __pycache__ folder of ``package`` (info/ included) that are not in
    site-packages."""
    from conda_package_streaming.package_streaming import CondaComponent, stream_conda_component

    found = []
    for component in (CondaComponent.info, CondaComponent.pkg):
        with package.open("rb") as stream:
            for _, member in stream_conda_component(package.name, stream, component):
                name = member.name
                if "__pycache__/" in name and "/site-packages/" not in f"/{name}":
                    found.append(name)
    return found
