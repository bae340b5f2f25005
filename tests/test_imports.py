"""The import picture of app/: no module imports, through any chain of imports (at its
top or inside a function), a module that imports it back."""

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"


def module_name(path: Path) -> str:
    """``app/questions/__init__.py`` -> ``app.questions``; ``app/page.py`` -> ``app.page``."""
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that the file at ``path`` imports. ``from package
    import name`` imports the submodule ``package.name`` when there is one."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    return found & modules


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in APP.rglob("*.py")}
    return {name: imports_of(path, set(paths)) - {name} for name, path in paths.items()}


def circle_from(graph: dict[str, set[str]], start: str) -> list[str] | None:
    """A chain of imports from ``start`` back to itself, or None (depth first)."""
    chain, seen = [start], set()

    def walk(module):
        for imported in sorted(graph[module]):
            if imported == start:
                return [*chain, start]
            if imported not in seen:
                seen.add(imported)
                chain.append(imported)
                if found := walk(imported):
                    return found
                chain.pop()
        return None

    return walk(start)


def test_the_import_graph_is_read_from_the_code():
    """The picture holds the imports it should (a module, a submodule by
    ``from package import``, an import inside a function), so that an empty one cannot
    pass the next test."""
    graph = import_graph()
    assert "app.options" in graph["app.results"]
    assert "app.questions" in graph["app.scenario"]
    assert {"app.questions.reading", "app.questions.steps"} <= graph["app.questions.choices"]
    assert "app.page" in graph["app.worker"]  # worker.new_document imports it in a function


def test_app_has_no_import_circle():
    """No module of app/ imports itself through others. (Before the options' catalogue
    had its module, app.scenario imported app.questions, whose modules imported
    app.results, which imported app.scenario: a circle, broken only by an import in a
    function.)"""
    graph = import_graph()
    circles = [circle for name in graph if (circle := circle_from(graph, name))]
    assert circles == [], " -> ".join(circles[0])
