"""``import bayeval`` and the command's start load no heavy dependency until it is used."""

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = [
    "pymc",
    "pytensor",
    "numba",
    "scipy.stats",
    "statsmodels",
    "arviz_stats",
    "arviz_base",
    "matplotlib",
]


@pytest.mark.parametrize(
    "statement", ["import bayeval", "import bayeval.cli; bayeval.cli.main.to_info_dict"]
)
def test_start_is_light(statement):
    code = (
        f"import sys; {statement}; heavy = {HEAVY!r}; print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_load_on_use():
    import bayeval as be

    assert callable(be.fit) and callable(be.crosscheck)  # functions, not their modules
    import bayeval.analyses.crosscheck  # noqa: F401
    from bayeval.inference import choose_model  # importing the module keeps the function bound

    assert callable(be.fit) and callable(be.crosscheck) and callable(choose_model)
    assert set(be.__all__) <= set(dir(be))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        be.nothing  # noqa: B018 - the attribute access is what raises


# -- the package's shape ----------------------------------------------------------------------
PACKAGE = Path(__import__("bayeval").__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict) -> list[tuple[str, int, bool]]:
    """``(imported module, line, inside a function)`` for every bayeval import of a module."""
    tree = ast.parse(path.read_text())
    in_function = {
        id(node)
        for func in ast.walk(tree)
        if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(func)
    }
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.append((target, node.lineno, id(node) in in_function))
    return found


def test_the_import_graph_has_no_cycle_with_function_level_imports_counted():
    modules = _modules()
    graph = {
        name: {t for t, _, _ in _imports(name, path, modules)} for name, path in modules.items()
    }
    state: dict[str, int] = {}

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])


def test_imports_inside_functions_say_what_they_defer():
    modules = _modules()
    undeclared = []
    for name, path in modules.items():
        lines = path.read_text().splitlines()
        for target, line, inside in _imports(name, path, modules):
            if inside and "defer" not in lines[line - 1]:
                undeclared.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert not undeclared, "\n".join(undeclared)


def test_public_names_come_from_public_modules():
    import bayeval as be
    from bayeval import bootstrap

    for namespace, names in ((be, be.__all__), (bootstrap, bootstrap.__all__)):
        for name in names:
            value = getattr(namespace, name)
            if not (inspect.ismodule(value) or callable(value)):
                continue  # a constant (STATUSES) has no module of its own
            module = value.__name__ if inspect.ismodule(value) else value.__module__
            private = [part for part in module.split(".") if part.startswith("_")]
            assert not private, f"{namespace.__name__}.{name} is defined in {module}"


@pytest.mark.parametrize(
    ("posterior", "twin", "shared"),
    [
        (
            "compare",
            "compare",
            {"metric", "k", "ci_prob", "margin", "tau", "weighting", "clusters"},
        ),
        ("pass_at_k", "pass_at_k", {"k", "weighting", "clusters"}),
    ],
)
def test_twins_take_their_shared_settings_by_the_same_keyword(posterior, twin, shared):
    import bayeval as be
    from bayeval.results import Results

    for function in (getattr(Results, posterior), getattr(be.bootstrap, twin)):
        params = inspect.signature(function).parameters
        for name in shared:
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, (function, name)
