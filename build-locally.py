#!/usr/bin/env python3
"""Build this feedstock's .ci_support configs locally, one or many (CFEP-03).

Same command line as conda-smithy's build-locally.py (optional config,
--filter, --debug, --output-id), plus batch builds with resume, logs,
checksums and a summary: ``python build-locally.py --help``.
The logic lives in tools/localbuild/; this file stays because conda-forge
maintainers expect it here (conda-forge.yml's skip_render keeps it ours).
"""

import sys
from pathlib import Path

try:
    import ruamel.yaml  # noqa: F401  (reads the .ci_support configs)
except ImportError:
    print(
        "error: build-locally.py needs ruamel.yaml: `python -m pip install -r requirements.txt`",
        file=sys.stderr,
    )
    sys.exit(2)

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from tools.localbuild.cli import main  # noqa: E402  (importable only after the sys.path line)

if __name__ == "__main__":
    sys.exit(main(root=ROOT))
