"""Every project module imports on its own, first (an import cycle that only bites when a
particular module is loaded before the others fails here, not in some later test's
collection), and no modules import each other in a cycle, counting imports inside functions
and under `TYPE_CHECKING`."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

PACKAGES = ("broker", "clients", "cluster", "kraft", "metadata")

_CHECK = """
import importlib, os, pkgutil, sys
packages = sys.argv[1:]
names = []
for package in packages:
    names.append(package)
    root = importlib.import_module(package)
    names += [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
# Everything once, so that the libraries they use are loaded; then no project module is.
for name in names:
    try:
        importlib.import_module(name)
    except Exception:
        pass
for loaded in [m for m in sys.modules if m.split(".")[0] in packages]:
    del sys.modules[loaded]
# Each module first, in a child forked from this state, a few at a time.
read_end, write_end = os.pipe()
running = {}
failures = []
def reap():
    pid, status = os.wait()
    name = running.pop(pid)
    if status:
        failures.append(name)
for name in names:
    while len(running) >= (os.cpu_count() or 1):
        reap()
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException as exc:
            os.write(write_end, f"{name}: {exc!r}\\n".encode())
            os._exit(1)
        os._exit(0)
    running[pid] = name
while running:
    reap()
os.close(write_end)
reasons = b""
while chunk := os.read(read_end, 65536):
    reasons += chunk
print(len(names))
print(reasons.decode() or "\\n".join(f"{name}: failed" for name in failures))
"""


def test_every_module_imports_first() -> None:
    result = subprocess.run([sys.executable, "-c", _CHECK, *PACKAGES], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    count, *failures = result.stdout.splitlines()
    assert int(count) > 100
    assert not [f for f in failures if f], "\n".join(failures)


def module_files(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> source file, for every module of `packages` under `root`."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its source: at top level, inside
    functions and under `if TYPE_CHECKING:` alike (a deferred import is still a dependency)."""

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(resolve(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                    package = package[:len(package) - node.level + 1]
                    base = ".".join(package + ([node.module] if node.module else []))
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.add(submodule if submodule in modules else resolve(base))
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (each one or more cycles)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycles_between_project_modules() -> None:
    graph = import_graph(module_files(REPO_ROOT, PACKAGES))
    assert len(graph) > 100
    assert import_cycles(graph) == []


def test_a_cycle_hidden_in_a_function_or_under_type_checking_is_found(tmp_path: Path) -> None:
    package = tmp_path / "planted"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from planted.b import B\n")
    (package / "b.py").write_text("def later():\n    from planted import c\n    return c\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n")
    (package / "d.py").write_text("import planted.a\n")
    graph = import_graph(module_files(tmp_path, ("planted",)))
    assert import_cycles(graph) == [["planted.a", "planted.b", "planted.c"]]
    (package / "c.py").write_text("X = 1\n")
    assert import_cycles(import_graph(module_files(tmp_path, ("planted",)))) == []
