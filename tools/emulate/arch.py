"""The architectures ``emulate`` knows, as data."""

from __future__ import annotations

from dataclasses import dataclass

from tools.foundation.errors import UserError


@dataclass(frozen=True)
class Arch:
    name: str  # uname -m, and the name PyPI wheel tags and QEMU's binfmt entries use
    debian: str  # Debian's architecture name (debootstrap --arch)
    conda_subdir: str
    default_cpus: tuple[str, ...]  # QEMU_CPU values tried when --cpu is not given

    @property
    def qemu(self) -> str:
        """The binfmt_misc entry and binfmt.d file name Debian's qemu-user-static uses."""
        return f"qemu-{self.name}"

    def accepts_wheel_platform(self, platform_tag: str) -> bool:
        return platform_tag == "any" or platform_tag.endswith(f"_{self.name}")

    def accepts_conda_subdir(self, subdir: str) -> bool:
        return subdir in (self.conda_subdir, "noarch")


ARCHES = {
    arch.name: arch
    for arch in (
        # SVE off, then each vector length PyTorch may dispatch on (SLEEF's CI
        # tests its vector widths the same way, one QEMU_CPU per job).
        Arch(
            name="aarch64",
            debian="arm64",
            conda_subdir="linux-aarch64",
            default_cpus=(
                "max,sve=off",
                "max,sve=on,sve128=on",
                "max,sve=on,sve256=on",
                "max,sve=on,sve512=on",
            ),
        ),
        Arch(
            name="ppc64le",
            debian="ppc64el",
            conda_subdir="linux-ppc64le",
            default_cpus=("power9", "power10"),
        ),
    )
}


def get_arch(name: str) -> Arch:
    try:
        return ARCHES[name]
    except KeyError:
        known = ", ".join(sorted(ARCHES))
        raise UserError(
            f"--arch {name}: not an emulated architecture (choose from {known})"
        ) from None
