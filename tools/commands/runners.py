"""``python -m tools runners``: where .github/workflows/build.yml builds and tests each config."""

from __future__ import annotations

import argparse

HELP = "show (or --json for the build workflow) which runner builds and which tests each config"

EPILOG = """\
RULES are PLATFORM=LABEL[,LABEL...] separated by spaces or ';', e.g.
`linux-64=self-hosted,linux,x64 win-*=self-hosted,windows`.  --labels keys are the
platform a config builds on (linux-aarch64 configs cross-compile on linux-64);
--gpu-labels keys are the platform its packages run on (Linux only).

--json prints one line: {"build": [{"config", "label", "short", "os", "build_platform",
"runs_on": [...], "hosted", "timeout", "docker_run_args", "tests": "here"|"gpu job",
"fell_back"}], "test_gpu": [{"config", "label", "short", "runs_on": [...], "timeout",
"docker_image"}], "note": str|null}.

--owner OWNER is the repository's owner (the workflow passes github.repository_owner):
outside the conda-forge organisation and without --labels, configs whose own
github_actions_labels name conda-forge's runners build on GitHub's hosted runners
instead ("fell_back"), since a fork has none of those runners and its jobs would queue
forever; "note" then says so, for the job summary.
"label" is the config's short label (`linux-64 cuda13.0 mkl`), the GitHub job's name.

exit status: 0 printed; 2 bad input (a RULES value, a --filter that matches no config).
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--labels",
        metavar="RULES",
        help="runner labels per build platform, overriding the configs' github_actions_labels",
    )
    parser.add_argument(
        "--gpu-labels",
        metavar="RULES",
        help="GPU runner labels per target platform: CUDA configs build without tests and "
        "are tested there",
    )
    parser.add_argument(
        "--filter", metavar="GLOB", help="only configs whose <name>.yaml or label matches"
    )
    parser.add_argument(
        "--run-id", metavar="ID", help="the workflow run's id (makes cirun labels unique per job)"
    )
    parser.add_argument(
        "--owner",
        metavar="OWNER",
        help="the repository's owner; outside conda-forge with no --labels, GitHub's hosted "
        "runners replace the configs' own labels",
    )
    parser.add_argument("--json", action="store_true", help="the workflow's matrices, one line")


def run(args: argparse.Namespace) -> int:
    import json

    from tools.foundation.repo import find_root
    from tools.foundation.selection import select_many
    from tools.localbuild.records.configs import discover, labels
    from tools.localbuild.schedule.facts import read_facts
    from tools.localbuild.schedule.runners import (
        CONDA_FORGE,
        ForgeCi,
        fallback_note,
        parse_rules,
        plan_jobs,
    )
    from tools.smithy.forge_yml import load_forge_yml

    root = find_root()
    available = discover(root)
    label_of = labels(root, available)
    names = select_many(available, (), filter_glob=args.filter, labels=label_of)
    rules = parse_rules(args.labels, "--labels")
    fallback = bool(args.owner) and args.owner != CONDA_FORGE and not rules
    builds, tests = plan_jobs(
        [read_facts(root / ".ci_support" / f"{name}.yaml") for name in names],
        ForgeCi.from_mapping(load_forge_yml(root)),
        labels=rules,
        gpu_labels=parse_rules(args.gpu_labels, "--gpu-labels"),
        run_id=args.run_id,
        label_of=label_of,
        fallback_hosted=fallback,
    )
    note = fallback_note(builds, args.owner or "") if fallback else None
    if args.json:
        document = {
            "build": [b.to_json() for b in builds],
            "test_gpu": [t.to_json() for t in tests],
            "note": note,
        }
        print(json.dumps(document, separators=(",", ":")))
        return 0
    gpu = {t.config: t for t in tests}
    for job in builds:
        where = ",".join(job.runs_on)
        kind = "hosted" if job.hosted else "self-hosted"
        tested = (
            f"tests on {','.join(gpu[job.config].runs_on)}" if job.config in gpu else "tests here"
        )
        print(
            f"{job.label}  {job.config}\n"
            f"    build on {where} ({kind}, {job.timeout_minutes} min), {tested}"
        )
    if note:
        print(f"note: {note}")
    return 0
