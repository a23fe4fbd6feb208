"""The import rules between the project's packages (docs/architecture.md): `broker` may
import `clients`, `metadata` and `kraft`; `kraft` may import `metadata`; `metadata` may
import `clients.protocol` only; `clients` (the admin command line `clients.cli` included)
imports none of the others; `cluster`, which runs nodes as processes from outside, may import
`clients`, `metadata` and of the node only `broker.config` (the servers' configs it writes
and reads), and nothing imports `cluster`. And inside each of them the packages (and
top-level modules: `broker.log`, `broker.replica`, `broker.periodic`, `clients.common`,
`metadata.controller`, ...) import each other in no cycle: the producer, consumer and admin
client share `clients.common`, the log and replica layers count in `broker.stats`, not in
the collectors of `broker.metrics`. `broker.group` and `broker.txn` import each other in
neither direction, and `broker.coordinator`, the runtime both use, imports neither. Imports
inside functions and under `TYPE_CHECKING` count."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.unit.test_imports import PACKAGES, import_cycles, import_graph, module_files

# What each top-level package may import besides itself, by package or module prefix.
ALLOWED_IMPORTS: dict[str, tuple[str, ...]] = {
    "broker": ("clients", "metadata", "kraft"),
    "kraft": ("metadata",),
    "metadata": ("clients.protocol",),
    "clients": (),
    "cluster": ("broker.config", "clients", "metadata"),
}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def forbidden_imports(graph: dict[str, set[str]],
                      allowed: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
    """(importer, imported) for every import that crosses into a package its top-level
    package may not import."""
    found = []
    for name, targets in sorted(graph.items()):
        top = name.split(".")[0]
        for target in sorted(targets):
            if target.split(".")[0] != top and not any(
                    _within(target, prefix) for prefix in allowed[top]):
                found.append((name, target))
    return found


def test_each_package_imports_only_what_the_architecture_allows() -> None:
    graph = import_graph(module_files(REPO_ROOT, PACKAGES))
    assert set(ALLOWED_IMPORTS) == set(PACKAGES)
    assert "clients.cli.main" in graph and "broker.cli.main" in graph
    assert forbidden_imports(graph, ALLOWED_IMPORTS) == []


def test_a_forbidden_import_is_found_wherever_it_hides(tmp_path: Path) -> None:
    for package in ("low", "low/cli", "high"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "high/server.py").write_text("import low.cli.tool\n")
    (tmp_path / "low/cli/tool.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from high import server\n")
    (tmp_path / "low/cli/main.py").write_text("def run():\n    from high.server import x\n")
    (tmp_path / "low/ok.py").write_text("from low.cli import tool\n")
    graph = import_graph(module_files(tmp_path, ("low", "high")))
    allowed = {"high": ("low",), "low": ()}
    assert forbidden_imports(graph, allowed) == [("low.cli.main", "high.server"),
                                                 ("low.cli.tool", "high.server")]
    assert forbidden_imports(graph, {"high": ("low.cli",), "low": ("high",)}) == []


# The coordinators are clients of the runtime they share (broker.coordinator), never of
# each other: what one needs of the other's internal topic goes through the runtime.
COORDINATOR_RULES: dict[str, tuple[str, ...]] = {
    "broker.coordinator": ("broker.group", "broker.txn"),
    "broker.group": ("broker.txn",),
    "broker.txn": ("broker.group",),
}


def imports_across(graph: dict[str, set[str]], rules: dict[str, tuple[str, ...]]
                   ) -> list[tuple[str, str]]:
    """(importer, imported) for every module under a package of `rules` that imports one of
    the packages that package may not."""
    return sorted((name, target) for name, targets in graph.items()
                  for package, banned in rules.items() if _within(name, package)
                  for target in targets if any(_within(target, b) for b in banned))


def test_the_coordinators_share_the_runtime_and_import_neither_each_other(
        project_graph: dict[str, set[str]]) -> None:
    assert {"broker.coordinator.runtime", "broker.group.coordinator",
            "broker.txn.state_manager"} <= set(project_graph)
    assert "broker.coordinator.runtime" in project_graph["broker.txn.state_manager"]
    assert "broker.coordinator.runtime" in project_graph["broker.group.coordinator"]
    assert imports_across(project_graph, COORDINATOR_RULES) == []


def test_an_import_between_the_coordinators_is_found(tmp_path: Path) -> None:
    for package in ("broker", "broker/coordinator", "broker/group", "broker/txn"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "broker/txn/state.py").write_text(
        "def later():\n    from broker.group.routing import CONSUMER_OFFSETS_TOPIC\n")
    (tmp_path / "broker/group/routing.py").write_text("from broker.coordinator import log\n")
    (tmp_path / "broker/coordinator/log.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import broker.txn.state\n")
    graph = import_graph(module_files(tmp_path, ("broker",)))
    assert imports_across(graph, COORDINATOR_RULES) == [
        ("broker.coordinator.log", "broker.txn.state"),
        ("broker.txn.state", "broker.group.routing")]


def package_of(name: str, within: str) -> str:
    """The direct subpackage (or top module) of `within` that holds module `name`."""
    return ".".join(name.split(".")[:within.count(".") + 2])


def package_graph(graph: dict[str, set[str]], within: str) -> dict[str, set[str]]:
    """The import graph of `within`'s direct subpackages (and top modules), each one node."""
    def package(name: str) -> str:
        return package_of(name, within)

    packages: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if not name.startswith(within + "."):
            continue
        edges = packages.setdefault(package(name), set())
        edges.update(package(t) for t in targets
                     if t.startswith(within + ".") and package(t) != package(name))
    for targets in list(packages.values()):
        for target in targets:
            packages.setdefault(target, set())
    return packages


