"""Reading input files with a one-line error, and writing files so that a reader,
or an interrupted run, never sees half of one."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tools.foundation.errors import UserError

# Enough to tell text from an archive or a binary (a wheel, a .conda, an ELF file) before the
# whole file is read: a NUL byte or invalid UTF-8 here refuses it at once.
_HEAD_BYTES = 8192


def read_user_file(path: Path, *, errors: str = "strict", max_bytes: int | None = None) -> str:
    """A UTF-8 file the user pointed at; unreadable is their error to fix.  ``errors`` is
    ``str.decode``'s (``"replace"`` for files we only search, such as an upstream tree's).

    In strict mode a binary file is refused from its first bytes, and a file larger than
    ``max_bytes`` from its size, so that a wrong path (a 190 MB wheel given as --pinning) is
    never read whole."""
    try:
        with path.open("rb") as stream:
            if errors == "strict":
                _refuse_binary(path, stream.read(_HEAD_BYTES))
                size = os.fstat(stream.fileno()).st_size
                if max_bytes is not None and size > max_bytes:
                    raise UserError(
                        f"{path}: {size} bytes, more than the {max_bytes} such a text file "
                        "can have; is it the right file?"
                    )
                stream.seek(0)
            data = stream.read()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _refuse_binary(path: Path, head: bytes) -> None:
    nul = head.find(b"\0")
    if nul >= 0:
        raise UserError(f"{path}: not a text file (NUL at byte {nul}); is it the right file?")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut by the end of the head is not an error.
        if exc.start < len(head) - 3:
            raise UserError(f"{path}: not UTF-8 text (byte {exc.start})") from None


@contextmanager
def atomic_replace(path: Path, *, mode: int | None = None) -> Iterator[Path]:
    """A temporary path beside ``path`` for the caller to write; when the block succeeds the
    file is flushed to disk and renamed over ``path``, when it fails it is removed.

    Without ``mode`` the file keeps the permissions of the file it replaces, and a new file
    gets what ``open()`` would give it (0666 less the umask), not mkstemp's private 0600.
    The temporary name is unique, so two writers never share one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _beside(path, ".tmp")
    try:
        yield tmp
        _seal(tmp, path, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _beside(path: Path, suffix: str) -> Path:
    """A new, empty file with a unique name in ``path``'s folder (two writers never share one)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(fd)
    return Path(name)


def _seal(tmp: Path, path: Path, mode: int | None) -> None:
    """Flush ``tmp`` to disk and give it ``mode`` (default: what ``path`` has or would get):
    the rename that follows must not reach the disk before the data does (a crash would leave
    an empty file under the real name)."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode if mode is not None else _mode_for(path))


def atomic_write_bytes(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` through :func:`atomic_replace`."""
    with atomic_replace(path, mode=mode) as tmp:
        tmp.write_bytes(data)


def atomic_copy(source: Path, target: Path) -> None:
    """``source``'s bytes and times at ``target`` through :func:`atomic_replace`: a reader
    sees the whole file or none of it (never half a package)."""
    with atomic_replace(target, mode=source.stat().st_mode & 0o7777) as tmp:
        shutil.copyfile(source, tmp)
        shutil.copystat(source, tmp)


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """UTF-8, newlines written as given (``\\n`` stays ``\\n`` on every platform)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def replace_files(contents: Mapping[Path, str | None]) -> None:
    """Give every path its new text (``None``: delete it), all of them or none.

    Every new text is written beside its file first (a full disk or a read-only folder fails
    here, before any file changes); then each file is replaced by a rename, its old version
    kept aside as a hard link until all are in place.  If one rename fails, the ones already
    made are undone, so the set of files is either the old one or the new one, never a mix
    (``matrix --write``: a .ci_support folder that matches no pinning is worse than a stale
    one).  A reader sees each file whole, old or new.
    """
    staged: dict[Path, Path] = {}
    done: list[tuple[Path, Path | None]] = []
    try:
        for path, text in contents.items():
            if text is not None:
                staged[path] = _staged(path, text.encode("utf-8"))
        try:
            for path in contents:
                aside = _aside(path) if path.exists() else None
                done.append((path, aside))
                if path in staged:
                    os.replace(staged.pop(path), path)
                else:
                    path.unlink()
        except BaseException:
            for path, aside in reversed(done):
                if aside is not None:
                    os.replace(aside, path)
                else:
                    path.unlink(missing_ok=True)
            raise
        for _path, aside in done:
            if aside is not None:
                aside.unlink(missing_ok=True)
    finally:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)


def _staged(path: Path, data: bytes) -> Path:
    """``data`` in a flushed temporary file beside ``path``, with the mode ``path`` has."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _beside(path, ".tmp")
    try:
        tmp.write_bytes(data)
        _seal(tmp, path, None)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _aside(path: Path) -> Path:
    """A second name for ``path``'s current file (a hard link, else a copy), to restore it
    from."""
    import shutil

    aside = _beside(path, ".old")
    aside.unlink()
    try:
        os.link(path, aside)
    except OSError:
        shutil.copy2(path, aside)
    return aside


_CONFLICT_MARKER = re.compile(r"^(?:<{7}|={7}|>{7})(?: |$)", re.MULTILINE)


def yaml_error_line(exc: Exception, text: str = "") -> int | None:
    """The 1-based line of ``text`` a PyYAML or ruamel.yaml error points at, if it does."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if mark is not None:
        return mark.line + 1
    position = getattr(exc, "position", None)  # ReaderError: a character YAML refuses
    if isinstance(position, int) and text:
        return text.count("\n", 0, position) + 1
    return None


def yaml_error_reason(exc: Exception) -> str:
    """What is wrong, in the parser's words, on one line."""
    character = getattr(exc, "character", None)
    reason = getattr(exc, "reason", None)
    if reason and character is not None:
        code = character if isinstance(character, int) else ord(str(character)[:1] or "?")
        return f"character #x{code:04x}: {reason}"
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    if problem:
        return " ".join(str(problem).split())
    first = (str(exc).strip().splitlines() or [""])[0]
    return first or exc.__class__.__name__


def yaml_error_message(
    source: str,
    exc: Exception,
    text: str = "",
    *,
    line_of: Callable[[int], int | str] | None = None,
    hint: str = "",
) -> str:
    """``file:line: not valid YAML (reason)``, the one form every command reports a YAML
    error in, pointing at merge-conflict markers first.  ``line_of`` maps a line of ``text``
    to the source file's (``text`` may be the file after selectors); ``hint`` says what to do.
    """
    conflict = _CONFLICT_MARKER.search(text)
    if conflict:
        line: int | str | None = text.count("\n", 0, conflict.start()) + 1
        if line_of is not None:
            line = line_of(int(line))
        return f"{source}:{line}: merge-conflict marker; resolve the conflict (or rerender)"
    line = yaml_error_line(exc, text)
    if line is not None and line_of is not None:
        line = line_of(line)
    where = f"{source}:{line}" if line is not None else source
    tail = f"; {hint}" if hint else ""
    return f"{where}: not valid YAML ({yaml_error_reason(exc)}){tail}"


def is_yaml_error(exc: BaseException) -> bool:
    """An error of either YAML library the toolkit uses (PyYAML, ruamel.yaml)."""
    import yaml
    from ruamel.yaml.error import YAMLError

    return isinstance(exc, (yaml.YAMLError, YAMLError))


def load_yaml_text(text: str, source: str, load: Callable[[str], Any], *, hint: str = "") -> Any:
    """``load(text)``, a YAML error of either library becoming the one-line UserError."""
    try:
        return load(text)
    except Exception as exc:
        if not is_yaml_error(exc):
            raise
        raise UserError(yaml_error_message(source, exc, text, hint=hint)) from None


def safe_yaml(text: str) -> Any:
    """ruamel.yaml's safe loader (YAML 1.2 types), as conda-smithy reads conda-forge.yml."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)


def load_json_text(text: str, source: str, *, hint: str = "") -> Any:
    """JSON a user handed us; an error is ``file:line: not valid JSON (reason)``."""
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        tail = f"; {hint}" if hint else ""
        raise UserError(f"{source}:{exc.lineno}: not valid JSON ({exc.msg}){tail}") from None


def sha256_of(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB blocks (packages and source archives are
    large)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
