"""How the packages may import each other, read from the source with :mod:`ast`.

``loading_scripts`` reads sources and knows nothing of the library: it imports no module of
``split_builders`` (the library imports it, never the other way round). Its own modules form an acyclic graph at module level, with
no import hidden in a function to break a circle. The release package reads releases and knows no
method. Importing the readers loads neither torch nor nltk.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
READERS = "loading_scripts"


def module_files(package: str) -> dict:
    """``{dotted module name: path}`` of every module of ``package`` (``__init__`` as the package)."""
    files = {}
    for path in sorted((REPO / package.replace(".", "/")).rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def imported_names(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names one ``import`` statement in ``module`` reaches, relative ones resolved:
    ``import a.b`` gives ``a.b``, ``from a import b`` gives ``a.b`` (a submodule or a name of ``a``);
    [] for any other node."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        base = ".".join([*parts[: len(parts) - node.level + is_package], *([base] if base else [])])
    return [f"{base}.{alias.name}" for alias in node.names]


def imports(path: Path, module: str, *, at_module_level_only: bool = False) -> list[tuple[str, int, bool]]:
    """``(imported name, line, inside a function)`` for every import statement of a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if at_module_level_only and inside:
                continue
            found.extend((name, child.lineno, inside) for name in imported_names(child, module, is_package))
            visit(child, inside)

    visit(tree, False)
    return found


def is_within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_no_reader_imports_the_library():
    offending = [f"{module} (line {line}) imports {name}"
                 for module, path in module_files(READERS).items()
                 for name, line, _ in imports(path, module)
                 if is_within(name, "split_builders")]
    assert not offending, offending


def test_the_release_package_imports_no_method():
    offending = [f"{module} (line {line}) imports {name}"
                 for module, path in module_files("split_builders.release").items()
                 for name, line, _ in imports(path, module)
                 if is_within(name, "split_builders.methods")]
    assert not offending, offending


def reader_graph() -> dict:
    """``{module: {loading_scripts modules it imports at module level}}``: an imported name is an
    edge to the longest module that holds it (``loading_scripts.load_source``: the package itself)."""
    modules = module_files(READERS)

    def holder(name):
        return next(candidate for candidate in (name, *(name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)))
                    if candidate in modules)

    return {module: {holder(name) for name, _, _ in imports(path, module, at_module_level_only=True)
                     if is_within(name, READERS)} - {module}
            for module, path in modules.items()}


def find_cycle(graph: dict) -> list[str]:
    """One import circle of ``graph`` as a list of modules, or [] when it is acyclic."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        stack.pop()
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def test_find_cycle_finds_a_circle_and_only_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_readers_import_each_other_without_a_circle():
    graph = reader_graph()
    assert graph["loading_scripts"] >= {"loading_scripts.compositional", "loading_scripts.scan"}  # sanity
    assert find_cycle(graph) == []


def test_no_reader_hides_an_import_of_another_in_a_function():
    hidden = [f"{module} (line {line}) imports {name} inside a function"
              for module, path in module_files(READERS).items()
              for name, line, in_function in imports(path, module)
              if in_function and is_within(name, READERS)]
    assert not hidden, hidden


def test_only_tables_reads_a_datasets_private_selection():
    readers = [module for module, path in module_files(READERS).items()
               if any(isinstance(node, ast.Attribute) and node.attr == "_indices"
                      for node in ast.walk(ast.parse(path.read_text())))]
    assert readers == ["loading_scripts.tables"], "read it with loading_scripts.tables.arrow_table / arrow_column"


@pytest.mark.parametrize("statement", ["import loading_scripts",
                                       "import " + ", ".join(sorted(module_files(READERS)))])
def test_importing_the_readers_loads_neither_torch_nor_nltk(statement):
    code = f"{statement}; import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'nltk')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
