"""The CSS and JavaScript the page sends to the browser, kept in ``app/assets/``."""

from importlib.resources import files


def asset(name: str) -> str:
    """The text of ``app/assets/<name>``."""
    return files("app").joinpath("assets", name).read_text(encoding="utf-8")
