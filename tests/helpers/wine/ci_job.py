"""`.scripts/run_win_build.bat`, the CI job's script, run by Wine's cmd in a feedstock whose
path holds a space and a ")", with stand-ins for what conda-forge's runner has installed."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from helpers.wine.machine import (
    DATA,
    REPO_ROOT,
    bridge,
    launcher_exe,
    require_wine,
    run_cmd,
    windows,
    wine_prefix,
)


def run_win_build(root: Path, config: Path, **env: str) -> tuple[int, str, list[dict]]:
    """.scripts/run_win_build.bat, unmodified, in a feedstock at ``root``/``FEEDSTOCK`` (a
    space and ``(x86)`` in its path, as under C:\\Program Files (x86)) holding the config,
    conda-forge.yml and LICENSE.txt, started from ``root``, not the feedstock: micromamba is
    in place (no download); activate.bat and run_conda_forge_build_setup.bat are the
    stand-ins in this folder; micromamba, conda, conda-build and upload_package record
    their command lines. Returns the status, the output and the records."""
    require_wine()
    launcher, prefix = launcher_exe(), wine_prefix()
    feedstock = root / FEEDSTOCK
    for rel in (".scripts/run_win_build.bat", "conda-forge.yml", "LICENSE.txt"):
        (feedstock / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / rel, feedstock / rel)
    (feedstock / ".ci_support").mkdir()
    shutil.copyfile(config, feedstock / ".ci_support" / config.name)
    (feedstock / "recipe").mkdir()
    miniforge = root / "Miniforge3"
    python = Path(sys.executable)
    bridge(root / "Miniforge3-micromamba", launcher, ["micromamba.exe"], python)
    tools = ["conda.exe", "conda-build.exe", "upload_package.exe"]
    bridge(miniforge / "Scripts", launcher, tools, python)
    for script in ("activate.bat", "run_conda_forge_build_setup.bat"):
        shutil.copyfile(DATA / script, miniforge / "Scripts" / script)
    system = root / "system32"
    bridge(system, launcher, ["findstr.exe"], python)
    records = root / "records.jsonl"
    records.touch()
    variables = {
        "CONFIG": config.stem,
        "MINIFORGE_HOME": windows(miniforge),
        "WINE_STANDIN_RECORD": str(records),
        **env,
    }
    script = root / "ci-job.bat"
    script.write_text(
        "".join(f'set "{k}={v}"\r\n' for k, v in variables.items())
        + f'set "PATH={windows(system)};%PATH%"\r\n'
        + f'call "{windows(feedstock / ".scripts" / "run_win_build.bat")}"\r\n'
    )
    returncode, log = run_cmd("ci-job.bat", root, prefix)
    lines = records.read_text().splitlines()
    return returncode, log, [json.loads(line) for line in lines]


#: The feedstock's folder under a test's root: a space and a ")" in its path.
FEEDSTOCK = Path("Program Files (x86)") / "the feedstock"
