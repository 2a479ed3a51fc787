"""The layout the README describes: graphs, nodes and prompts installed inside the package, no
module (tests included) too long to read in one sitting, no package importing one that imports
it back, and the type-checking mirror in .ci/typing complete."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[2]
PACKAGES = {
    "reflexion": ROOT / "reflexion",
    **{f"reflexion.{d}": ROOT / d for d in ("graphs", "nodes", "prompts")},
}
MOST_LINES = 600


def modules() -> dict[str, Path]:
    found = {}
    for name, folder in PACKAGES.items():
        for file in folder.rglob("*.py"):
            parts = file.relative_to(folder).with_suffix("").parts
            if name == "reflexion" and parts[0] in ("graphs", "nodes", "prompts"):
                continue
            found[".".join((name, *parts)).removesuffix(".__init__")] = file
    return found


def package_of(module: str) -> str:
    """The second-level package a module belongs to (reflexion.core, reflexion.graphs, …)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else module


def test_graphs_nodes_and_prompts_import_inside_the_package():
    import reflexion.harness.agents
    import reflexion.nodes
    import reflexion.prompts

    assert Path(reflexion.graphs.loop.__file__).parent == ROOT / "graphs"
    assert Path(reflexion.nodes.__file__).parent == ROOT / "nodes"
    assert reflexion.prompts.load_prompt("qa/cot_system")


def test_no_module_is_longer_than_600_lines():
    files = [*modules().values(), *(ROOT / "tests").rglob("*.py")]
    long = {
        str(f.relative_to(ROOT)): n
        for f in files
        if (n := len(f.read_text().splitlines())) > MOST_LINES
    }
    assert long == {}


