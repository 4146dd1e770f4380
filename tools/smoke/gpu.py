"""The GPU smoke test of one config's built packages: install them, run real kernels.

``install(...)`` solves ``pytorch`` (with ``libtorch-cuda-linalg`` where it was built) from
the build's own channel (``build_artifacts``) and the given channels with py-rattler, for
this machine's virtual packages, and installs the solution into a fresh prefix.
``kernel_command(...)`` is the kernel test run in it: ``recipe/check_torch.py --gpu-only``
(torch's elementwise, cuBLAS and cuSOLVER kernels against the CPU) unless another is
given; it prints one ``skip`` line where no GPU is visible.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.foundation.errors import UserError

LINALG = "libtorch-cuda-linalg"


@dataclass(frozen=True)
class Installed:
    prefix: Path
    packages: tuple[str, ...]  # "name version build"
    cuda: str | None  # "13.0" from pytorch's build string (cuda130_...), None for CPU


def cuda_of_build(build: str) -> str | None:
    """``cuda130_generic_...`` -> ``13.0``; None for a CPU build."""
    match = re.match(r"cuda(\d+?)(\d)_", build)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def _channel(value: str) -> str:
    path = Path(value)
    return path.resolve().as_uri() if path.exists() else value


def _virtual_packages(cuda: str | None):
    import rattler

    found = [v.into_generic() for v in rattler.VirtualPackage.detect()]
    if cuda and not any(v.name.normalized == "__cuda" for v in found):
        # No driver here: the packages install as for a machine with one, and the kernel
        # test then finds no GPU and says so.
        found.append(
            rattler.GenericVirtualPackage(
                rattler.PackageName("__cuda"), rattler.Version(cuda), rattler.BuildString("0")
            )
        )
    return found


def install(
    artifacts: Path,
    channels: Sequence[str],
    prefix: Path,
    python: str | None = None,
    cuda: str | None = None,
    subdir: str = "linux-64",
) -> Installed:
    import rattler
    from rattler.exceptions import SolverError

    built = sorted((artifacts / subdir).glob("*.conda")) + sorted(
        (artifacts / subdir).glob("*.tar.bz2")
    )
    if not any(p.name.startswith("pytorch-") for p in built):
        raise UserError(f"{artifacts / subdir} holds no pytorch package; build a config first")
    if cuda is None:
        # pytorch-2.13.0-cuda130_generic_py312_h…_200.conda: the CUDA version it was built for
        builds = {p.name.rsplit("-", 1)[-1] for p in built if p.name.startswith("pytorch-2")}
        found = {cuda_of_build(b) for b in builds} - {None}
        cuda = found.pop() if len(found) == 1 else None
    specs = ["pytorch"] + ([f"python {python}.*"] if python else [])
    if any(p.name.startswith(LINALG + "-") for p in built):
        specs.append(LINALG)
    try:
        records = asyncio.run(
            rattler.solve(
                [artifacts.resolve().as_uri(), *(_channel(c) for c in channels)],
                specs,
                platforms=[subdir, "noarch"],
                virtual_packages=_virtual_packages(cuda),
            )
        )
    except SolverError as error:
        why = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
        raise UserError(f"cannot install {' '.join(specs)} from {artifacts}: {why}") from None
    asyncio.run(rattler.install(records, prefix, show_progress=False))
    [torch] = [r for r in records if r.name.normalized == "pytorch"]
    return Installed(
        prefix,
        tuple(sorted(f"{r.name.normalized} {r.version} {r.build}" for r in records)),
        cuda_of_build(str(torch.build)),
    )


def kernel_command(installed: Installed, kernel_test: Path) -> list[str]:
    return [
        str(installed.prefix / "bin" / "python"),
        str(kernel_test),
        "--gpu-only",
        "--cuda",
        installed.cuda or "None",
    ]
