"""The per-setting report, as a table for people and JSON for programs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tools.emulate.runner import SettingResult


@dataclass(frozen=True)
class Report:
    arch: str
    rootfs: Path
    command: tuple[str, ...]
    results: tuple[SettingResult, ...]

    @property
    def passed(self) -> bool:
        return bool(self.results) and all(result.passed for result in self.results)


def _status(result: SettingResult) -> str:
    if result.passed:
        return "pass"
    if result.returncode is None:
        return "error"
    return f"fail ({result.returncode})"


def format_table(report: Report) -> str:
    rows = [("CPU SETTING", "RESULT", "CAPABILITY", "TIME")]
    rows += [(r.cpu, _status(r), r.capability or "-", f"{r.seconds:.1f}s") for r in report.results]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [f"emulate {report.arch} ({report.rootfs})"]
    lines += [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3]
        for row in rows
    ]
    for result in report.results:
        if result.passed:
            continue
        lines.append("")
        lines.append(f"--- {result.cpu}: {_status(result)}")
        lines.append(result.error or result.output_tail or "(no output)")
    failed = sum(not r.passed for r in report.results)
    lines.append("")
    lines.append(f"{len(report.results) - failed} passed, {failed} failed")
    return "\n".join(lines)


def _result_json(result: SettingResult) -> dict:
    return {
        "cpu": result.cpu,
        "passed": result.passed,
        "returncode": result.returncode,
        "capability": result.capability,
        "seconds": round(result.seconds, 2),
        "error": result.error,
        "output_tail": result.output_tail,
    }


def to_json(report: Report) -> str:
    return json.dumps(
        {
            "arch": report.arch,
            "rootfs": str(report.rootfs),
            "command": list(report.command),
            "passed": report.passed,
            "results": [_result_json(result) for result in report.results],
        },
        indent=2,
    )