def package_cycles(graph: dict[str, set[str]], within: str) -> list[str]:
    """Each cycle between `within`'s packages, as a line naming them and a line for every
    package-to-package import inside it, with the module imports that make that arrow."""
    packages = package_graph(graph, within)
    report = []
    for cycle in import_cycles(packages):
        members = set(cycle)
        report.append("cycle: " + " <-> ".join(cycle))
        for source in cycle:
            for target in sorted(packages[source] & members):
                edges = sorted(f"{name} -> {imported}" for name, imports in graph.items()
                               if package_of(name, within) == source
                               for imported in imports
                               if package_of(imported, within) == target)
                report.append(f"  {source} -> {target}: " + ", ".join(edges))
    return report


@pytest.fixture(scope="module")
def project_graph() -> dict[str, set[str]]:
    return import_graph(module_files(REPO_ROOT, PACKAGES))


@pytest.mark.parametrize("top", PACKAGES)
def test_no_cycle_between_the_packages_inside(project_graph: dict[str, set[str]],
                                              top: str) -> None:
    # `cluster` holds three packages (chaos, launcher, testing); the others many more.
    assert len(package_graph(project_graph, top)) > (2 if top == "cluster" else 5)
    report = package_cycles(project_graph, top)
    assert not report, "\n".join(report)


def test_the_rooms_named_in_the_architecture_are_packages_of_the_graph(
        project_graph: dict[str, set[str]]) -> None:
    broker = package_graph(project_graph, "broker")
    assert {"broker.group", "broker.log", "broker.metrics", "broker.periodic", "broker.replica",
            "broker.stats"} <= set(broker)
    clients = set(package_graph(project_graph, "clients"))
    assert {"clients.admin", "clients.common", "clients.consumer", "clients.producer"} <= clients
    # The hot paths' counters stand below everything else of the broker.
    assert broker["broker.stats"] == set()


def test_a_cycle_between_packages_is_found(tmp_path: Path) -> None:
    for package in ("top", "top/a", "top/b", "top/c"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "top/a/one.py").write_text("def later():\n    from top.b import two\n")
    (tmp_path / "top/b/two.py").write_text("import top.c.three\n")
    (tmp_path / "top/c/three.py").write_text("X = 1\n")
    (tmp_path / "top/c/four.py").write_text("from top.a.one import later\n")
    modules = import_graph(module_files(tmp_path, ("top",)))
    assert import_cycles(modules) == []
    assert import_cycles(package_graph(modules, "top")) == [["top.a", "top.b", "top.c"]]
    assert package_cycles(modules, "top") == [
        "cycle: top.a <-> top.b <-> top.c",
        "  top.a -> top.b: top.a.one -> top.b.two",
        "  top.b -> top.c: top.b.two -> top.c.three",
        "  top.c -> top.a: top.c.four -> top.a.one",
    ]
    (tmp_path / "top/c/four.py").write_text("X = 2\n")
    assert package_cycles(import_graph(module_files(tmp_path, ("top",))), "top") == []
