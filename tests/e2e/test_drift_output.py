"""What `python -m tools drift` prints, held to its golden file (tests/golden/drift/).

The command runs as a user runs it, in the torchlike miniature feedstock
(tests/fixtures/recipes/torchlike: its recipe and .ci_support, nothing a bump or a fork's
tailoring of this feedstock changes), against the drift fixtures' PyTorch source and channel
data (tests/fixtures/drift): no network. It asks git for the recipe at HEAD (a version bumped
without its sha256), so it is an end-to-end test. After an intended change:
`python -m pytest tests/e2e/test_drift_output.py --update-golden`, then review
`git diff tests/golden`.
"""

from __future__ import annotations

import os

from helpers.cli import REPO, run_tools
from helpers.golden import stable

FIXTURES = REPO / "tests" / "fixtures"
TORCHLIKE = FIXTURES / "recipes" / "torchlike"
DRIFT = FIXTURES / "drift"
CPU = "linux_64_blas_implgenericc_compiler_version15cuda_compiler_versionNonecxx_compiler_version15"


def test_drift_prints_upstreams_pins_beside_the_recipes_and_the_channels(golden) -> None:
    result = run_tools(
        *("drift", "--source", DRIFT / "pytorch-src", "--config", CPU, "--output", "toy"),
        *("--channel-data", DRIFT / "channeldata.json"),
        cwd=TORCHLIKE,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    golden.check("drift/torchlike.txt", stable(result.stdout, FIXTURES=FIXTURES))
