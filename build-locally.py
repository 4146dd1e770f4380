#!/usr/bin/env python3
"""Build this feedstock's .ci_support configs locally, one or many (CFEP-03).

Same command line as conda-smithy's build-locally.py (optional config,
--filter, --debug, --output-id), plus batch builds with resume, logs,
checksums and a summary: ``python build-locally.py --help``.
The logic lives in tools/build/; this file stays because conda-forge
maintainers expect it here (conda-forge.yml's skip_render keeps it ours).
"""

import sys
from pathlib import Path

if sys.version_info < (3, 10):
    sys.exit(f"error: build-locally.py needs Python 3.10 or newer, not {sys.version.split()[0]}")

try:
    import ruamel.yaml  # noqa: F401  (reads the .ci_support configs)
except ImportError:
    sys.exit("error: build-locally.py needs ruamel.yaml: `python -m pip install -r requirements.txt`")

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from tools.build.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(root=ROOT))
