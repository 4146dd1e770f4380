"""The commands that read what batches left behind instead of building: --why, --merge,
--cfep3-request (--report lives in report.py)."""

from __future__ import annotations

from collections.abc import Mapping

from tools.errors import ProblemsFound, UserError
from tools.localbuild import artifacts as art
from tools.localbuild import ci_engine
from tools.localbuild.batch import lock
from tools.localbuild.batch.record import DONE, SKIPPED
from tools.localbuild.configs import discover, labels
from tools.localbuild.console import Console
from tools.localbuild.options import Options
from tools.localbuild.provenance import dirty_warning
from tools.localbuild.review import cfep3
from tools.localbuild.review.merge import merge


def cfep3_request(options: Options, console: Console) -> None:
    channel = options.cfep3_channel or ""
    cfep3.check_channel(channel)
    sums = cfep3.read_sums(options.artifacts / "SHA256SUMS")
    label = cfep3.target_label(options.root, sums)
    found = other_engine(options, "--cfep3-request", art.read_summary(options.artifacts))
    comment = [
        *ci_engine.override_comment(found, ci_engine.of_feedstock(options.root)),
        *cfep3.provenance_comment(options.root),
    ]
    console.out.write(cfep3.request_yaml(channel, sums, label=label, comment=comment))
    warning = dirty_warning(art.read_summary(options.artifacts))
    if warning:
        console.note(f"{warning}; a copy request for it should not be approved")


def other_engine(
    options: Options, command: str, records: Mapping[str, Mapping[str, object]]
) -> dict[str, str]:
    """The built configs of ``records`` that another engine or recipe than conda-forge's CI
    built: refused in one line, unless --allow-other-engine lets them through (returned)."""
    ci = ci_engine.of_feedstock(options.root)
    found = ci_engine.foreign(records, ci)
    if found and not options.allow_other_engine:
        label_of = labels(options.root, list(found))
        raise ProblemsFound(ci_engine.refusal(command, found, ci, label_of))
    return found


def merge_folders(options: Options, console: Console) -> int:
    if options.cfep3_channel is not None:
        cfep3.check_channel(options.cfep3_channel)

    def check(records: Mapping[str, Mapping[str, object]]) -> None:
        found = other_engine(options, "--merge", records)
        if found:
            console.note(f"{ci_engine.OVERRIDE}: merging {len(found)} config(s) built another way")

    with lock.exclusive(options.artifacts):  # a batch building there would mix with it
        result = merge(options.root, options.merge_dirs, say=console.note, check=check)
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
    if options.cfep3_channel is not None:
        cfep3_request(options, console)
    if result.failed:
        raise ProblemsFound(
            f"{len(result.failed)} config(s) not built on any machine: {', '.join(result.failed)}"
        )
    return 0


def why(options: Options, console: Console) -> int:
    """--why CONFIG: the first real error of the config's log (why.py)."""
    from tools import selection
    from tools.localbuild.review import why

    previous = art.read_summary(options.artifacts)
    available = sorted({*discover(options.root), *previous})
    label_of = labels(options.root, available)
    config = selection.select_one(available, options.why or "", labels=label_of)
    log = art.log_path(options.artifacts, config)
    record = previous.get(config, {})
    if not log.is_file() and record.get("note"):  # failed before it started (a damaged file)
        title = f"{label_of.get(config, config)} ({record.get('status', 'unknown')})"
        console.say(f"{title}: {record['note']}")
        return 0
    if not log.is_file():
        raise UserError(
            f"{config}: no log at {log.relative_to(options.root).as_posix()}; "
            "it was not built in this build_artifacts/ (--merge brings other machines' logs)"
        )
    status = str(record.get("status", "unknown"))
    title = f"{label_of.get(config, config)} ({status})"
    if status in (DONE, SKIPPED):
        console.say(f"{title}: built; nothing failed. log: {log}")
        return 0
    console.say(why.describe(why.read_first_error(log), title=title, log=log))
    return 0
