"""summary.json's shape, as typed records: what ``artifacts.summary_document`` and
``ConfigResult.to_json`` write, and what ``build-locally.py --help`` prints about it
(:func:`describe`, so the help cannot drift from the file).

A field's ``Annotated`` note is either :class:`Values` (the words it holds) or a plain
string (what it means); the help prints them as ``"key": a|b`` and ``"key" (meaning)``.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict, get_args, get_origin, get_type_hints, is_typeddict


class Values(str):
    """The words a field holds, printed after its key: ``"status": done|failed``."""


class FileRecord(TypedDict):
    path: str  # relative to build_artifacts/, e.g. linux-64/libtorch-....conda
    sha256: str
    size: int


class PackageRecord(FileRecord, total=False):
    """A package; the build writes the required keys, ``review sign`` adds ``signature``."""

    signature: Annotated[FileRecord, "its <package>.sigs, added by review sign"]


class CcacheRecord(TypedDict):
    hits: int
    misses: int
    hit_rate: float | None


class ProvenanceRecord(TypedDict):
    """Where a config's packages came from (tools/localbuild/records/provenance.py)."""

    commit: str | None
    dirty: bool
    diff_sha256: str | None
    recipe_version: str | None
    recipe_build_number: Annotated[int | None, "the recipe's"]
    build_number: Annotated[int | None, "this config's, variant offsets included"]
    ci_support_sha256: str | None
    toolkit: str
    engine: str | None
    image: str | None
    machine: str
    recipe_file: str | None
    ci_engine: Annotated[bool | None, "built as conda-forge's CI builds it"]
    channels: list[str] | None
    tests: Annotated[str | None, "run, or skipped: why"]


class ConfigRecord(TypedDict):
    """One config's record (tools/localbuild/batch/record.py's ``ConfigResult``)."""

    status: Annotated[str, Values("done|failed|interrupted|skipped|pending")]
    reason: Annotated[str | None, "why a skipped config was not built"]
    earlier_run: Annotated[bool, "done by an earlier run, kept by a resume"]
    machine: str | None
    started: str | None
    duration_seconds: float | None
    returncode: int | None
    log: str | None
    packages: list[PackageRecord]
    ccache: CcacheRecord | None
    note: str
    provenance: ProvenanceRecord | None


class SummaryRecord(TypedDict):
    """The whole file, the same for a local batch and for ``review merge``."""

    version: Annotated[int, Values("1")]
    feedstock: str
    started: str
    finished: str
    this_run: list[str]
    configs: Annotated[dict[str, ConfigRecord], "every config of the matrix has a record"]


def describe(record: Any = SummaryRecord) -> str:
    """The record as one line of JSON-like text: keys, their words or meanings, nesting."""
    hints = get_type_hints(record, include_extras=True)
    return "{" + ", ".join(_field(key, hint) for key, hint in hints.items()) + "}"


def _field(key: str, hint: Any) -> str:
    note = None
    if get_origin(hint) is Annotated:
        hint, note = get_args(hint)[0], get_args(hint)[1]
    if isinstance(note, Values):
        return f'"{key}": {note}'
    shape = _shape(hint)
    text = f'"{key}"' + (f": {shape}" if shape else "")
    return text + (f" ({note})" if note else "")


def _shape(hint: Any) -> str:
    """The nested part of a field: ``{...}``, ``[{...}]``, ``{<config>: {...}}``, ``or null``."""
    args = [a for a in get_args(hint) if a is not type(None)]
    nullable = len(args) < len(get_args(hint))
    if nullable and len(args) == 1:
        inner = _shape(args[0])
        return f"{inner} or null" if inner else ""
    if is_typeddict(hint):
        return describe(hint)
    if get_origin(hint) is list and args and is_typeddict(args[0]):
        return f"[{describe(args[0])}]"
    if get_origin(hint) is dict and len(args) == 2 and is_typeddict(args[1]):
        return "{<config>: " + describe(args[1]) + ", ...}"
    return ""
