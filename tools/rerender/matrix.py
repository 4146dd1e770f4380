"""Compute, write and check ``.ci_support/*.yaml`` the way ``conda smithy rerender`` does.

Per platform of conda-forge.yml: combine conda-build's defaults, the pinning's
conda_build_config.yaml and the recipe's; apply the CFEP-9 migrations; render the recipe
(``tools.recipe``); collapse the outputs' variants into CI jobs (``tools.smithy.jobs``);
dump each job's config in conda-smithy's YAML layout (keys sorted, lists in block style,
strings that YAML 1.1 would read as numbers or booleans single-quoted).

Files are replaced atomically (temporary file + rename); a config that is no longer
produced is removed only by ``--write``, and only if it is one of ours (``.yaml`` directly
under ``.ci_support``).
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scalarstring import SingleQuotedScalarString

from tools import diskcache
from tools.errors import UserError
from tools.files import read_user_file, replace_files
from tools.smithy.forge import RATTLER_BUILD, read_forge_settings
from tools.smithy.forge_yml import load_forge_yml
from tools.smithy.jobs import CiJob, collapse, finalize_config, job_name, prune_spec
from tools.smithy.migrations import (
    MigrationPlan,
    apply_migrations,
    plan_migrations,
    read_migration_file,
)
from tools.smithy.overrides import Override, overrides
from tools.smithy.overrides import messages as override_messages

README_TEXT = """\
These files are generated: each YAML file here is one CI job's variant configuration,
computed from recipe/conda_build_config.yaml, conda-forge's global pinning and the
migrations in .ci_support/migrations/.  Do not edit them by hand.  To change the build
matrix, edit recipe/conda_build_config.yaml (or the recipe) and regenerate them with
`python -m tools matrix --pinning PATH --write`, PATH being conda-forge's pinning
(docs/matrix.md, "conda-forge's pinning", says where to get it), or with
`conda smithy rerender`.  If a configuration you expect is missing, check that the recipe
does not skip it and that its dependencies are satisfiable.
"""


# -- pinning ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pinning:
    cbc: Path
    migrations_dir: Path | None


# Where a newcomer without conda gets conda-forge's pinning
# (docs/matrix.md, "conda-forge's pinning").
GET_PINNING = (
    "without conda, `git clone --depth 1 "
    "https://github.com/conda-forge/conda-forge-pinning-feedstock` and pass "
    "--pinning conda-forge-pinning-feedstock/recipe; without internet, make that clone on a "
    "machine that has it and copy the folder here "
    '(docs/build-locally.md, "Air-gapped builds")'
)

# conda-forge's conda_build_config.yaml is about 60 kB; anything this large is another file.
_PINNING_MAX_BYTES = 16 * 1024 * 1024


def locate_pinning(value: str | None, environ: Mapping[str, str] | None = None) -> Pinning:
    """``--pinning``: a cbc file, a directory shaped like the installed conda-forge-pinning
    package (``conda_build_config.yaml`` + ``share/conda-forge/migrations``), or a clone of
    conda-forge-pinning-feedstock (its ``recipe/``, or the clone itself); else the installed
    conda-forge-pinning of the active conda environment."""
    env = os.environ if environ is None else environ
    if value:
        path = Path(value)
        if path.is_dir():
            inside = path / "conda_build_config.yaml"
            feedstock = path / "recipe" / "conda_build_config.yaml"
            path = feedstock if not inside.is_file() and feedstock.is_file() else inside
        if not path.is_file():
            raise UserError(
                f"{value}: no conda_build_config.yaml there; pass the pinning's file or "
                f"directory ({GET_PINNING})"
            )
    else:
        prefix = env.get("CONDA_PREFIX")
        path = Path(prefix) / "conda_build_config.yaml" if prefix else None
        if path is None or not path.is_file():
            raise UserError(
                "no conda-forge pinning found (no active conda environment with "
                "conda-forge-pinning installed); pass --pinning PATH; " + GET_PINNING
            )
    for migrations in (
        path.parent / "share" / "conda-forge" / "migrations",  # the installed package
        path.parent / "migrations",  # conda-forge-pinning-feedstock's recipe/
    ):
        if migrations.is_dir():
            return Pinning(path, migrations)
    return Pinning(path, None)


def read_pinning(pinning: Pinning) -> str:
    """The pinning's text; a binary or huge file (a wheel given by mistake) is refused from
    its first bytes or its size, never read whole."""
    return read_user_file(pinning.cbc, max_bytes=_PINNING_MAX_BYTES)


# A truncated pinning is named as such, before conda-build's defaults fill its gaps and a later
# step fails on a value it never set (``python: 3.11``, the running Python's).
_INCOMPLETE = "; the pinning looks incomplete (truncated?): use a complete copy; " + GET_PINNING


def check_pinning_zip_keys(source: str, pinning: Mapping[str, Any]) -> None:
    """A gap in a truncated pinning: a key its own ``zip_keys`` names but the file does not set."""
    for group in pinning.get("zip_keys") or []:
        for key in group if isinstance(group, list) else [group]:
            if key not in pinning:
                raise UserError(
                    f"{source}: zip_keys names {key!r}, which the file never sets" + _INCOMPLETE
                )


def check_pinning_has_migrated_keys(
    source: str,
    pinning: Mapping[str, Any],
    recipe: Mapping[str, Any],
    migrations: Sequence[tuple[str, Mapping[str, Any]]],
) -> None:
    """A gap in a truncated pinning: a key that an applied migration orders but neither the
    pinning nor the recipe sets."""
    for migration, spec in migrations:
        migrator = spec.get("__migrator") or {}
        ordering = migrator.get("ordering") if isinstance(migrator, Mapping) else None
        for key in ordering or {}:
            if key in spec and key not in pinning and key not in recipe:
                raise UserError(
                    f"{source}: no {key!r}, which the migration {migration} orders" + _INCOMPLETE
                )


# -- the matrix ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Matrix:
    jobs: tuple[CiJob, ...]
    migrations: MigrationPlan
    warnings: tuple[str, ...] = ()  # settings that do not do what they say (printed by matrix)
    # NAME.yaml (and README) -> the text .ci_support should hold: dumped once, kept on disk
    files: Mapping[str, str] = field(default_factory=dict)


def compute_matrix(root: Path, recipe_dir: Path, pinning: Pinning) -> Matrix:
    """The CI jobs, kept on disk (tools/diskcache.py) under everything they are computed
    from: conda-forge.yml, the recipe folder, the pinning and its migrations, the feedstock's
    own migrations, and the toolkit."""
    forge_data = load_forge_yml(root)
    forge = read_forge_settings(forge_data)
    if forge.build_tool == RATTLER_BUILD:
        # conda-smithy's rerender of a v1 recipe takes the keys each output uses from
        # rattler-build's render (rattler-build-conda-compat), not from conda-build's rules
        # reimplemented here: refused before anything is written (docs/rattler-build.md)
        raise UserError(
            f"{root / 'conda-forge.yml'}: conda_build_tool: rattler-build; matrix follows "
            "conda-build's rules for meta.yaml, while conda-smithy asks rattler-build which "
            "variant keys each output of recipe.yaml uses: regenerate .ci_support with "
            "`conda smithy rerender`"
        )
    pinning_text = read_pinning(pinning)  # refuses a binary or huge file before hashing it
    key = (
        diskcache.Key("matrix")
        .add("root", str(root))
        .add_files("forge", [root / "conda-forge.yml"])
        .add_tree("recipe", recipe_dir)
        .add("pinning-path", str(pinning.cbc))
        .add("pinning", pinning_text)
        .add_tree("pinning-migrations", pinning.migrations_dir or root / "-")
        .add_tree("migrations", root / ".ci_support" / "migrations")
    )
    matrix = diskcache.load(key)
    if matrix is None:
        matrix = _compute_matrix(root, recipe_dir, pinning, pinning_text, forge_data)
        diskcache.store(key, matrix)
    return matrix


def _compute_matrix(
    root: Path, recipe_dir: Path, pinning: Pinning, pinning_text: str, forge_data: Mapping[str, Any]
) -> Matrix:
    # the recipe model is imported only when the matrix is not on disk yet
    from tools.recipe.evaluate import Target
    from tools.recipe.model import render as render_variants
    from tools.recipe.namespace import known_names
    from tools.recipe.selectors import top_level_keys, unknown_selector_names
    from tools.recipe.text import uses_cuda_compiler
    from tools.recipe.variant_config import (
        combine_specs,
        default_variant,
        explode,
        parse_cbc,
        validate_spec,
    )
    from tools.render_meta import load_recipe_source

    forge = read_forge_settings(forge_data)
    source = load_recipe_source(recipe_dir)
    feedstock_name = _feedstock_name(root, forge_data, source.meta_text)
    cbc_path = recipe_dir / "conda_build_config.yaml"
    recipe_cbc = read_user_file(cbc_path) if cbc_path.is_file() else None
    local = [
        read_migration_file(p) for p in sorted((root / ".ci_support" / "migrations").glob("*.yaml"))
    ]
    upstream = (
        [read_migration_file(p) for p in sorted(pinning.migrations_dir.glob("*.yaml"))]
        if pinning.migrations_dir
        else None
    )
    plan = plan_migrations(local, upstream)
    cuda = uses_cuda_compiler(source.meta_text)
    # what selectors may read: every platform's variant keys, and the cbc files' keys
    known = set(top_level_keys(pinning_text) | top_level_keys(recipe_cbc or ""))
    jobs: list[CiJob] = []
    ignored: dict[str, tuple[Override, list[str]]] = {}  # recipe cbc keys the jobs do not get
    for plat in forge.platforms():
        subdir = plat.replace("_", "-")
        build = forge.build_of(plat).replace("_", "-")
        environ = {"BUILD_PLATFORM": build, "CONFIG_VERSION": "1"}
        if plat.startswith("linux") and forge.os_version.get(plat):
            environ["DEFAULT_LINUX_VERSION"] = forge.os_version[plat]
        if cuda:
            environ["CF_CUDA_ENABLED"] = "True"
        specs: list[tuple[str, Mapping[str, Any]]] = [("defaults", default_variant(subdir))]
        specs.append(
            (
                str(pinning.cbc),
                parse_cbc(pinning_text, subdir, source=str(pinning.cbc), environ=environ),
            )
        )
        if recipe_cbc is not None:
            specs.append(
                (
                    str(cbc_path),
                    parse_cbc(recipe_cbc, subdir, source=str(cbc_path), environ=environ),
                )
            )
        check_pinning_zip_keys(str(pinning.cbc), specs[1][1])
        for name, spec in specs:
            validate_spec(name, spec)
        combined = combine_specs(specs)
        migrations = [
            (str(p), parse_cbc(read_user_file(p), subdir, source=str(p), environ=environ))
            for p in plan.apply
        ]
        recipe_spec = specs[2][1] if len(specs) > 2 else {}
        check_pinning_has_migrated_keys(str(pinning.cbc), specs[1][1], recipe_spec, migrations)
        migrated = apply_migrations(combined, migrations)
        for override in overrides(recipe_spec, combined, migrations, migrated):
            ignored.setdefault(override.key, (override, []))[1].append(subdir)
        # conda-smithy renders with the migrated spec only (the recipe cbc is moved aside),
        # on top of conda-build's defaults again.
        final = combine_specs([("defaults", default_variant(subdir)), ("migrated", migrated)])
        final = prune_spec(final, [source.meta_text, *(body for _, body in source.scripts)])
        variant_list = explode(final)
        known |= known_names(subdir, variant_list)
        if not variant_list:
            continue
        outputs = render_variants(source, variant_list, Target(subdir, subdir, environ))
        outputs = [o for o in outputs if not o.skip and not o.noarch]
        if not outputs:
            continue
        configs, loop_vars = collapse(
            outputs, variant_list, github_actions=forge.github_actions, recipe_text=source.meta_text
        )
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
    ordered = tuple(sorted(jobs, key=lambda j: j.name))
    unknown = unknown_selector_names(source.meta_text, known)
    warnings = (
        *forge.ignored_provider_lines(),
        *(u.message(source.path) for u in unknown),
        *override_messages(cbc_path, recipe_cbc or "", ignored),
    )
    return Matrix(ordered, plan, warnings, _files_of(ordered))


def _feedstock_name(root: Path, forge_data: Mapping[str, Any], meta_text: str) -> str:
    """extra.feedstock-name, else the package name -- what conda-smithy names the repo after."""
    import re

    match = re.search(r"(?m)^\s*feedstock-name:\s*['\"]?([\w.-]+)", meta_text)
    if match:
        return match.group(1)
    match = re.search(r"(?ms)^package:\s*\n\s+name:\s*['\"]?([\w.{}\s-]+?)['\"]?\s*$", meta_text)
    name = match.group(1).strip() if match else root.name.removesuffix("-feedstock")
    return name if "{" not in name else root.name.removesuffix("-feedstock")


# -- YAML layout -----------------------------------------------------------------------------

_RESOLVER_11 = VersionedResolver(version=(1, 1))


def _needs_quotes(value: str) -> bool:
    """Would a YAML 1.1 reader (PyYAML, which conda-smithy dumps with) see a non-string?"""
    tag = _RESOLVER_11.resolve(ScalarNode, value, (True, False))
    return tag != "tag:yaml.org,2002:str"


def _scalar(value: Any) -> Any:
    if isinstance(value, str):
        if value in ("true", "false"):
            # conda-build turned YAML booleans into strings; conda-smithy turns them back.
            return value == "true"
        return SingleQuotedScalarString(value) if _needs_quotes(value) else value
    return value


def _prepare(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _prepare(x) for k, x in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_prepare(x) for x in value]
    return _scalar(value)


def dump_config(config: Mapping[str, Any]) -> str:
    """One job's config in conda-smithy's layout (sorted keys, block lists)."""
    ordered = {k: _prepare(config[k]) for k in sorted(config)}
    yaml = YAML(typ="rt", pure=True)
    yaml.default_flow_style = False
    yaml.indent(mapping=2, sequence=2, offset=0)
    yaml.width = 80
    stream = io.StringIO()
    yaml.dump(ordered, stream)
    return stream.getvalue()


# -- files -----------------------------------------------------------------------------------


def expected_files(matrix: Matrix) -> dict[str, str]:
    return dict(matrix.files) if matrix.files else _files_of(matrix.jobs)


def _files_of(jobs: Sequence[CiJob]) -> dict[str, str]:
    files = {f"{job.name}.yaml": dump_config(job.config) for job in jobs}
    files["README"] = README_TEXT
    return files


@dataclass(frozen=True)
class Difference:
    path: str
    kind: str  # "missing" | "stale" | "changed" | "closed-migration" | "readme-table"
    why: str = ""  # printed on the next line, indented (why a closed migration goes)

    def __str__(self) -> str:
        if self.kind == "readme-table":
            return f"changed: {self.path} (CI-job table between the matrix-table markers)"
        return f"{self.kind}: {self.path}" + (f"\n    {self.why}" if self.why else "")

    @property
    def action(self) -> str:
        """What ``write`` did about this difference: added, updated or removed."""
        return _WRITTEN[self.kind][0]

    def written(self) -> str:
        """What ``write`` did about this difference, in the words of a file listing."""
        note = _WRITTEN[self.kind][1]
        return f"{self.action}: {self.path}{note}" + (f"\n    {self.why}" if self.why else "")


# A difference --check reports, as the change --write made to resolve it.
_WRITTEN = {
    "missing": ("added", ""),
    "changed": ("updated", ""),
    "stale": ("removed", ""),
    "closed-migration": ("removed", " (a closed migration)"),
}


def differences(folder: Path, matrix: Matrix) -> list[Difference]:
    expected = expected_files(matrix)
    found = {p.name for p in folder.glob("*.yaml")} | (
        {"README"} if (folder / "README").exists() else set()
    )
    diffs = []
    for name, content in sorted(expected.items()):
        path = folder / name
        if name not in found:
            diffs.append(Difference(f".ci_support/{name}", "missing"))
        elif path.read_text(encoding="utf-8") != content:
            diffs.append(Difference(f".ci_support/{name}", "changed"))
    for name in sorted(found - set(expected)):
        diffs.append(Difference(f".ci_support/{name}", "stale"))
    for path in matrix.migrations.closed:
        diffs.append(
            Difference(
                f".ci_support/migrations/{path.name}",
                "closed-migration",
                matrix.migrations.reason(path),
            )
        )
    return diffs


def planned(folder: Path, matrix: Matrix) -> tuple[list[Difference], dict[Path, str | None]]:
    """What bringing ``folder`` up to date takes: the differences, and each file's new text
    (``None``: delete it), for :func:`tools.files.replace_files` to write with the other
    files of the same change, all or none."""
    diffs = differences(folder, matrix)
    expected = expected_files(matrix)
    contents: dict[Path, str | None] = {}
    for diff in diffs:
        name = Path(diff.path).name
        if diff.kind in ("missing", "changed"):
            contents[folder / name] = expected[name]
        elif diff.kind == "stale":
            contents[folder / name] = None
        elif diff.kind == "closed-migration":
            contents[folder / "migrations" / name] = None
    return diffs, contents


def write(folder: Path, matrix: Matrix) -> list[Difference]:
    """Bring ``folder`` up to date, every file or none; return what changed."""
    diffs, contents = planned(folder, matrix)
    replace_files(contents)
    return diffs


def unified_diff(folder: Path, matrix: Matrix, names: Sequence[str]) -> str:
    import difflib

    expected = expected_files(matrix)
    chunks = []
    for name in names:
        old = (
            (folder / name).read_text(encoding="utf-8").splitlines(keepends=True)
            if (folder / name).exists()
            else []
        )
        new = expected.get(name, "").splitlines(keepends=True)
        chunks.extend(
            difflib.unified_diff(old, new, f"a/.ci_support/{name}", f"b/.ci_support/{name}")
        )
    return "".join(chunks)