def test_no_import_cycle_between_packages():
    edges: dict[str, set[str]] = {}
    for module, file in modules().items():
        here = package_of(module)
        for node in ast.walk(ast.parse(file.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("reflexion.")
            ):
                there = package_of(node.module)
                if there != here and there != "reflexion.harness.fakes":
                    edges.setdefault(here, set()).add(there)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in edges.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    cycles = sorted(p for p in edges if reaches(p, p, {p}))
    assert cycles == []


def imported_modules(module: str, file: Path, known: set[str]) -> set[str]:
    """The modules of ours that ``module`` imports, anywhere in its file (in functions too):
    ``import a.b`` names ``a.b``; ``from a import b`` names ``a.b`` when that is a module,
    else ``a``; relative imports are resolved against the module's package. A string that
    names one of our modules by its dotted path (``"reflexion.core.context"``,
    ``"pkg.mod:attr"``), as a lazy
    import or ``importlib.import_module`` takes it, counts as an import too."""
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            subs = {f"{base}.{alias.name}" for alias in node.names} & known
            found |= subs
            if len(subs) < len(node.names):
                found.add(base)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value.partition(":")[0]
            if "." in name:  # a dotted path: a bare "reflexion" is a word more often
                found.add(name)
    return (found & known) - {module}


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of a directed graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return components


def test_no_import_cycle_between_modules():
    """No module imports, directly or through others, one that imports it back: the graph
    counts every import in a file, those inside functions and ``if TYPE_CHECKING:`` included,
    so a cycle cannot hide behind a deferred import."""
    known = modules()
    edges = {m: imported_modules(m, f, set(known)) for m, f in known.items()}
    cycles = [c for c in strongly_connected(edges) if len(c) > 1]
    described = [" ; ".join(f"{m} -> {sorted(set(c) & edges[m])}" for m in c) for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(described)


FAMILY_MODULES = (
    "reflexion.qa",
    "reflexion.programming",
    "reflexion.alfworld",
    "reflexion.nodes.qa",
    "reflexion.nodes.programming",
    "reflexion.nodes.alfworld",
    "reflexion.nodes.memory",
)
"""What belongs to one task family: its package, its nodes."""


def test_a_module_named_in_a_string_counts_as_imported(tmp_path):
    file = tmp_path / "lazy.py"
    file.write_text(
        'import importlib\nNAMES = {"C": "reflexion.core.context"}\nX = "pkg.mod:f"\nY = ("reflexion", "x")\n'
    )
    known = {"reflexion", "reflexion.core.context", "pkg.mod", "reflexion.core.state"}
    assert imported_modules("lazy", file, known) == {"reflexion.core.context", "pkg.mod"}


def test_the_loop_core_knows_no_task_family():
    """The loop (graphs/loop.py), the core package and the shared nodes import no task
    family's module: the families build their graphs from the loop, not the other way."""
    found = modules()
    known = set(found)
    core = [m for m in found if m.startswith("reflexion.core.")]
    shared = ["reflexion.graphs.loop", "reflexion.nodes.reflector", "reflexion.nodes.evaluator"]
    for module in [*core, *shared]:
        bad = {
            imported
            for imported in imported_modules(module, found[module], known)
            if imported.startswith(FAMILY_MODULES)
        }
        assert not bad, f"{module} imports task-family modules {sorted(bad)}"


def test_the_type_checking_mirror_links_every_entry():
    """mypy cannot follow the editable install's mapping of graphs/, nodes/ and prompts/, so it
    reads .ci/typing/reflexion, a tree of links laid out as the installed package."""
    mirror = ROOT / ".ci" / "typing" / "reflexion"
    wanted = {p.name for p in (ROOT / "reflexion").iterdir() if p.name != "__pycache__"}
    wanted |= {"graphs", "nodes", "prompts"}
    assert {p.name for p in mirror.iterdir()} == wanted
    assert all((mirror / name).resolve().exists() for name in wanted)


def test_every_package_is_listed_for_the_wheel():
    """pyproject.toml lists the packages (package-dir maps three of them), so a new folder
    must be added there or a built wheel would leave it out; each data set's folder is listed
    too (setuptools warns about a folder of package data that is not), with its files as
    package data, and so is each folder of prompt files."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = set()
    for top in ("reflexion", "graphs", "nodes", "prompts"):
        prefix = () if top == "reflexion" else (top,)
        for init in (ROOT / top).rglob("__init__.py"):
            found.add(".".join(("reflexion", *prefix, *init.parent.relative_to(ROOT / top).parts)))
    data = {
        f"reflexion.data.{d.name}" for d in (ROOT / "reflexion" / "data").iterdir() if d.is_dir()
    }
    prompts = {
        f"reflexion.prompts.{d.name}"
        for d in (ROOT / "prompts").iterdir()
        if d.is_dir() and d.name != "__pycache__"
    }
    assert len(prompts) == 4
    assert listed == found | data | prompts
    assert all(setuptools["package-data"].get(name) == ["*"] for name in data)
    assert all(setuptools["package-data"].get(name) == ["*.md"] for name in prompts)


def test_the_layout_page_names_every_module():
    """Each module file (other than ``__init__``/``__main__``) is named in the layout section
    of ``docs/reference/layout.md``, so the table cannot fall behind the tree."""
    page = (ROOT / "docs" / "reference" / "layout.md").read_text(encoding="utf-8")
    layout = page.split("\n## Layout of the repository\n", 1)[1].split("\n## ", 1)[0]
    unnamed = sorted(
        str(file.relative_to(ROOT))
        for file in modules().values()
        if file.stem not in ("__init__", "__main__")
        and f"`{file.name}`" not in layout
        and f"`{file.relative_to(ROOT)}`" not in layout
    )
    assert not unnamed, f"the README's Layout section does not name: {unnamed}"


def defines(file: Path, name: str) -> bool:
    """Whether a module (or a class in it) defines or imports ``name``."""
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.ImportFrom):
            if any((alias.asname or alias.name) == name for alias in node.names):
                return True
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name == name:
                return True
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def test_dotted_names_in_docs_and_docstrings_exist():
    """``reflexion.x.y`` in a docstring, the README or the docs names a module that exists
    and, after it, something that module defines: a moved module leaves no dead pointer."""
    import re

    known = modules()
    sources = [*known.values(), ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    dangling = []
    for file in sources:
        for name in set(re.findall(r"(?<![\w/.])reflexion(?:\.\w+)+", file.read_text())):
            parts = name.split(".")
            cut = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in known)
            rest = parts[cut:]
            module = known[".".join(parts[:cut])]
            if rest and rest[0] not in ("py", "jsonl", "mmd") and not defines(module, rest[0]):
                dangling.append(f"{file.relative_to(ROOT)}: {name}")
    assert not dangling, dangling
