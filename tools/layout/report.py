"""What ``tools layout`` prints: each output's contents by top folder, then the problems."""

from __future__ import annotations

from collections import defaultdict

from tools.layout.replay import Replay
from tools.layout.wheel import Wheel


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _top(path: str) -> str:
    parts = path.split("/")
    if parts[0] == "site-packages":
        if len(parts) > 3 and parts[2] in ("lib", "include", "share", "bin"):
            return "/".join(parts[:3]) + "/"
        return "site-packages/torch/ (Python package)"
    if parts[0] == "Library":
        return "/".join(parts[:2]) + "/"
    return parts[0] + "/" if len(parts) > 1 else path


def render(wheel: Wheel, config: str, result: Replay, licences_checked: bool) -> str:
    lines = [f"layout: {wheel.path.name} as {wheel.platform} ({config})"]
    for output in sorted(result.contents):
        files = result.contents[output]
        lines.append(f"{output}: {len(files)} files, {_size(sum(files.values()))}")
        groups: dict[str, list[int]] = defaultdict(list)
        for path, size in files.items():
            groups[_top(path)].append(size)
        for top in sorted(groups):
            lines.append(f"  {top:<40} {len(groups[top]):>6} files {_size(sum(groups[top])):>10}")
    if result.links:
        lines.append(
            f"pytorch also links {len(result.links)} site-packages files to libtorch's "
            f"({_size(sum(result.links.values()))} not duplicated)"
        )
    for path, owner in sorted(result.left_to_host):
        lines.append(f"left to the host's {owner}: {path}")
    if not licences_checked:
        lines.append(
            f"licences: not checked (the recipe builds another release than {wheel.version})"
        )
    lines.extend(f"note: {note}" for note in result.notes)
    for problem in result.problems:
        lines.append(f"{problem.kind}: {problem.path}: {problem.detail}")
    return "\n".join(lines)
