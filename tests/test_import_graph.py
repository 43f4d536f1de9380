"""How the project's modules may import each other: the "may import" table of ARCHITECTURE.md, read from
the document itself (so the document and this test cannot drift), checked against the source read with
:mod:`ast`.

* Every module of ``split_builders``, ``loading_scripts`` and ``metrics`` belongs to one row of the table (the
  row that names it most precisely), and every row names files that exist.
* Every import of a project module (at module level and inside functions alike) stays within the importing
  row or reaches a module its row may import. A row that names third-party packages may import no other
  (the standard library aside); what a row names after "never" it imports nowhere.
* The rows form layers: the graph of imports between rows has no circle, and neither has the graph between
  modules (functions' imports included in both).
* ``loading_scripts``'s own modules import each other at module level only, without a circle; importing the
  readers loads neither torch nor nltk (checked in a fresh interpreter).

Imports by name (``importlib.import_module``: the registry's table of built-in methods, the package's lazy
names) are how a lower layer reaches a higher one without importing it; they are not statements and are not
counted.
"""

from __future__ import annotations

import ast
import fnmatch
import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
READERS = "loading_scripts"
PACKAGES = ("split_builders", "loading_scripts", "metrics")
TABLE_SECTION = "## Folders and their jobs"


# ---------------------------------------------------------------------------------------------------------
# The source: modules and their import statements
# ---------------------------------------------------------------------------------------------------------


