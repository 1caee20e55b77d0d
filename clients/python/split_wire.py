"""Move the API's wire records into `loci/wire/` (the package the light client distribution ships) and
leave re-export shims where they were, so every existing import keeps working.

    .venv/bin/python clients/python/split_wire.py        # from the repository root

`MOVES` says which definitions go where: each source module gives its roots (or all of its definitions),
and the definitions they use, in that module or in another source module, follow them. Each module of
`loci/wire/` is written from its one source module, so re-running the script after a merge brought a
source module back with new fields or types moves them too; a source module that is already a shim is
left alone. The moved code must use nothing but the standard library, msgspec and other moved
definitions: the script stops and names the import otherwise.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ALL = ("*",)
PROJECT_PACKAGES = ("engine", "server", "evals")


@dataclass(frozen=True)
class Move:
    source: str
    target: str
    roots: tuple[str, ...] = ALL
    #: the target module's docstring (a whole module's move keeps its own)
    doc: str | None = None


MOVES = (
    Move(
        "engine/models.py",
        "loci/wire/models.py",
        ("Memory", "Entity", "MEMORY_TYPES", "STATUSES", "NOT_BLANK_PATTERN"),
        "The API's memory records, and the limits of their fields as constrained types: the server\n"
        "validates with them and the OpenAPI document shows them.",
    ),
    Move(
        "engine/memory_service.py",
        "loci/wire/writes.py",
        ("MemoryCreate", "MemoryPatch", "MAX_BATCH"),
        "A memory as a client writes it (POST /v0/memories) and the fields a PATCH may change.",
    ),
    Move(
        "engine/prune.py",
        "loci/wire/prune.py",
        ("PruneRequest", "PruneResult"),
        "POST /v0/prune: the rules that select memories, the action, and what was (or would be) pruned.",
    ),
    Move(
        "engine/retrieval/presets.py",
        "loci/wire/presets.py",
        ("PresetName", "Weights"),
        "The names of the retrieval presets and the channel weights a response reports.",
    ),
    Move(
        "engine/retrieval/normalize/__init__.py",
        "loci/wire/normalize.py",
        ("NormalizationName",),
        "The names of the score normalizations.",
    ),
    Move(
        "engine/retrieval/tokens.py",
        "loci/wire/tokens.py",
        ("TokenizerName", "TOKENIZERS", "DEFAULT_TOKENIZER"),
        "The names of the tokenizers a budget is counted in.",
    ),
    Move("engine/summarize.py", "loci/wire/summarize.py", ("Origin",), "Where a summary came from."),
    Move("engine/redact/policy.py", "loci/wire/redact.py"),
    Move("engine/retrieval/options.py", "loci/wire/options.py"),
    Move("engine/write/results.py", "loci/wire/results.py"),
    Move("engine/retrieval/responses.py", "loci/wire/responses.py"),
    Move("server/schemas/errors.py", "loci/wire/errors.py"),
    Move("server/schemas/health.py", "loci/wire/health.py"),
    Move("server/schemas/memories.py", "loci/wire/memories.py"),
    Move("server/schemas/ops.py", "loci/wire/ops.py"),
)


def module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def bound_names(node: ast.stmt) -> list[str]:
    """The names a top-level definition binds (none for imports, docstrings and other statements)."""
    if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
        return [node.name]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    return []


def used_names(node: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


@dataclass
class Source:
    move: Move
    text: str
    tree: ast.Module
    #: name -> its top-level definition
    defs: dict[str, ast.stmt] = field(default_factory=dict)
    #: name -> (module, name there) of its `from ... import`
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)
    wanted: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, move: Move) -> Source:
        text = (ROOT / move.source).read_text()
        source = cls(move, text, ast.parse(text))
        for node in source.tree.body:
            for name in bound_names(node):
                source.defs[name] = node
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    source.imported[alias.asname or alias.name] = (node.module, alias.name)
        return source

    @property
    def pending(self) -> bool:
        """Whether its definitions are still here (not yet moved: this module is not a shim)."""
        roots = self.defs.keys() - {"__all__"} if self.move.roots == ALL else set(self.move.roots)
        present = roots & self.defs.keys()
        if present and present != roots:
            raise SystemExit(f"{self.move.source}: {sorted(roots - present)} are gone, the rest is not")
        return bool(present)


def target_names(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return {name for node in ast.parse(path.read_text()).body for name in bound_names(node)}


class Plan:
    def __init__(self) -> None:
        # a source module that does not exist (yet) on this branch is skipped
        self.sources = [Source.read(m) for m in MOVES if (ROOT / m.source).exists()]
        self.by_module = {module_name(s.move.source): s for s in self.sources}
        self.pending = [s for s in self.sources if s.pending]
        for s in self.pending:
            s.wanted = set(s.defs) if s.move.roots == ALL else set(s.move.roots)
        self._close()

    def home(self, module: str, name: str) -> Source | None:
        """The source module whose move takes `name` (imported from `module`), if any."""
        direct = self.by_module.get(module)
        if direct is not None:
            return direct
        owners = [s for s in self.sources if name in s.defs or name in target_names(ROOT / s.move.target)]
        if len(owners) > 1:
            raise SystemExit(f"{name} (from {module}) is defined in several moved modules")
        return owners[0] if owners else None

    def _close(self) -> None:
        """Add every definition the wanted ones use, in their module or in another source module."""
        changed = True
        while changed:
            changed = False
            for s in self.pending:
                for name in list(s.wanted):
                    for used in used_names(s.defs[name]):
                        if used in s.defs and used not in s.wanted:
                            s.wanted.add(used)
                            changed = True
                        elif used in s.imported and s.imported[used][0].startswith(PROJECT_PACKAGES):
                            module, original = s.imported[used]
                            home = self.home(module, original)
                            if home in self.pending and original not in home.wanted:
                                home.wanted.add(original)
                                changed = True

    def target_of(self, module: str, name: str) -> str | None:
        home = self.home(module, name)
        if home is None:
            return None
        if name in home.wanted or name in target_names(ROOT / home.move.target):
            return module_name(home.move.target)
        return None


def segment(lines: list[str], node: ast.stmt) -> tuple[int, int]:
    """0-based [start, end) of a definition with its decorators and the comment lines right above it."""
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    assert node.end_lineno is not None
    return start, node.end_lineno


def rewritten_import(node: ast.ImportFrom, plan: Plan) -> str | None:
    """The import lines of the target module for one `from ... import` of its source (None: unchanged)."""
    if node.module is None or not node.module.startswith(PROJECT_PACKAGES):
        return None
    groups: dict[str, list[str]] = {}
    for alias in node.names:
        target = plan.target_of(node.module, alias.name) or node.module
        groups.setdefault(target, []).append(alias.name + (f" as {alias.asname}" if alias.asname else ""))
    return "\n".join(f"from {module} import {', '.join(names)}" for module, names in groups.items())


def write_target(s: Source, plan: Plan) -> Path:
    lines = s.text.splitlines()
    doc = ast.get_docstring(s.tree, clean=False) if s.move.roots == ALL else s.move.doc
    out = [f'"""{doc}"""', ""]
    for node in s.tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            new = rewritten_import(node, plan) if isinstance(node, ast.ImportFrom) else None
            out.append(new if new is not None else "\n".join(lines[node.lineno - 1 : node.end_lineno]))
    imports = [n for n in s.tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    previous = max(n.end_lineno or n.lineno for n in imports)
    for node in s.tree.body:  # neighbours in the source keep the blank lines between them
        if set(bound_names(node)) & s.wanted:
            start, end = segment(lines, node)
            between = lines[previous:start]
            out += between if not any(line.strip() for line in between) else ["", ""]
            out += lines[start:end]
            previous = end
    path = ROOT / s.move.target
    path.write_text("\n".join(out) + "\n")
    return path


def write_shim(s: Source) -> Path:
    """The source module without the moved definitions, importing them back from their new home."""
    lines = s.text.splitlines()
    exported = set(s.wanted - {"__all__"})
    listed = s.defs.get("__all__")
    if "__all__" in s.wanted and isinstance(listed, ast.Assign):
        exported |= set(ast.literal_eval(listed.value))  # what it exported from elsewhere stays importable
    shim = [
        "# the API's wire records live in loci.wire (the client distribution ships it); re-exported here",
        f"from {module_name(s.move.target)} import (  # isort: skip",
        *(f"    {n} as {n}," for n in sorted(exported)),
        ")",
    ]
    if s.move.roots == ALL:  # a whole module: its docstring and the re-export
        first = s.tree.body[0]
        doc = lines[: first.end_lineno] if ast.get_docstring(s.tree) is not None else []
        out = [*doc, "", *shim]
    else:
        drop: set[int] = set()
        for node in s.tree.body:
            if set(bound_names(node)) & s.wanted:
                start, end = segment(lines, node)
                drop.update(range(start, end))
        imports = [n for n in s.tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        after = max(n.end_lineno or n.lineno for n in imports)
        out = []
        for i, line in enumerate(lines):
            if i not in drop:
                out.append(line)
            if i == after - 1:
                out += ["", *shim]
    path = ROOT / s.move.source
    path.write_text("\n".join(out) + "\n")
    return path


def main() -> int:
    plan = Plan()
    if not plan.pending:
        print("nothing to move: every source module is already a shim")
        return 0
    touched = []
    for s in plan.pending:
        touched += [write_target(s, plan), write_shim(s)]
        print(f"{s.move.source} -> {s.move.target}: {', '.join(sorted(s.wanted))}")
    ruff = str(Path(sys.executable).with_name("ruff"))
    files = [str(p) for p in touched]
    subprocess.run(
        [ruff, "check", "--quiet", "--fix", "--unsafe-fixes", "--preview", "--select", "I,F401", *files],
        check=False,
    )
    subprocess.run([ruff, "format", "--quiet", *files], check=True)
    for s in plan.pending:
        tree = ast.parse((ROOT / s.move.target).read_text())
        bad = [
            n.module
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith(PROJECT_PACKAGES)
        ]
        if bad:
            raise SystemExit(f"{s.move.target} still imports {bad}: add what it needs to MOVES")
    return 0


if __name__ == "__main__":
    sys.exit(main())
