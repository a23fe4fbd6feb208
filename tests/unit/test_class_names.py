"""One name per concept: no two modules of the project define a public class of the same
name. Classes nested in another (the generated messages' structs, such as
`ProduceRequestData.TopicProduceData`) are named through their owner, and a module's private
classes (`_Reader`) through their module, so neither counts."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.unit.test_imports import PACKAGES, module_files


def public_classes(root: Path, packages: tuple[str, ...]) -> dict[str, list[str]]:
    """Public class name -> the modules that define it at their top level (also inside an
    `if` or `try` there)."""
    found: dict[str, list[str]] = {}
    for name, path in module_files(root, packages).items():
        pending = list(ast.parse(path.read_text(), str(path)).body)
        while pending:
            node = pending.pop()
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                found.setdefault(node.name, []).append(name)
            elif isinstance(node, (ast.If, ast.Try)):
                pending += node.body + node.orelse + getattr(node, "finalbody", [])
                pending += [n for h in getattr(node, "handlers", []) for n in h.body]
    return found


def twice_defined(root: Path, packages: tuple[str, ...]) -> dict[str, list[str]]:
    return {name: sorted(modules) for name, modules in public_classes(root, packages).items()
            if len(modules) > 1}


def test_no_class_name_is_defined_twice() -> None:
    classes = public_classes(REPO_ROOT, PACKAGES)
    assert {"ClassicGroupState", "ConsumerGroupState", "ConfigError", "ConfigKey"} <= set(classes)
    assert twice_defined(REPO_ROOT, PACKAGES) == {}


def test_a_second_definition_is_found(tmp_path: Path) -> None:
    for package in ("one", "two"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "one/model.py").write_text(
        "class State:\n    class Inner:\n        pass\n\nclass _Private:\n    pass\n")
    (tmp_path / "two/model.py").write_text(
        "try:\n    class State:\n        pass\nexcept ImportError:\n    pass\n"
        "class Inner:\n    pass\n\ndef f():\n    class _Private:\n        pass\n")
    assert twice_defined(tmp_path, ("one", "two")) == {"State": ["one.model", "two.model"]}
