"""The package's shape: no import circle anywhere, and the import-linter contracts hold.

docs/architecture.md describes the layers; pyproject.toml declares them as contracts.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("gpuadvisor", cache_dir=None)


def _strongly_connected(nodes, edges):
    """Tarjan's algorithm, iterative: the groups of nodes that reach each other."""
    index, low, on_stack, stack, groups, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    groups.append(sorted(group))
    return groups


def _edges(graph, collapse):
    """importer -> imported, each module name passed through ``collapse`` (self-edges dropped)."""
    edges = {}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = collapse(importer), collapse(imported)
            if a and b and a != b:
                edges.setdefault(a, set()).add(b)
    return edges


def test_no_circle_between_files(graph):
    """Every import counts, TYPE_CHECKING and function-local ones included."""
    edges = _edges(graph, lambda m: m if m.startswith("gpuadvisor") else None)
    circles = [
        g
        for g in _strongly_connected(set(edges) | {m for v in edges.values() for m in v}, edges)
        if len(g) > 1
    ]
    assert circles == []


@pytest.mark.parametrize("package", ["gpuadvisor", "gpuadvisor.core", "gpuadvisor.gui", "gpuadvisor.storage"])
def test_no_circle_between_the_parts_of_a_package(graph, package):
    """A package's children (sub-packages and modules), each standing for everything inside it."""
    depth = package.count(".") + 1

    def child(module):
        parts = module.split(".")
        if not module.startswith(package + ".") or len(parts) <= depth:
            return None
        return ".".join(parts[: depth + 1])

    edges = _edges(graph, child)
    nodes = set(edges) | {m for v in edges.values() for m in v}
    assert [g for g in _strongly_connected(nodes, edges) if len(g) > 1] == []


def test_the_circle_finder_finds_a_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [g for g in _strongly_connected(set("abcd"), edges) if len(g) > 1] == [["a", "b", "c"]]


def test_import_contracts_hold():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.skip("import-linter is not installed")
    proc = subprocess.run([lint, "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


# --- the size of the core's functions -------------------------------------------------------------
#: Most lines a function of the core may span (docs/architecture.md, "Rooms and their size").
MAX_FUNCTION_LINES = 120
#: Core functions allowed above it, with the most lines each may keep: each may only shrink, and
#: leaves this list once it is split. None today: the estimate's stages and the simulation's event
#: loop (its setup, clients and preemption as functions of their own, the step kept inline since a
#: call per step costs about 5% of a run) were the last.
LONG_FUNCTIONS: dict[str, int] = {}


def _core_function_lengths() -> dict[str, int]:
    import ast

    out: dict[str, int] = {}
    for path in sorted((REPO / "gpuadvisor" / "core").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                key = f"{path.relative_to(REPO).as_posix()}:{node.name}"
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                out[key] = max(out.get(key, 0), length)
    return out


def test_no_core_function_grows_past_the_limit():
    lengths = _core_function_lengths()
    over = {k: v for k, v in lengths.items() if v > MAX_FUNCTION_LINES}
    new = {k: v for k, v in over.items() if k not in LONG_FUNCTIONS}
    assert new == {}, f"split these into named steps of at most {MAX_FUNCTION_LINES} lines"
    grown = {k: v for k, v in over.items() if v > LONG_FUNCTIONS[k]}
    assert grown == {}, "a function on the list may only shrink"
    split = sorted(k for k in LONG_FUNCTIONS if lengths.get(k, 0) <= MAX_FUNCTION_LINES)
    assert split == [], "split: take these off LONG_FUNCTIONS"


def test_the_estimates_stages_are_short():
    """estimate() reads as its stages: resolve, setups, per GPU, decide."""
    lengths = _core_function_lengths()
    assert lengths["gpuadvisor/core/estimation/estimate.py:estimate"] <= 90
    assert lengths["gpuadvisor/core/estimation/gpu_rows.py:rows"] <= MAX_FUNCTION_LINES
