"""The layers of DESIGN §3 are real: the folders import one way by a table, core is pure, and the
server starts without the heavy libraries.

Every module of ``memtree_mcp.core`` is checked, found with pkgutil so a new one cannot slip by.
One fresh interpreter imports them one after another (one interpreter each would cost seconds)
and notes what each import loaded and which of our modules asked for it, so a failure names the
module under test and the one whose import statement pulled the library in.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import memtree_mcp
import memtree_mcp.core

TIMEOUT = 60.0
CORE_MODULES = [
    "memtree_mcp.core",
    *sorted(
        module.name for module in pkgutil.walk_packages(memtree_mcp.core.__path__, prefix="memtree_mcp.core.")
    ),
]
# I/O, the MCP SDK and the models stay out of core; pydantic too (its models are the server's), and
# detect-secrets (with requests behind it).
NOT_IN_CORE = (
    "mcp", "lancedb", "onnxruntime", "litellm", "pyarrow", "tokenizers", "pydantic", "detect_secrets",
)  # fmt: skip
# What the server must not load before a client's handshake is answered.
AFTER_THE_HANDSHAKE = ("lancedb", "onnxruntime", "litellm", "pyarrow")

# argv: the libraries watched, the modules to import in turn. Prints, for each module, the watched
# libraries its import loaded, each with the memtree_mcp module whose code imported it.
IMPORT_IN_TURN = """
import importlib, json, sys

libraries, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
importer = {}


class NoteImporter:
    # Finds nothing: notes which memtree_mcp module first asks for each library watched.
    def find_spec(self, name, path=None, target=None):
        if name in libraries and name not in importer:
            frame = sys._getframe(1)
            while frame is not None and not frame.f_globals.get("__name__", "").startswith("memtree_mcp"):
                frame = frame.f_back
            importer[name] = frame.f_globals["__name__"] if frame is not None else "?"
        return None


sys.meta_path.insert(0, NoteImporter())
report = {}
for module in modules:
    before = set(sys.modules)
    importlib.import_module(module)
    report[module] = {lib: importer.get(lib, "?") for lib in libraries if lib in set(sys.modules) - before}
print(json.dumps(report))
"""


def import_in_turn(modules: list[str], libraries: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """For each of ``modules``, imported in turn in a fresh interpreter: library loaded -> importer."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_IN_TURN, json.dumps(libraries), json.dumps(modules)],
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT,
    )
    report: dict[str, dict[str, str]] = json.loads(done.stdout)
    return report


def shown(loaded: dict[str, str]) -> str:
    return ", ".join(f"{library} (imported by {importer})" for library, importer in loaded.items())


@pytest.fixture(scope="module")
def loaded_by_core() -> dict[str, dict[str, str]]:
    return import_in_turn(CORE_MODULES, NOT_IN_CORE)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_a_core_module_imports_no_io_or_heavy_library(
    module: str, loaded_by_core: dict[str, dict[str, str]]
) -> None:
    loaded = loaded_by_core[module]
    assert not loaded, f"importing {module} loads {shown(loaded)}"


def test_the_server_and_the_cli_leave_heavy_libraries_for_after_the_handshake() -> None:
    entry_points = ["memtree_mcp.server", "memtree_mcp.cli"]
    for module, loaded in import_in_turn(entry_points, AFTER_THE_HANDSHAKE).items():
        assert not loaded, f"importing {module} loads {shown(loaded)}"


