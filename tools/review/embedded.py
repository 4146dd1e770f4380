"""What a built package says about its own origin: the ``--extra-meta`` that build_steps.sh
hands the engine (``sha``, ``remote_url``, ``flow_run_id``).

conda-build merges ``--extra-meta KEY=VALUE`` into the ``extra`` section of the package's
``info/about.json``; rattler-build's ``--extra-meta`` lands in the same place.  So the
commit a package was built from is ``info/about.json`` -> ``extra`` -> ``sha``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

NOT_CHECKED = "not checked: `pip install -r requirements.txt` (conda-package-streaming)"


@dataclass(frozen=True)
class Embedded:
    commit: str | None  # None: the package records none
    error: str = ""  # why the package could not be read, if it could not


def read_embedded(path: Path) -> Embedded:
    """The commit ``path``'s info/about.json names; a package that cannot be read says why."""
    try:
        from conda_package_streaming.package_streaming import stream_conda_component
    except ImportError:  # build-locally runs on a bare Python; the reviewer's needs requirements
        return Embedded(None, NOT_CHECKED)
    try:
        with path.open("rb") as handle:
            for tar, member in stream_conda_component(path.name, handle, "info"):
                if member.name != "info/about.json":
                    continue
                data = tar.extractfile(member)
                about = json.loads(data.read().decode("utf-8")) if data else {}
                extra = about.get("extra") if isinstance(about, dict) else None
                sha = extra.get("sha") if isinstance(extra, dict) else None
                # run_docker_build.sh passes sha=unknown outside a git checkout
                return Embedded(str(sha) if sha and sha != "unknown" else None)
    except Exception as exc:  # a damaged archive raises whatever its reader does
        return Embedded(None, f"not a readable package ({type(exc).__name__}: {exc})"[:200])
    return Embedded(None)
