"""The replica manager is the only way into the logs: no request handler module imports
`broker.log` (at top level, inside a function or under `TYPE_CHECKING`) or touches a
partition's log or the log manager, only the replica manager's append module appends to a
leader's log, and the acks=all wait (Kafka's DelayedProduce) exists once, next to the long
poll's (DelayedFetch)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.unit.test_imports import PACKAGES, import_graph, module_files

HANDLERS = "broker.apis"
LOG = "broker.log"
APPEND = "broker.replica.append"
# A leader's log is appended to by the replica manager's appends, through the Partition.
LEADER_APPENDS = {APPEND: 2, "broker.replica.partition": 2}
# Every wait in the replica manager's purgatory: (module, kind of delayed operation).
PURGATORY_WAITS = [(APPEND, "Produce"), ("broker.replica.fetch", "Fetch")]


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def log_imports_of_handlers(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Handler module -> the `broker.log` modules it imports, however it imports them."""
    graph = import_graph(module_files(root, packages))
    found = {name: {t for t in targets if _within(t, LOG)}
             for name, targets in graph.items() if _within(name, HANDLERS)}
    return {name: targets for name, targets in found.items() if targets}


def _calls(root: Path, packages: tuple[str, ...]) -> list[tuple[str, ast.Call]]:
    return [(name, node) for name, path in module_files(root, packages).items()
            for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)]


def log_reaches_of_handlers(root: Path, packages: tuple[str, ...]) -> list[str]:
    """`module:line` of every `.log` or `.log_manager` attribute a handler module reads."""
    return [f"{name}:{node.lineno}" for name, path in module_files(root, packages).items()
            if _within(name, HANDLERS)
            for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Attribute) and node.attr in ("log", "log_manager")]


def leader_appends(root: Path, packages: tuple[str, ...]) -> dict[str, int]:
    """Module -> how many calls it makes to `append_as_leader` or `append_marker`."""
    sites: dict[str, int] = {}
    for name, call in _calls(root, packages):
        if call.func.attr in ("append_as_leader", "append_marker"):  # type: ignore[attr-defined]
            sites[name] = sites.get(name, 0) + 1
    return sites


def purgatory_waits(root: Path, packages: tuple[str, ...]) -> list[tuple[str, str]]:
    """(module, kind) of every `<...>.purgatory.watch(keys, kind)` or `purgatory.watch(...)`
    call; kind "" when not given as a literal."""
    waits = []
    for name, call in _calls(root, packages):
        func = call.func
        owner = func.value  # type: ignore[attr-defined]
        if func.attr != "watch" or not (  # type: ignore[attr-defined]
                (isinstance(owner, ast.Attribute) and owner.attr == "purgatory")
                or (isinstance(owner, ast.Name) and "purgatory" in owner.id.lower())):
            continue
        kinds = [a for a in call.args[1:2]] + [k.value for k in call.keywords if k.arg == "kind"]
        kind = next((k.value for k in kinds if isinstance(k, ast.Constant)), "")
        waits.append((name, kind))
    return sorted(waits)


def test_no_handler_module_imports_the_log_layer() -> None:
    assert len([m for m in module_files(REPO_ROOT, PACKAGES) if _within(m, HANDLERS)]) > 20
    assert log_imports_of_handlers(REPO_ROOT, PACKAGES) == {}


def test_no_handler_reaches_into_a_log() -> None:
    assert log_reaches_of_handlers(REPO_ROOT, PACKAGES) == []


def test_only_the_replica_managers_appends_reach_a_leader_log() -> None:
    assert leader_appends(REPO_ROOT, PACKAGES) == LEADER_APPENDS


def test_one_acks_all_wait_and_one_long_poll() -> None:
    assert purgatory_waits(REPO_ROOT, PACKAGES) == PURGATORY_WAITS


def _plant(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for parent in path.relative_to(root).parents:
            init = root / parent / "__init__.py"
            if parent != Path(".") and not init.exists():
                init.write_text("")


def test_the_checks_find_log_imports_appends_and_waits_anywhere(tmp_path: Path) -> None:
    _plant(tmp_path, {
        "broker/log/errors.py": "class LogError(Exception): ...\n",
        "broker/log/results.py": "X = 1\n",
        "broker/apis/top.py": "import broker.log.errors\n",
        "broker/apis/inside.py": "def later():\n    from broker.log.results import X\n    return X\n",
        "broker/apis/typing_only.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from broker import log\n",
        "broker/apis/clean.py": "from broker.replica import append\n",
        "broker/apis/reach.py": "def lso(partition):\n    return partition.log.last_stable_offset\n",
        "broker/apis/dirs.py": "def dirs(replicas):\n    return replicas.log_manager.log_dirs\n",
        "broker/replica/append.py": "async def wait(replicas):\n"
                                    "    with replicas.purgatory.watch([], 'Produce'):\n"
                                    "        pass\n",
        "broker/group/own_wait.py": "async def append(replicas, partition, batch):\n"
                                    "    partition.append_as_leader(batch, -1)\n"
                                    "    with replicas.purgatory.watch([partition.key]) as w:\n"
                                    "        await w.wait()\n",
    })
    packages = ("broker",)
    assert log_imports_of_handlers(tmp_path, packages) == {
        "broker.apis.top": {"broker.log.errors"},
        "broker.apis.inside": {"broker.log.results"},
        "broker.apis.typing_only": {"broker.log"},
    }
    assert sorted(log_reaches_of_handlers(tmp_path, packages)) == [
        "broker.apis.dirs:2", "broker.apis.reach:2"]
    assert leader_appends(tmp_path, packages) == {"broker.group.own_wait": 1}
    assert purgatory_waits(tmp_path, packages) == [
        ("broker.group.own_wait", ""), ("broker.replica.append", "Produce")]
