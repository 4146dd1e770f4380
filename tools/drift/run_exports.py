"""Run requirements that conda-forge satisfies through host packages' run_exports.

A PyTorch wheel requires NVIDIA's libraries as wheels (``nvidia-nvshmem-cu13``) or as NVIDIA's
``cuda-toolkit[cublas,cudart,...]`` metapackage.  A conda-forge recipe never lists their runtime
packages in ``run``: it puts the ``-dev`` package in ``host``, and that package's run_exports
add the runtime library (and its ``cuda-version`` bound) to ``run``.  So for these claims an
absent run requirement is not the finding; a component no host package provides is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement

from tools.drift.model import RecipeConfig, Scope, Status, UpstreamClaim
from tools.drift.names import canonical, conda_names, nvidia_library, toolkit_component


@dataclass(frozen=True)
class Component:
    """One library the claim asks for, and the conda-forge packages that provide it."""

    library: str  # nvshmem, cublas
    names: tuple[str, ...]  # conda-forge names, any of which in host provides it

    @property
    def host_package(self) -> str:
        """The package to add to host: the ``-dev`` one, which carries the run_exports."""
        return next((n for n in self.names if n.endswith(("-dev", "-devel"))), self.names[0])


def components(claim: UpstreamClaim) -> tuple[Component, ...]:
    """What a run claim needs from host, or ``()`` when it is an ordinary run requirement."""
    if claim.scope is not Scope.RUN:
        return ()
    library = nvidia_library(claim.package)
    if library is not None:
        return (Component(library, conda_names(claim.package)),)
    if canonical(claim.package) != "cuda-toolkit":
        return ()
    try:
        extras = sorted(Requirement(claim.text).extras)
    except InvalidRequirement:
        return ()
    found = (toolkit_component(extra) for extra in extras)
    return tuple(Component(lib, names) for lib, names in (f for f in found if f))


def judge(
    parts: Sequence[Component],
    configs: Sequence[RecipeConfig],
    host: Mapping[str, set[str]],
) -> tuple[Status, str]:
    """``host``: per configuration name, the canonical names of every host requirement."""
    missing: dict[str, list[str]] = {}  # host package -> configurations lacking it
    providers: set[str] = set()  # the host packages that provide a component
    for config in configs:
        names = host.get(config.name, set())
        for part in parts:
            found = [n for n in part.names if canonical(n) in names]
            providers.update(found[:1])
            if not found:
                missing.setdefault(part.host_package, []).append(config.name)
    if not missing:
        return (
            Status.UNKNOWN,
            f"comes from the run_exports of host {', '.join(sorted(providers))}; their pins "
            "decide the run version (not resolved here)",
        )
    lacking = ", ".join(
        name + ("" if len(where) == len(configs) else f" (in {len(where)} of {len(configs)})")
        for name, where in sorted(missing.items())
    )
    libraries = ", ".join(sorted({p.library for p in parts if p.host_package in missing}))
    return (
        Status.LOOSER,
        f"no {lacking} in host: upstream links {libraries}, and on conda-forge the run "
        "requirement comes from the host package's run_exports",
    )
