"""Every import points down the layer order of docs/architecture.md, and no modules import each
other in a circle. The walk reads every import statement, those inside functions included (a late
import closes a circle as surely as a top-level one)."""
import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("common", "config", "tenancy", "entities", "conversations", "memory", "console", "evaluation")

# Low to high, as docs/architecture.md draws them; the longest matching prefix names a module's layer.
APP_LAYERS = [
    ("common", "config.settings", "config.env", "config.read_path_settings"),
    ("tenancy",),
    ("entities",),
    ("conversations",),
    ("memory",),
    ("config.celery", "config.vector_consumer", "config.consumer_watchdog", "config.health", "config.metrics"),
    ("console",),
    ("evaluation",),
    ("config", "config.urls", "config.wsgi", "config.asgi"),
]
# Inside memory/, low to high.
MEMORY_LAYERS = [
    ("memory", "memory.models", "memory.choices", "memory.thresholds", "memory.onnx_encoder",
     "memory.jobs.run_records", "memory.jobs.beat_schedule", "memory.prompts"),
    ("memory.embeddings", "memory.vector_index", "memory.vectors", "memory.cache"),
    ("memory.extraction", "memory.subjects", "memory.learn"),
    ("memory.enqueue",),
    ("memory.selectors", "memory.recall"),
    ("memory.services", "memory.context"),
    ("memory.projections", "memory.jobs"),
    ("memory.tasks", "memory.receivers", "memory.apps"),
    ("memory.api", "memory.mcp", "memory.mem0", "memory.management"),
]


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def _resolve(name: str, known: dict) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for module, path in known.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                # "from pkg import module" reaches the module; "from pkg import name" reaches pkg.
                names = [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                target = _resolve(name, known)
                # A package reaching its own parent package is Python's import order, not an arrow.
                if target and target != module and not module.startswith(target + "."):
                    graph[module].add(target)
    return graph


def _rank(module: str, layers: list[tuple[str, ...]]) -> int | None:
    best, rank = -1, None
    for index, prefixes in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_walk_sees_late_imports():
    graph = import_graph()
    # memory/receivers.py imports memory.enqueue only inside its function.
    assert "memory.enqueue" in graph["memory.receivers"]
    assert len(graph) > 100


def test_no_import_circle():
    assert _cycles(import_graph()) == []


def test_every_arrow_points_down_the_app_layers():
    up = []
    for module, targets in import_graph().items():
        for target in targets:
            source_rank, target_rank = _rank(module, APP_LAYERS), _rank(target, APP_LAYERS)
            assert source_rank is not None and target_rank is not None, (module, target)
            if target_rank > source_rank:
                up.append(f"{module} -> {target}")
    assert up == []


def test_every_arrow_inside_memory_points_down_its_layers():
    up = []
    for module, targets in import_graph().items():
        if not module.startswith("memory"):
            continue
        for target in targets:
            if not target.startswith("memory"):
                continue
            source_rank, target_rank = _rank(module, MEMORY_LAYERS), _rank(target, MEMORY_LAYERS)
            assert source_rank is not None and target_rank is not None, (module, target)
            if target_rank > source_rank:
                up.append(f"{module} -> {target}")
    assert up == []
