"""``python -m tools matrix``: ``.ci_support/*.yaml`` computed, written and checked the way
``conda smithy rerender`` does (conda-smithy's semantics in tools/smithy, over the render of
tools/render). ``pinning`` finds conda-forge's pinning, ``matrix`` computes the CI jobs,
``dump`` writes each job's config in conda-smithy's layout, ``folder`` compares and writes
``.ci_support``. The names commands use are re-exported here."""

from tools.rerender.dump import README_TEXT, dump_config
from tools.rerender.folder import (
    Difference,
    differences,
    expected_files,
    planned,
    unified_diff,
    write,
)
from tools.rerender.jobs import Matrix
from tools.rerender.matrix import compute_matrix
from tools.rerender.pinning import GET_PINNING, Pinning, locate_pinning, read_pinning

__all__ = [
    "GET_PINNING",
    "README_TEXT",
    "Difference",
    "Matrix",
    "Pinning",
    "compute_matrix",
    "differences",
    "dump_config",
    "expected_files",
    "locate_pinning",
    "planned",
    "read_pinning",
    "unified_diff",
    "write",
]