def package_imports() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports anywhere in its text: at the
    top, inside a function (a deferred import is still a dependency) or for type checking only."""
    root = Path(memtree_mcp.__file__).parent
    modules: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = ("memtree_mcp", *path.relative_to(root).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    imports: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base])
                targets = [base.strip("."), *(f"{base}.{alias.name}".strip(".") for alias in node.names)]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                # A module's own package (its __init__) runs before it anyway: not an edge.
                if target and target != name and not name.startswith(target + "."):
                    imports[name].add(target)
    return imports


def test_no_module_of_the_package_imports_itself_back_through_others() -> None:
    imports = package_imports()

    def path_back(start: str) -> list[str] | None:
        paths = [[start]]
        seen: set[str] = set()
        while paths:
            path = paths.pop()
            for target in sorted(imports[path[-1]]):
                if target == start:
                    return [*path, start]
                if target not in seen:
                    seen.add(target)
                    paths.append([*path, target])
        return None

    circles = [circle for module in sorted(imports) if (circle := path_back(module))]
    assert not circles, "import circle: " + " -> ".join(circles[0])


def test_the_read_path_depends_on_nothing_of_the_write_path() -> None:
    imports = package_imports()
    reached, todo = set(), ["memtree_mcp.service.reading"]
    while todo:
        for target in imports[todo.pop()] - reached:
            reached.add(target)
            todo.append(target)
    assert not reached & {"memtree_mcp.service.writing", "memtree_mcp.service.maintenance"}, sorted(reached)


# Which folder may import which (the top-level modules config and errors count as folders). The
# table runs one way, from the ground up: host, core; secrets; config; store, llm; providers;
# service; interchange, hook, server, transports, ui; cli. Each folder's __init__.py states its own line.
MAY_IMPORT: dict[str, set[str]] = {
    "host": set(),
    "core": set(),
    "errors": set(),
    "secrets": {"core"},
    "config": {"core", "host", "secrets", "errors"},
    "store": {"core", "host", "config", "errors"},
    "llm": {"core", "config", "errors"},
    "providers": {"core", "host", "config", "errors", "llm"},
    "service": {"core", "host", "secrets", "config", "errors", "store", "providers", "llm"},
    "interchange": {"core", "secrets", "errors", "service"},
    "hook": {"core", "host", "secrets", "config", "errors", "service", "llm"},
    "server": {"core", "host", "config", "errors", "service", "llm"},
    "transports": {"host", "secrets", "errors"},
    "ui": {"core", "secrets", "errors", "service", "transports"},
    "cli": {
        "core", "host", "secrets", "config", "errors", "store", "providers", "llm", "service",
        "interchange", "hook", "server", "transports", "ui",
    },
    # The package itself hands on the public API; ``python -m memtree_mcp`` runs the CLI.
    "__init__": {"config", "service"},
    "__main__": {"cli"},
}  # fmt: skip


def folder_of(module: str) -> str:
    """``memtree_mcp.service.reading`` -> ``service``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_the_package_root_holds_only_its_entry_points_the_settings_the_errors_and_folders() -> None:
    root = Path(memtree_mcp.__file__).parent
    modules = sorted(path.name for path in root.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "config.py", "errors.py"]
    folders = {path.name for path in root.iterdir() if (path / "__init__.py").is_file()}
    assert folders == set(MAY_IMPORT) - {"config", "errors", "__init__", "__main__"}
    for folder in folders:
        doc = ast.get_docstring(ast.parse((root / folder / "__init__.py").read_text()))
        assert doc and "may import" in doc.lower(), f"{folder}/__init__.py must say what it may import"


def test_every_import_keeps_to_the_table_of_folders() -> None:
    wrong = [
        f"{module} imports {target}"
        for module, targets in package_imports().items()
        for target in sorted(targets)
        if folder_of(target) != folder_of(module) and folder_of(target) not in MAY_IMPORT[folder_of(module)]
    ]
    assert not wrong, "imports against the table (tests/test_layers.py MAY_IMPORT): " + "; ".join(wrong)


def test_the_table_of_folders_runs_one_way() -> None:
    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in MAY_IMPORT[start]
        )

    assert not [folder for folder in MAY_IMPORT if reaches(folder, folder, {folder})]


MODULE_LINES = 600
# Modules allowed past MODULE_LINES, each with why splitting it would cost more than it gives.
LONG_MODULES = {
    "store/table.py": "one object, NamespaceTable, whose reads, commits, following and rewrites all "
    "share its view of the table (rows seen, revision, generation, write guard); split, each half "
    "would reach into the other's state",
    "core/indexes/lexical.py": "one BM25 index with its packed postings and its tokeniser; they are tuned "
    "together (docs/findings/recall-quality.md) and read together",
    "llm/prompts.py": "every prompt sent to a model and the parsing of every answer in one place, so "
    "that the fencing of memory text against prompt injection is reviewed in one file",
    "core/trees/temporal.py": "one tree, TemporalTree, whose ways in (a memory at the end, a memory placed "
    "inside its time, a removal, a new level) share its levels, frontier, calendar and time-order "
    "index; split, each would reach into the others' state",
    "service/spaces.py": "one object, Spaces, that owns every open namespace with its locks, table, "
    "followers, zone and snapshot; whatever reads or writes a namespace goes through it",
    "service/memory_service.py": "the facade: one short method per operation the server, the CLI and "
    "the explorer call, each handing to its part; split, the API would be in two places",
    "core/memory.py": "one object, Memory, whose every change (a load, a leaf added or removed, what "
    "another process committed) is followed by both trees, every index and the links together; split, "
    "each part would reach into the others' state",
}
FUNCTION_LINES = 150
CLI_FUNCTION_LINES = 60  # a command reads as a few steps; the work is in the service


def test_every_module_and_function_stays_small_enough_to_read_whole() -> None:
    root = Path(memtree_mcp.__file__).parent
    too_long = []
    for path in sorted(root.rglob("*.py")):
        text, name = path.read_text(), str(path.relative_to(root))
        if len(text.splitlines()) > MODULE_LINES and name not in LONG_MODULES:
            too_long.append(f"{name}: {len(text.splitlines())} lines")
        limit = CLI_FUNCTION_LINES if name.startswith("cli/") else FUNCTION_LINES
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    too_long.append(f"{name}: {node.name} is {length} lines (at most {limit})")
    assert not too_long, "split these by job, or say why not in LONG_MODULES: " + "; ".join(too_long)


def test_each_long_module_on_the_list_is_still_long() -> None:
    root = Path(memtree_mcp.__file__).parent
    shrunk = [name for name in LONG_MODULES if len((root / name).read_text().splitlines()) <= MODULE_LINES]
    assert not shrunk, f"no longer over {MODULE_LINES} lines: take them off LONG_MODULES: {shrunk}"
