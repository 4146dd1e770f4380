"""What a matrix computation gives, whichever recipe it rendered: the CI jobs and their files,
the migrations plan, the warnings; and each platform's jobs as ``dump_subspace_config_files``
names and finalizes them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tools.smithy.forge import ForgeSettings
from tools.smithy.jobs import CiJob, finalize_config, job_name
from tools.smithy.migrations import MigrationPlan


@dataclass(frozen=True)
class Matrix:
    jobs: tuple[CiJob, ...]
    migrations: MigrationPlan
    warnings: tuple[str, ...] = ()  # settings that do not do what they say (printed by matrix)
    # NAME.yaml (and README) -> the text .ci_support should hold: dumped once, kept on disk
    files: Mapping[str, str] = field(default_factory=dict)


def ci_jobs(
    plat: str,
    build: str,
    configs: list[dict[str, Any]],
    loop_vars: set[str],
    feedstock_name: str,
    forge: ForgeSettings,
) -> list[CiJob]:
    """One platform's CI jobs as ``dump_subspace_config_files`` names and finalizes them."""
    jobs = []
    subdir = plat.replace("_", "-")
    for config in configs:
        names = job_name(plat, config, loop_vars, feedstock_name)
        final_config = finalize_config(config, build, forge.fallback_image)
        jobs.append(
            CiJob(
                names.name,
                names.short,
                final_config.get("target_platform", [subdir])[0],
                build,
                tuple(sorted(loop_vars)),
                final_config,
            )
        )
    return jobs
