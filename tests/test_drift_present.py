"""Drift reports as Markdown, JSON and text, and the README section they fill."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.drift.synthetic import Output, claim

from tools.drift import present, table
from tools.drift.recipe import specs_from_rendered
from tools.foundation import readme as readme_io
from tools.foundation.errors import UserError


@pytest.fixture(scope="module")
def view() -> table.RecipeView:
    variant = {"cuda_compiler_version": "None"}
    run = ("sympy >=1.13.3", "networkx <2")
    rendered = [
        (name, [Output("pytorch", {"run": run}, variant, subdir=subdir)])
        for name, subdir in (
            ("linux_cpu", "linux-64"),
            ("osx_cpu", "osx-arm64"),
            ("win_cpu", "win-64"),
        )
    ]
    specs, configs, _ = specs_from_rendered(rendered)
    return table.RecipeView(specs, configs)


def test_markdown_table_has_one_line_per_row_and_escapes_pipes(view) -> None:
    report = table.build_report([claim("sympy", "1.2.*|1.4.*")], view, None)
    lines = present.markdown(report).splitlines()
    assert lines[0].startswith("| package | upstream | recipe | conda-forge | status |")
    assert len(lines) == 3 and "1.2.*\\|1.4.*" in lines[2]


def test_json_document_is_stable(view) -> None:
    report = table.build_report([claim("networkx", ">=2.5.1")], view, None)
    document = present.as_json(report, {"source": None})
    assert document["version"] == 1
    (row,) = document["rows"]
    assert row["status"] == "conflict" and row["compared_with"] == "run"
    assert row["upstream"]["spec"] == ">=2.5.1" and row["recipe"][0]["spec"] == "<2"
    assert len(row["recipe"][0]["configs"]) == 3


def test_markdown_ends_with_the_notes_a_reader_needs(view) -> None:
    report = table.build_report(
        [claim("sympy", ">=1.13.3"), claim("hypothesis", None, priority=40, development=True)],
        view,
        None,
        channel_note="generated with --offline",
    )
    assert present.markdown(report).endswith(
        "\n\n_conda-forge column unknown: generated with --offline_\n"
        "_1 upstream claims left out (`--all` shows them)_\n"
    )


README = (
    "# Feedstock\n\nintro\n\n"
    "<!-- drift-table:start -->\nold table\n<!-- drift-table:end -->\n\ntail\n"
)


def test_readme_update_replaces_only_the_marked_section(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(README)
    assert readme_io.update_readme(readme, "| new |\n")
    assert readme.read_text() == README.replace("old table\n", "| new |\n")
    assert not readme_io.update_readme(readme, "| new |\n")  # idempotent
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]  # no temporary file left


def test_readme_update_keeps_crlf_line_endings(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_bytes(README.replace("\n", "\r\n").encode())
    readme_io.update_readme(readme, "| a |\n| b |\n")
    assert (
        b"<!-- drift-table:start -->\r\n| a |\r\n| b |\r\n<!-- drift-table:end -->\r\n"
        in readme.read_bytes()
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# no markers\n", "no <!-- drift-table:start --> marker"),
        ("<!-- drift-table:start -->\n", "no <!-- drift-table:end --> marker"),
        ("<!-- drift-table:end -->\n<!-- drift-table:start -->\n", "comes before"),
    ],
)
def test_readme_without_a_proper_marker_pair_is_left_alone(
    tmp_path: Path, text: str, message: str
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(text)
    with pytest.raises(UserError, match=message):
        readme_io.update_readme(readme, "| x |\n")
    assert readme.read_text() == text


def test_text_table_aligns_columns_and_keeps_the_reason_whole(view) -> None:
    report = table.build_report(
        [claim("networkx", ">=2.5.1"), claim("sympy", ">=1.13.3")], view, None
    )
    header, networkx, sympy = present.text_table(report).splitlines()
    assert header.split() == ["package", "vs", "upstream", "recipe", "conda-forge", "status", "why"]
    assert header.index("status") == networkx.index("conflict") == sympy.index("ok")
    assert networkx.endswith("no version satisfies both upstream `>=2.5.1` and recipe `<2`")
