"""Errors of the recipe model; each is one line naming the file, line and construct."""

from __future__ import annotations

from tools.foundation.errors import UserError


class RecipeError(UserError):
    """The recipe (or a variant file) cannot be rendered as written."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.detail = message


class UnsupportedConstruct(RecipeError):
    """conda-build might accept this, but our model does not; say so instead of guessing."""


class UndefinedName(RecipeError):
    """A jinja name the recipe uses that no variant (and no jinja context) defines."""

    def __init__(self, where: str, name: str) -> None:
        super().__init__(where, f"failed to render jinja template: {name!r} is undefined")
        self.name = name
