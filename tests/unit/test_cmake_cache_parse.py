"""recipe/cmake_cache: parsing CMakeCache.txt, and editing it in place."""

from __future__ import annotations

import pytest
from helpers.cmake_caches import LINUX_312, WINDOWS_312, cache_file, raw_lines, values

# ---------------------------------------------------------------- parsing


def test_unedited_cache_renders_byte_for_byte() -> None:
    for text in (LINUX_312, WINDOWS_312, LINUX_312.rstrip("\n")):
        assert cache_file.parse(text).render() == text


def test_values_keep_colons_and_equals_signs() -> None:
    assert values(LINUX_312)["TORCH_NVCC_FLAGS"] == "-Xfatbin -compress-all --opt=a:b=c"


def test_quoted_names_are_unquoted() -> None:
    entry = cache_file.parse(LINUX_312).get("weird:name")
    assert (entry.type, entry.value, entry.quoted_name) == ("STRING", "x=y", True)


def test_property_entries_name_their_variable() -> None:
    entry = cache_file.parse(LINUX_312).get("PYTHON_EXECUTABLE-ADVANCED")
    assert entry.property_of == "PYTHON_EXECUTABLE"


def test_untyped_entries_parse() -> None:
    assert cache_file.parse("FOO=bar\n").get("FOO").type is None


def test_later_duplicate_wins_like_cmake() -> None:
    assert cache_file.parse("A:STRING=1\nA:STRING=2\n").get("A").value == "2"


def test_values_with_outer_blanks_round_trip_through_quotes() -> None:
    cache = cache_file.parse("A:STRING=x\n").set("A", " padded ")
    assert cache.render() == "A:STRING=' padded '\n"
    assert cache_file.parse(cache.render()).get("A").value == " padded "


def test_line_without_equals_is_rejected_with_its_line_number() -> None:
    with pytest.raises(cache_file.CacheError) as info:
        cache_file.parse("# ok\nGOOD:BOOL=ON\nthis is not an entry\n", "b/CMakeCache.txt")
    assert str(info.value).startswith("b/CMakeCache.txt:3: not a cache entry")


def test_unknown_entry_type_is_rejected() -> None:
    with pytest.raises(cache_file.CacheError, match=r":1: unknown cache entry type 'NUMBER'"):
        cache_file.parse("X:NUMBER=1\n")


# ---------------------------------------------------------------- set


def test_set_changes_only_the_named_line_and_keeps_crlf() -> None:
    edited = cache_file.parse(WINDOWS_312).set("LIBFOO_VERSION", "4.0").render()
    before, after = WINDOWS_312.splitlines(keepends=True), edited.splitlines(keepends=True)
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert changed == [("LIBFOO_VERSION:STRING=3.12.0\r\n", "LIBFOO_VERSION:STRING=4.0\r\n")]


def test_set_with_type_retypes_the_entry() -> None:
    cache = cache_file.parse(LINUX_312).set("USE_MAGMA", "ON", "BOOL")
    assert raw_lines(cache.render())["USE_MAGMA"] == "USE_MAGMA:BOOL=ON\n"


def test_set_adds_a_missing_entry_to_the_external_section() -> None:
    text = cache_file.parse(LINUX_312).set("NEW_OPTION", "1", "BOOL").render()
    lines = text.splitlines()
    assert lines.index("NEW_OPTION:BOOL=1") < lines.index("# INTERNAL cache entries")


def test_set_adds_a_missing_internal_entry_at_the_end() -> None:
    text = cache_file.parse(LINUX_312).set("_X", "1", "INTERNAL").render()
    assert text.rstrip("\n").splitlines()[-1] == "_X:INTERNAL=1"


def test_set_without_type_adds_uninitialized_like_cmake_minus_d() -> None:
    assert "NEW:UNINITIALIZED=1\n" in cache_file.parse("A:BOOL=ON\n").set("NEW", "1").render()
