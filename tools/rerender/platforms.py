"""Each platform's variant spec as conda-smithy hands it to the render (``_render_ci_provider``):
conda-build's defaults, the pinning (the exclusive config file) and the recipe's
conda_build_config.yaml combined (``get_package_combined_spec``), then for a v1 recipe its
``variants.yaml`` on top, then the CFEP-9 migrations (``migrate_combined_spec``). The same for
meta.yaml and recipe.yaml; what each recipe's render makes of the spec is in matrix.py and v1.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tools.foundation.files import read_user_file
from tools.rerender.pinning import (
    Pinning,
    check_pinning_has_migrated_keys,
    check_pinning_zip_keys,
)
from tools.smithy.forge import ForgeSettings
from tools.smithy.migrations import (
    MigrationPlan,
    apply_migrations,
    plan_migrations,
    read_migration_file,
)
from tools.smithy.overrides import Override, overrides
from tools.smithy.overrides import messages as override_messages


@dataclass(frozen=True)
class PlatformSpec:
    platform: str  # conda-forge.yml's name: linux_aarch64
    subdir: str  # the target: linux-aarch64
    build: str  # the platform conda-forge.yml builds it on: linux-64
    environ: Mapping[str, str]  # what conda-smithy exports before rendering
    migrated: dict[str, Any]  # the spec the render gets


@dataclass
class SpecInputs:
    """The files every platform's spec is computed from, read once."""

    root: Path
    recipe_dir: Path
    pinning: Pinning
    pinning_text: str
    cuda: bool  # the recipe calls compiler('cuda'): conda-smithy sets CF_CUDA_ENABLED
    variants_file: Path | None = None  # a v1 recipe's variants.yaml
    recipe_cbc: str | None = field(init=False)
    plan: MigrationPlan = field(init=False)
    ignored: dict[str, tuple[Override, list[str]]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        cbc = self.cbc_path
        self.recipe_cbc = read_user_file(cbc) if cbc.is_file() else None
        local = [
            read_migration_file(p)
            for p in sorted((self.root / ".ci_support" / "migrations").glob("*.yaml"))
        ]
        folder = self.pinning.migrations_dir
        upstream = (
            [read_migration_file(p) for p in sorted(folder.glob("*.yaml"))] if folder else None
        )
        self.plan = plan_migrations(local, upstream)

    @property
    def cbc_path(self) -> Path:
        return self.recipe_dir / "conda_build_config.yaml"

    def for_platform(self, forge: ForgeSettings, plat: str) -> PlatformSpec:
        from tools.recipe.variant_config import (
            combine_specs,
            default_variant,
            parse_cbc,
            validate_spec,
        )

        subdir = plat.replace("_", "-")
        build = forge.build_of(plat).replace("_", "-")
        environ = {"BUILD_PLATFORM": build, "CONFIG_VERSION": "1"}
        if plat.startswith("linux") and forge.os_version.get(plat):
            environ["DEFAULT_LINUX_VERSION"] = forge.os_version[plat]
        if self.cuda:
            environ["CF_CUDA_ENABLED"] = "True"
        cbc = str(self.pinning.cbc)
        pinning = parse_cbc(self.pinning_text, subdir, source=cbc, environ=environ)
        specs: list[tuple[str, Mapping[str, Any]]] = [
            ("defaults", default_variant(subdir)),
            (cbc, pinning),
        ]
        recipe_spec: Mapping[str, Any] = {}
        if self.recipe_cbc is not None:
            source = str(self.cbc_path)
            recipe_spec = parse_cbc(self.recipe_cbc, subdir, source=source, environ=environ)
            specs.append((source, recipe_spec))
        check_pinning_zip_keys(cbc, pinning)
        for name, spec in specs:
            validate_spec(name, spec)
        combined = combine_specs(specs)
        if self.variants_file is not None:
            combined = combine_specs(
                [("combined_spec", combined), ("variants.yaml", self._variants_yaml(subdir))]
            )
        migrations = [
            (str(p), parse_cbc(read_user_file(p), subdir, source=str(p), environ=environ))
            for p in self.plan.apply
        ]
        check_pinning_has_migrated_keys(cbc, pinning, recipe_spec, migrations)
        migrated = apply_migrations(combined, migrations)
        for override in overrides(recipe_spec, combined, migrations, migrated):
            self.ignored.setdefault(override.key, (override, []))[1].append(subdir)
        return PlatformSpec(plat, subdir, build, environ, migrated)

    def _variants_yaml(self, subdir: str) -> dict[str, Any]:
        """A v1 recipe's variants.yaml for ``subdir``: its ``if``/``then`` selectors evaluated
        by rattler-build's own loader (compat's ``parse_recipe_config_file`` evaluates the same
        selectors), every value a string, as conda-build's specs hold them."""
        from rattler_build import JinjaConfig, PlatformConfig, RattlerBuildError, VariantConfig

        from tools.foundation.errors import UserError
        from tools.render.v1 import one_line_error

        assert self.variants_file is not None
        platform = PlatformConfig(target_platform=subdir, build_platform=subdir)
        try:
            loaded = VariantConfig.from_files_with_context(
                [self.variants_file], JinjaConfig(platform=platform)
            )
        except RattlerBuildError as exc:
            raise UserError(one_line_error(self.variants_file, exc)) from None
        spec: dict[str, Any] = {k: [str(v) for v in vs] for k, vs in loaded.to_dict().items()}
        groups = loaded.zip_keys
        if groups:
            spec["zip_keys"] = [list(g) for g in groups]
        return spec

    def warnings(self) -> list[str]:
        """The recipe cbc keys the jobs do not get, one line each (tools/smithy/overrides.py)."""
        return override_messages(self.cbc_path, self.recipe_cbc or "", self.ignored)