def module_files(package: str) -> dict:
    """``{dotted module name: path}`` of every module of ``package`` (``__init__`` as the package)."""
    files = {}
    for path in sorted((REPO / package.replace(".", "/")).rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


@lru_cache(maxsize=None)
def project_modules() -> dict:
    """``{dotted module name: path}`` of every module of :data:`PACKAGES`."""
    return {name: path for package in PACKAGES for name, path in module_files(package).items()}


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


def holder(name: str, modules) -> str | None:
    """The longest module of ``modules`` that holds ``name`` (``split_builders.api.Split``: ``split_builders.api``)."""
    parts = name.split(".")
    return next((candidate for candidate in (".".join(parts[:k]) for k in range(len(parts), 0, -1))
                 if candidate in modules), None)


def is_project(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def is_standard_library(name: str) -> bool:
    return name.split(".")[0] in sys.stdlib_module_names


# ---------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row of the "may import" table.

    ``paths``: the files it covers as the first cell writes them (``split_builders/signals/`` a folder and
    everything under it, ``split_builders/api.py`` one file, ``metrics/*/app.py`` a pattern); ``allowed``: the
    project modules and packages it may import (dotted, resolved); ``third_party``: the third-party packages
    it may import (empty: any); ``forbidden``: what it never imports; ``everything``: it may import any
    project module."""

    paths: tuple
    allowed: tuple
    third_party: tuple
    forbidden: tuple
    everything: bool = False

    @property
    def name(self) -> str:
        """The row as messages name it: its path, or its files' folder and names
        (``split_builders/release/{card,export}.py``)."""
        folders = {path.rsplit("/", 1)[0] for path in self.paths}
        if len(self.paths) > 1 and len(folders) == 1 and all(path.endswith(".py") for path in self.paths):
            names = ",".join(path.rsplit("/", 1)[1][: -len(".py")] for path in self.paths)
            return f"{folders.pop()}/{{{names}}}.py"
        return ", ".join(self.paths)


def table_lines(text: str) -> list[str]:
    """The lines of the first table after :data:`TABLE_SECTION` (header and separator included)."""
    lines = text.splitlines()
    start = lines.index(TABLE_SECTION)
    table = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            table.append(line)
        elif table:
            break
    return table


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def resolve(token: str, modules) -> str | None:
    """The project module or package a name of the table means (``api``: ``split_builders.api``;
    ``loading_scripts.tables`` as written), or None for a third-party package."""
    name = token if is_project(token) else f"split_builders.{token}"
    packages = {".".join(m.split(".")[:k]) for m in modules for k in range(1, m.count(".") + 1)}
    return name if name in modules or name in packages else None


def parse_row(line: str, modules) -> Row:
    """A :class:`Row` from one line of the table. The last cell is a list of clauses separated by ";": in a
    clause that begins with "never", every name in backticks is forbidden; in the others, a name in backticks
    is a module or package of this repository that the row may import (``split_builders.`` left out: ``api``,
    ``release.folder``; ``loading_scripts...`` in full) or else a third-party package, and the word
    "everything" allows every project module."""
    row_cells = cells(line)
    assert len(row_cells) == 3, f"a row of the may-import table has 3 cells (no '|' inside one): {line}"
    paths = tuple(re.findall(r"`([^`]+)`", row_cells[0]))
    clauses = [clause.strip() for clause in row_cells[2].split(";")]
    forbidding = [clause for clause in clauses if re.match(r"never\b", clause)]
    allowing = [clause for clause in clauses if clause not in forbidding]
    allowed, third_party = [], []
    for token in re.findall(r"`([^`]+)`", " ".join(allowing)):
        resolved = resolve(token, modules)
        if resolved is not None:
            allowed.append(resolved)
        else:
            third_party.append(token)
    forbidden = [resolve(token, modules) or token for token in re.findall(r"`([^`]+)`", " ".join(forbidding))]
    return Row(paths=paths, allowed=tuple(allowed), third_party=tuple(third_party), forbidden=tuple(forbidden),
               everything=any(re.search(r"\beverything\b", clause) for clause in allowing))


@lru_cache(maxsize=None)
def table() -> tuple:
    """The rows of ARCHITECTURE.md's may-import table."""
    lines = table_lines((REPO / "ARCHITECTURE.md").read_text())
    assert lines and cells(lines[0])[-1] == "may import", "ARCHITECTURE.md's table of folders lost its 'may import' column"
    return tuple(parse_row(line, project_modules()) for line in lines[2:])


def matches(path: str, row_path: str) -> tuple | None:
    """How precisely ``row_path`` names the file ``path`` (relative, posix): a file or pattern beats a folder,
    a longer folder a shorter one; None when it does not name it."""
    if row_path.endswith("/"):
        return (1, len(row_path)) if path.startswith(row_path) else None
    return (2, len(row_path)) if fnmatch.fnmatchcase(path, row_path) else None


@lru_cache(maxsize=None)
def rows_of_modules() -> dict:
    """``{module: its Row}``; a module no row names is missing."""
    found = {}
    for module, path in project_modules().items():
        relative = path.relative_to(REPO).as_posix()
        ranked = [(rank, row) for row in table() for row_path in row.paths
                  if (rank := matches(relative, row_path)) is not None]
        if ranked:
            found[module] = max(ranked, key=lambda pair: pair[0])[1]
    return found


def project_imports():
    """``(module, line, in a function, imported name, the project module that holds it or None)`` for every
    import statement of every project module."""
    modules = project_modules()
    for module, path in modules.items():
        for name, line, in_function in imports(path, module):
            yield module, line, in_function, name, holder(name, modules) if is_project(name) else None


def where(module: str, line: int, in_function: bool) -> str:
    return f"{module} (line {line}{', in a function' if in_function else ''})"


def violations() -> list[str]:
    """Every import that the table does not allow, one line per statement and module it reaches."""
    rows = rows_of_modules()
    found: dict = {}
    for module, line, in_function, name, target in project_imports():
        row = rows[module]
        at = where(module, line, in_function)
        if any(is_within(name, forbidden) for forbidden in row.forbidden):
            rule = f"`{row.name}` never imports it"
        elif is_project(name):
            if target is None:
                rule = "no module of this repository"
            elif rows[target] is row or row.everything or any(is_within(target, allowed) for allowed in row.allowed):
                continue
            else:
                rule = f"`{row.name}` may not import `{rows[target].name}`"
        elif row.third_party and not is_standard_library(name) and name.split(".")[0] not in row.third_party:
            target, rule = name.split(".")[0], f"`{row.name}` imports no third-party package but {', '.join(row.third_party)}"
        else:
            continue
        found.setdefault((at, target or name, rule), []).append(name.rsplit(".", 1)[-1])
    return [f"{at} imports {target}" + (f" ({', '.join(names)})" if names != [target.rsplit('.', 1)[-1]] else "")
            + f": {rule}" for (at, target, rule), names in found.items()]


def strongly_connected(graph: dict) -> list[list]:
    """The import circles of ``graph`` (``{node: {nodes it imports}}``): every strongly connected component
    of more than one node, each sorted (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, components, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


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


def import_graph(node_of) -> tuple[dict, dict]:
    """The graph of project imports between ``node_of(module)`` nodes, functions' imports included, and
    ``{(from, to): [where an import makes that edge]}``."""
    graph, evidence = {}, {}
    for module, line, in_function, name, target in project_imports():
        graph.setdefault(node_of(module), set())
        if target is None or node_of(target) == node_of(module):
            continue
        graph[node_of(module)].add(node_of(target))
        evidence.setdefault((node_of(module), node_of(target)), []).append(f"{where(module, line, in_function)} "
                                                                           f"imports {name}")
    return graph, evidence


def describe_circles(graph: dict, evidence: dict) -> list[str]:
    """Each circle of ``graph`` with the imports that close it."""
    described = []
    for component in strongly_connected(graph):
        members = set(component)
        cycle = find_cycle({node: graph[node] & members for node in component})
        edges = [edge for edge in zip(cycle, cycle[1:])]
        described.append(" -> ".join(cycle) + ": " + "; ".join(evidence[edge][0] for edge in edges))
    return described


# ---------------------------------------------------------------------------------------------------------
# The table and the source agree
# ---------------------------------------------------------------------------------------------------------


def test_the_table_is_read():
    rows = {row.name: row for row in table()}
    assert {"loading_scripts/", "split_builders/api.py", "split_builders/methods/", "split_builders/builder.py",
            "split_builders/cli/", "split_builders/evidence/", "metrics/"} <= set(rows)  # sanity
    assert rows["split_builders/cli/"].everything
    assert {"torch", "nltk", "split_builders"} <= set(rows["loading_scripts/"].forbidden)
    assert "split_builders.methods" not in rows["split_builders/builder.py"].allowed


def test_every_row_names_files_that_exist_and_modules_and_packages_that_exist():
    missing = [f"`{path}` (row `{row.name}`)" for row in table() for path in row.paths
               if not ((REPO / path).is_dir() if path.endswith("/") else any(REPO.glob(path)))]
    assert not missing, f"ARCHITECTURE.md names files that do not exist: {missing}"
    unknown = [f"`{name}` (row `{row.name}`)" for row in table() for name in row.third_party
               if "." in name or importlib.util.find_spec(name) is None]
    assert not unknown, f"neither a module of this repository nor an installed package: {unknown}"


def test_every_module_is_in_the_table():
    missing = sorted(set(project_modules()) - set(rows_of_modules()))
    assert not missing, f"modules no row of ARCHITECTURE.md's may-import table names: {missing}"


def test_every_import_is_one_the_table_allows():
    found = violations()
    assert not found, "imports that ARCHITECTURE.md's may-import table does not allow:\n" + "\n".join(found)


def test_the_rows_form_layers_without_a_circle():
    rows = rows_of_modules()
    graph, evidence = import_graph(lambda module: rows[module].name)
    circles = describe_circles(graph, evidence)
    assert not circles, "import circles between rows of ARCHITECTURE.md's table:\n" + "\n".join(circles)


def test_no_import_circle_between_modules():
    graph, evidence = import_graph(lambda module: module)
    circles = describe_circles(graph, evidence)
    assert not circles, "import circles between modules (functions' imports included):\n" + "\n".join(circles)


def package_of(module: str) -> str:
    """The package a module counts for: ``split_builders.<first part>`` (``split_builders.release.folder``:
    ``split_builders.release``; a top-level module such as ``split_builders.cardspec`` is its own), or the
    top-level package (``loading_scripts``, ``metrics``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "split_builders" else parts[0]


def test_no_import_circle_between_packages():
    """``release``, ``evidence``, ``publishing``, ``evaluation``, ... import each other at most one way."""
    graph, evidence = import_graph(package_of)
    assert {"split_builders.evidence", "split_builders.release"} <= graph["split_builders.publishing"]  # sanity
    circles = describe_circles(graph, evidence)
    assert not circles, "import circles between packages (functions' imports included):\n" + "\n".join(circles)


MAX_LINES = 700


def test_no_module_is_over_700_lines():
    long = {path.relative_to(REPO).as_posix(): n for path in project_modules().values()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by role): {long}"


def test_the_checks_catch_what_they_should():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert strongly_connected({"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"c"}, "e": {"a"}}) == [["c", "d"], ["a", "b"]]
    modules = {"split_builders.api": None, "split_builders.release.folder": None, "loading_scripts.tables": None}
    row = parse_row("| `split_builders/x/` | a job, `not` parsed | `api` (never a method), `release.folder`, "
                    "`loading_scripts.tables`, `numpy`; never `torch` or `release` (why) |", modules)
    assert row.paths == ("split_builders/x/",)
    assert row.allowed == ("split_builders.api", "split_builders.release.folder", "loading_scripts.tables")
    assert row.third_party == ("numpy",)
    assert row.forbidden == ("torch", "split_builders.release")
    assert not row.everything
    assert matches("split_builders/release/card.py", "split_builders/release/") == (1, len("split_builders/release/"))
    assert matches("metrics/g_score/app.py", "metrics/*/app.py")[0] == 2
    assert holder("split_builders.api.Split", modules) == "split_builders.api"


# ---------------------------------------------------------------------------------------------------------
# The readers
# ---------------------------------------------------------------------------------------------------------


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


def test_the_release_package_imports_no_evidence():
    """The release's format knows no evidence (what combines the two is ``split_builders.publishing``)."""
    offending = [f"{module} (line {line}) imports {name}"
                 for module, path in module_files("split_builders.release").items()
                 for name, line, _ in imports(path, module)
                 if is_within(name, "split_builders.evidence") or is_within(name, "split_builders.publishing")]
    assert not offending, offending


def reader_graph() -> dict:
    """``{module: {loading_scripts modules it imports at module level}}``: an imported name is an
    edge to the longest module that holds it (``loading_scripts.load_source``: the package itself)."""
    modules = module_files(READERS)
    return {module: {holder(name, modules) for name, _, _ in imports(path, module, at_module_level_only=True)
                     if is_within(name, READERS)} - {module}
            for module, path in modules.items()}


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


def test_the_command_line_parser_loads_neither_torch_nor_nltk_nor_scipy():
    """Every ``resplit`` command builds the whole parser first (``--help`` included): it must not pay for the
    model or tokenizer libraries a command may never use (NLTK alone, through ``scipy.stats``, was a second)."""
    code = ("from split_builders.cli import build_parser; build_parser(); import sys; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'nltk', 'scipy', 'transformers'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_every_name_a_benchmark_imports_from_the_project_exists():
    """The benchmark scripts are not run by the suite, but every ``from split_builders... import name`` (and
    ``loading_scripts``) in them, at module level or in a function, names something that exists."""
    missing = []
    for path in sorted((REPO / "benchmarks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.split(".")[0] in ("split_builders", "loading_scripts")):
                continue
            module = importlib.import_module(node.module)
            missing += [f"{path.relative_to(REPO)}:{node.lineno} {node.module}.{alias.name}" for alias in node.names
                        if not hasattr(module, alias.name)
                        and importlib.util.find_spec(f"{node.module}.{alias.name}") is None]
    assert not missing, missing
