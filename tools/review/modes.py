"""``python -m tools review request|merge|why``: the review commands that print to the
console (verify.py, report.py and publish.py hold the others).  Each reads a batch folder or
its log_files.zip alike (upload.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path

from tools.foundation.errors import ProblemsFound, UserError
from tools.foundation.log import Console
from tools.localbuild.batch import lock
from tools.localbuild.batch.record import DONE, SKIPPED
from tools.localbuild.records import artifacts as art
from tools.localbuild.records import ci_engine
from tools.localbuild.records.configs import discover, labels
from tools.localbuild.records.provenance import dirty_warning
from tools.review import cfep3
from tools.review.merge import merge
from tools.review.upload import SUMMARY, ZIP, open_batch


def request(
    root: Path, channel: str, folder: Path, console: Console, *, allow_other_engine: bool
) -> None:
    """The admin-requests cfep3_copy entry for the batch in ``folder``, on stdout."""
    cfep3.check_channel(channel)
    with open_batch(folder, command="review request") as batch:
        sums = cfep3.read_sums(batch.sums)
        summary = art.read_summary(batch.view)
    label = cfep3.target_label(root, sums, summary)
    found = other_engine(root, "review request", summary, allow_other_engine)
    comment = [
        *ci_engine.override_comment(found, ci_engine.of_feedstock(root)),
        *cfep3.provenance_comment(summary),
    ]
    console.out.write(cfep3.request_yaml(channel, sums, label=label, comment=comment))
    warning = dirty_warning(summary)
    if warning:
        console.note(f"{warning}; a copy request for it should not be approved")


def other_engine(
    root: Path, command: str, records: Mapping[str, Mapping[str, object]], allowed: bool
) -> dict[str, str]:
    """The built configs of ``records`` that another engine or recipe than conda-forge's CI
    built: refused in one line, unless --allow-other-engine lets them through (returned)."""
    ci = ci_engine.of_feedstock(root)
    found = ci_engine.foreign(records, ci)
    if found and not allowed:
        label_of = labels(root, list(found))
        raise ProblemsFound(ci_engine.refusal(command, found, ci, label_of))
    return found


def merge_folders(
    root: Path,
    folders: Sequence[Path],
    console: Console,
    *,
    request_channel: str | None,
    allow_other_engine: bool,
) -> int:
    if request_channel is not None:
        cfep3.check_channel(request_channel)

    def check(records: Mapping[str, Mapping[str, object]]) -> None:
        found = other_engine(root, "review merge", records, allow_other_engine)
        if found:
            console.note(f"{ci_engine.OVERRIDE}: merging {len(found)} config(s) built another way")

    artifacts = root / "build_artifacts"
    with ExitStack() as stack:
        views = [
            stack.enter_context(open_batch(f, command="review merge", needs=SUMMARY)).view
            for f in folders
        ]
        with lock.exclusive(artifacts):  # a batch building there would mix with it
            result = merge(root, views, say=console.note, check=check)
    warning = dirty_warning(result.configs)
    tail = f"; {warning}" if warning else ""
    statuses = [str(r.get("status")) for r in result.configs.values()]
    counts = ", ".join(f"{statuses.count(s)} {s}" for s in dict.fromkeys(statuses))
    console.note(
        f"merged {result.sources} folder(s) into build_artifacts/: {len(statuses)} configs "
        f"({counts or 'none'}), {result.copied_packages} package(s) copied{tail}",
    )
    console.note(
        f"summary, SHA256SUMS and log_files.zip written in {result.files.summary.parent}{tail}"
    )
    if request_channel is not None:
        request(root, request_channel, artifacts, console, allow_other_engine=allow_other_engine)
    if result.failed:
        raise ProblemsFound(
            f"{len(result.failed)} config(s) not built on any machine: {', '.join(result.failed)}"
        )
    return 0


def why(root: Path, selector: str, given: Path, console: Console) -> int:
    """The first real error of the config's log (why.py), in ``given``: a batch folder (or its
    log_files.zip), a folder holding only the config's log (as an interrupted run leaves
    build_artifacts/), or the log file itself (as one downloaded from a CI job). Where there is
    a summary.json, the batch's record of the config comes first, as for every review command."""
    from tools.review import why

    if given.is_file() and given.suffix != ".zip":
        config = _config_of_log(root, selector, given)
        title = f"{labels(root, [config]).get(config, config)} (a log without summary.json)"
        console.say(why.describe(why.read_first_error(given), title=title, log=given))
        return 0
    with open_batch(given, command="review why", needs=()) as batch:
        previous = art.read_summary(batch.view) if batch.summary.is_file() else None
        logs = [p.name.removesuffix("-log.txt") for p in art.log_files(batch.view)]
        config, label_of = _select(root, selector, [*(previous or {}), *logs])
        log = art.log_path(batch.view, config)
        shown = art.log_path(batch.packages_dir, config)  # the name the person knows it by
        if previous is None:
            if not log.is_file():
                raise UserError(
                    f"review why {given}: no summary.json and no {log.name}, neither there nor "
                    f"in {ZIP}; give the config's log or the whole build_artifacts upload"
                )
            title = f"{label_of.get(config, config)} (a log without summary.json)"
            console.say(why.describe(why.read_first_error(log), title=title, log=shown))
            return 0
        record = previous.get(config, {})
        title = f"{label_of.get(config, config)} ({record.get('status', 'unknown')})"
        if not log.is_file() and record.get("note"):  # failed before it started
            console.say(f"{title}: {record['note']}")
            return 0
        if not log.is_file():
            raise UserError(
                f"{config}: no log {log.name} in {given}; it was not built there "
                "(`python -m tools review merge` brings other machines' logs)"
            )
        if record.get("status") in (DONE, SKIPPED):
            console.say(f"{title}: built; nothing failed. log: {shown}")
            return 0
        console.say(why.describe(why.read_first_error(log), title=title, log=shown))
    return 0


def _select(root: Path, selector: str, found: Sequence[str]) -> tuple[str, dict[str, str]]:
    """The config ``selector`` names among the feedstock's and those ``found`` in a batch."""
    from tools.foundation import selection

    available = sorted({*discover(root), *found})
    label_of = labels(root, available)
    return selection.select_one(available, selector, labels=label_of), label_of


def _config_of_log(root: Path, selector: str, log: Path) -> str:
    """The config ``selector`` names, for a log file handed over alone. A log named as
    build-locally.py names them (``<config>-log.txt``) must be that config's."""
    named = log.name.removesuffix("-log.txt") if log.name.endswith("-log.txt") else None
    config, _ = _select(root, selector, [named] if named else [])
    if named is not None and named != config and named in discover(root):
        raise UserError(
            f"review why {log}: the log of {named}, not of {config}; give that config or "
            "the config's own log"
        )
    return config
