"""Every project module imports on its own, first: an import cycle that only bites when a
particular module is loaded before the others fails here, not in some later test's collection."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO_ROOT

PACKAGES = ("broker", "clients", "kraft", "metadata")

_CHECK = """
import importlib, pkgutil, sys
packages = sys.argv[1:]
names = []
for package in packages:
    names.append(package)
    root = importlib.import_module(package)
    names += [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
failures = []
for name in names:
    for loaded in [m for m in sys.modules if m.split(".")[0] in packages]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failures.append(f"{name}: {exc!r}")
print(len(names))
print("\\n".join(failures))
"""


def test_every_module_imports_first() -> None:
    result = subprocess.run([sys.executable, "-c", _CHECK, *PACKAGES], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    count, *failures = result.stdout.splitlines()
    assert int(count) > 100
    assert not [f for f in failures if f], "\n".join(failures)
