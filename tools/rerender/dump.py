"""Each job's config as conda-smithy dumps it: keys sorted, lists in block style, strings that
YAML 1.1 would read as numbers or booleans single-quoted; and the README beside them."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver
from ruamel.yaml.scalarstring import SingleQuotedScalarString

from tools.smithy.jobs import CiJob

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


def files_of(jobs: Sequence[CiJob]) -> dict[str, str]:
    files = {f"{job.name}.yaml": dump_config(job.config) for job in jobs}
    files["README"] = README_TEXT
    return files
