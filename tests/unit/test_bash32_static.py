"""Every script macOS runs is read as bash 3.2 reads it.

macOS ships /bin/bash 3.2 (the last GPLv2 release) and nothing newer. conda-build runs an
output's build script with the first `bash` on PATH: $BUILD_PREFIX/bin holds none unless a
recipe asks for it, so on an osx runner recipe/build.sh meets bash 3.2; run_osx_build.sh
runs under `bash` from a PATH that holds only micromamba, and the activation scripts are
sourced by whatever shell the user has. A bash-4 construct there stops every osx stage
(`mapfile: command not found`). No bash 3.2 runs here, so the constructs are rejected by
reading the text, each with the release that added it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / ".scripts"
# The roots: what conda-build (build.sh), build-locally.py / CI (run_osx_build.sh) and
# conda activation (the libtorch activation scripts) start on macOS. What they source or
# exec is found below, not listed.
MACOS_ROOTS = (
    REPO / "recipe" / "build.sh",
    SCRIPTS / "run_osx_build.sh",
    REPO / "recipe" / "activate-libtorch.sh",
    REPO / "recipe" / "deactivate-libtorch.sh",
)

# (name, pattern, why bash 3.2 cannot run it). Patterns read code with comments removed.
BASH4_CONSTRUCTS = (
    ("mapfile", r"\b(mapfile|readarray)\b", "mapfile/readarray are bash 4.0 builtins"),
    (
        "associative array",
        r"\b(declare|local|typeset|readonly)\s+-[a-zA-Z]*A",
        "associative arrays are bash 4.0",
    ),
    ("nameref", r"\b(declare|local|typeset)\s+-[a-zA-Z]*n\b", "namerefs are bash 4.3"),
    ("declare -g", r"\b(declare|typeset)\s+-[a-zA-Z]*g\b", "declare -g is bash 4.2"),
    (
        "case modification",
        r"\$\{[#!]?\w+(\[[^]]*\])?(\^\^?|,,?)[^}]*\}",
        "${x^^}/${x,,}/${x^}/${x,} are bash 4.0",
    ),
    ("case fall-through", r";;&|;&", "the case terminators ;& and ;;& are bash 4.0"),
    ("pipe stderr", r"(?<!\|)\|&", "|& (pipe stdout and stderr) is bash 4.0"),
    ("append both", r"&>>", "&>> (append stdout and stderr) is bash 4.0"),
    ("coproc", r"\bcoproc\b", "coproc is bash 4.0"),
    (
        "negative subscript",
        r"\$\{\w+\[\s*-\d+\s*\]\}",
        "negative array subscripts are bash 4.3",
    ),
    (
        "negative length",
        r"\$\{\w+:[^}:]*:\s*-\d+\}",
        "a negative substring length is bash 4.2",
    ),
    (
        "parameter transformation",
        r"\$\{[^}]*@[QEPAaUuLK]\}",
        "${x@Q} and the other @ operators are bash 4.4/5.1",
    ),
    ("wait -n", r"\bwait\s+-n\b", "wait -n is bash 4.3"),
    ("test -v", r"\[\[\s+-v\s", "[[ -v name ]] is bash 4.2"),
    ("printf %()T", r"%\([^)]*\)T", "printf's %(fmt)T is bash 4.2"),
    (
        "bash 5 variables",
        r"\b(EPOCHSECONDS|EPOCHREALTIME|BASH_ARGV0|SRANDOM)\b",
        "EPOCHSECONDS, EPOCHREALTIME, BASH_ARGV0 and SRANDOM are bash 5",
    ),
    (
        "shopt",
        r"\bshopt\s+-s\s+(globstar|lastpipe|autocd|direxpand|checkjobs|compat\w+|inherit_errexit)",
        "globstar, autocd, checkjobs (4.0), lastpipe, direxpand (4.2), inherit_errexit (4.4)",
    ),
    ("brace step", r"\{-?\d+\.\.-?\d+\.\.-?\d+\}", "{a..b..step} is bash 4.0"),
    ("brace padding", r"\{0\d+\.\.\d+\}", "zero-padded {01..10} is bash 4.0"),
    ("fd variable", r"\{\w+\}[<>]", "exec {fd}> (a variable file descriptor) is bash 4.1"),
    ("read -N / -i", r"\bread\s+(-\w+\s+)*-[a-zA-Z]*[Ni]\b", "read -N (4.1) and -i (4.0)"),
    ("local -", r"\blocal\s+-\s*($|;)", "local - (scoped shell options) is bash 4.4"),
    # Not bash: macOS's BSD tools, which the same scripts meet there.
    ("sed -i", r"\bsed\s+(-\w+\s+)*-i(\s|$)", "BSD sed -i needs a suffix argument (-i.bak)"),
    ("readlink -f", r"\breadlink\s+-f\b", "macOS's readlink has no -f before macOS 12.3"),
    ("grep -P", r"\bgrep\s+(-\w+\s+)*-[a-zA-Z]*P", "BSD grep has no -P"),
)

# One violation of each rule, to show its pattern finds what its reason says.
EXAMPLES = {
    "mapfile": 'mapfile -t files <<< "${listing}"',
    "associative array": "declare -A seen=()",
    "nameref": 'local -n out="$1"',
    "declare -g": "declare -g STATE=1",
    "case modification": 'lower="${name,,}"',
    "case fall-through": "    a) echo a ;&",
    "pipe stderr": "make |& tee log",
    "append both": "make &>> log",
    "coproc": "coproc worker { cat; }",
    "negative subscript": 'last="${files[-1]}"',
    "negative length": 'head="${name:0:-3}"',
    "parameter transformation": 'echo "${arg@Q}"',
    "wait -n": "wait -n",
    "test -v": "if [[ -v CONFIG ]]; then :; fi",
    "printf %()T": "printf '%(%s)T' -1",
    "bash 5 variables": 'start="${EPOCHSECONDS}"',
    "shopt": "shopt -s globstar",
    "brace step": "for i in {0..10..2}; do :; done",
    "brace padding": "for i in {01..10}; do :; done",
    "fd variable": 'exec {log}>"${file}"',
    "read -N / -i": "read -r -N 1 key",
    "local -": "local -",
    "sed -i": "sed -i 's/a/b/' file",
    "readlink -f": 'here="$(readlink -f "$0")"',
    "grep -P": "grep -qP '\\d' file",
}

# `source "${X_DIR}/name"`, `. "${X_DIR}/name"`, `bash "${X_DIR}/name"`, `exec bash ...`.
_FOLLOWED = re.compile(r'(?:\bsource|^\s*\.|\bbash)\s+"\$\{\w+\}/([\w.-]+\.sh)"', re.M)


def _code(text: str) -> str:
    """The script without its comments (full-line ones and ` # ...` tails)."""
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            lines.append("")
            continue
        lines.append(re.sub(r"\s#\s.*$", "", line))
    return "\n".join(lines)


def macos_scripts() -> list[Path]:
    """The roots and every script they source or run, transitively."""
    found: list[Path] = []
    todo = list(MACOS_ROOTS)
    while todo:
        path = todo.pop(0)
        if path in found:
            continue
        found.append(path)
        for name in _FOLLOWED.findall(_code(path.read_text())):
            todo.append(path.parent / name)
    return found


def bash4_findings(text: str) -> list[str]:
    """'line N: construct (why)' for each bash-4 construct (and BSD-tool trap) in `text`."""
    findings = []
    for number, line in enumerate(_code(text).splitlines(), 1):
        for name, pattern, why in BASH4_CONSTRUCTS:
            if re.search(pattern, line):
                findings.append(f"line {number}: {name} ({why}): {line.strip()}")
    return findings


def _maybe_empty(code: str) -> set[str]:
    """The arrays `code` ever sets empty (`a=()`) or fills with `read -a`."""
    maybe_empty = set(re.findall(r"\b(\w+)=\(\)", code))
    return maybe_empty | set(re.findall(r"\bread\s+(?:-\w+\s+)*-a\s+(\w+)", code))


def empty_array_findings(text: str, elsewhere: str = "") -> list[str]:
    """Bare expansions of arrays that can be empty.

    Under `set -u`, bash before 4.4 calls "${a[@]}" of an empty array an unbound variable
    and stops: an array ever set empty (`a=()`) or filled by `read -a`, here or in
    ``elsewhere`` (the files sourced with this one), is expanded as ${a[@]+"${a[@]}"}
    (or ${a[*]:-}).
    """
    code = _code(text)
    maybe_empty = _maybe_empty(code) | _maybe_empty(_code(elsewhere))
    findings = []
    for number, line in enumerate(code.splitlines(), 1):
        for name in sorted(maybe_empty):
            guarded = line.replace(f'${{{name}[@]+"${{{name}[@]}}"}}', "")
            if re.search(rf"\$\{{{name}\[[@*]\]\}}", guarded):
                findings.append(f"line {number}: {name} may be empty: {line.strip()}")
    return findings


def test_the_macos_scripts_include_what_run_osx_build_runs() -> None:
    names = {path.name for path in macos_scripts()}
    assert {"logging_utils.sh", "build_steps.sh"} <= names


@pytest.mark.parametrize("script", macos_scripts(), ids=lambda path: path.name)
def test_macos_script_has_no_bash4_construct(script: Path) -> None:
    assert bash4_findings(script.read_text()) == []


@pytest.mark.parametrize("script", macos_scripts(), ids=lambda path: path.name)
def test_macos_script_expands_no_possibly_empty_array_bare(script: Path) -> None:
    # build.sh's files share their arrays (build_setuptools.sh sets INSTALL_STRIP empty,
    # build_compile.sh expands it): every script is read with all the others.
    others = "\n".join(path.read_text() for path in macos_scripts() if path != script)
    assert empty_array_findings(script.read_text(), elsewhere=others) == []


@pytest.mark.parametrize("name", [name for name, _, _ in BASH4_CONSTRUCTS])
def test_each_bash4_rule_finds_its_construct(name: str) -> None:
    findings = bash4_findings(EXAMPLES[name] + "\n")
    assert any(f": {name} (" in finding for finding in findings), findings


def test_the_rules_leave_bash32_idioms_alone() -> None:
    # What the scripts do instead: the 3.2 spellings must not trip the rules.
    text = "\n".join(
        (
            'while IFS= read -r line; do files+=("${line}"); done <<< "${listing}"',
            'IFS=, read -r -a parts <<< "${x}"',
            'echo "${x:-default}" "${#files[@]}" "${x%%;*}" "${x: -1}" "${!name:-}"',
            "a || b && c",
            'cmd >"${log}" 2>&1; cmd &>"${log}"',
            "sed -i.bak 's/a/b/' file",
            "case x in a) ;; esac",
        )
    )
    assert bash4_findings(text) == []


def test_an_empty_array_expanded_bare_is_found() -> None:
    text = 'local words=()\nfor w in "${words[@]}"; do :; done\n'
    assert empty_array_findings(text) == ["line 2: words may be empty: " + text.split("\n")[1]]


def test_an_array_set_empty_in_another_sourced_file_is_found_bare() -> None:
    text = 'cmake --install build "${STRIP[@]}"\n'
    assert empty_array_findings(text, elsewhere="STRIP=()\n") == [
        "line 1: STRIP may be empty: " + text.strip()
    ]


def test_an_empty_array_expanded_with_the_guard_passes() -> None:
    text = 'local words=()\nfor w in ${words[@]+"${words[@]}"}; do :; done\necho "${words[*]:-}"\n'
    assert empty_array_findings(text) == []
