"""The estimation core stays pure: no Qt, no plotting, no user directories, no upward imports.

Three checks: what importing the core actually loads (a fresh interpreter), what the core's
source files import (static, with ``ast``), and the import-linter contract in pyproject.toml.
"""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "gpuadvisor" / "core"
FORBIDDEN_EXTERNAL = ("PySide6", "shiboken6", "pyqtgraph", "platformdirs")
FORBIDDEN_INTERNAL = ("gpuadvisor.gui", "gpuadvisor.storage", "gpuadvisor.cli")


def _core_modules():
    names = [
        "gpuadvisor.core.estimation.estimate",
        "gpuadvisor.core.presentation.serialize",
        "gpuadvisor.core.formats.scenario",
        "gpuadvisor.core.formats.hf_import",
    ]
    for p in sorted(CORE.rglob("*.py")):
        parts = p.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if name not in names:
            names.append(name)
    return names


def test_importing_the_core_loads_no_gui_or_user_dir_modules():
    code = (
        "import importlib, sys\n"
        f"for name in {_core_modules()!r}:\n"
        "    importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN_EXTERNAL!r}\n"
        f"             or m.startswith({FORBIDDEN_INTERNAL!r}))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "[]"


def test_brief_purity_command():
    """The one-liner: importing the estimate, its JSON form, scenarios and HF import loads no GUI module."""
    mods = (
        "gpuadvisor.core.estimation.estimate, gpuadvisor.core.presentation.serialize, "
        "gpuadvisor.core.formats.scenario, gpuadvisor.core.formats.hf_import"
    )
    code = (
        f"import {mods}; import sys; bad=[m for m in sys.modules if m.split('.')[0] in "
        "('PySide6','pyqtgraph','platformdirs','shiboken6')]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _imports(path: Path):
    """(module imported, line) for every import statement, relative imports resolved."""
    package = ["gpuadvisor", "core"]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, node.lineno
            for alias in node.names:  # "from .. import cli" imports gpuadvisor.cli
                yield f"{module}.{alias.name}", node.lineno


def _is_forbidden(module: str) -> bool:
    top = module.split(".")[0]
    return top in FORBIDDEN_EXTERNAL or any(
        module == f or module.startswith(f + ".") for f in FORBIDDEN_INTERNAL
    )


CORE_FILES = sorted(CORE.rglob("*.py"))


def test_core_has_source_files():
    assert len(CORE_FILES) >= 8


@pytest.mark.parametrize("path", CORE_FILES, ids=[p.name for p in CORE_FILES])
def test_core_source_imports_nothing_forbidden(path):
    bad = [(m, line) for m, line in _imports(path) if _is_forbidden(m)]
    assert not bad, f"{path.name} imports {bad}"


def test_static_check_detects_forbidden_imports(tmp_path):
    """The checker itself: it must flag every form of a forbidden import."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import PySide6.QtCore\nfrom pyqtgraph import PlotWidget\nimport platformdirs as pd\n"
        "from .. import cli\nfrom ..gui import window\nfrom gpuadvisor.storage import x\n"
        "def f():\n    import shiboken6\n",
        encoding="utf-8",
    )
    flagged = {line for m, line in _imports(sample) if _is_forbidden(m)}
    assert flagged == {1, 2, 3, 4, 5, 6, 8}
    clean = tmp_path / "clean.py"
    clean.write_text(
        "import json\nfrom . import units\nfrom .errors import InputError\nimport numpy\n", encoding="utf-8"
    )
    assert not [m for m, _ in _imports(clean) if _is_forbidden(m)]


def _lint_imports() -> str | None:
    venv = Path(sys.executable).parent / "lint-imports"
    if venv.exists():
        return str(venv)
    candidate = REPO / ".venv" / "bin" / "lint-imports"
    return str(candidate) if candidate.exists() else shutil.which("lint-imports")


def test_import_linter_contract_holds():
    exe = _lint_imports()
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    proc = subprocess.run([exe, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "KEPT" in proc.stdout and "BROKEN" not in proc.stdout
