"""The import check generated from docs/ARCHITECTURE.md's layer table (no Django needed).

The table is read at test time: each row is a layer; its "where" cell names the folders and
files it holds (code spans outside parentheses; a path ending in `/` is a folder and all it
holds, paths are relative to `sessions_app/` unless they start with `sessions_app/` or
`piweb/`), and its "may import" cell lists, separated by commas or semicolons:

- layer names (the table's first column), with remarks in parentheses;
- code spans naming modules of the app (`selectors/access`, `rendering.py`, `piweb.celery`);
- from an item that starts with `never` to the end of the cell: code spans naming modules (of the app,
  or of any package: `django`, `django.template`) that the layer may never import,
  whatever else allows it;
- remarks wholly in parentheses, and `—` (nothing).

A module belongs to the layer with the longest matching path. It may import its own layer
and what its row allows; anything of the app (`sessions_app`, `piweb`) it imports besides
is a break, and so is anything named after `never`. Outside packages are otherwise not
checked. An item the checker cannot resolve, a path that names nothing, or a module of the
app that no row claims fails the check: the document and the check cannot drift apart.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
PACKAGES = ("sessions_app", "piweb")
SKIPPED = ("migrations",)  # generated code, checked by Django itself


class TableError(Exception):
    """The table says something the checker cannot read."""


@dataclass
class Layer:
    name: str
    paths: list[tuple[str, bool]]  # (dotted name, a folder: everything under it)
    allowed: set[str] = field(default_factory=set)  # layer names
    allowed_modules: set[str] = field(default_factory=set)  # dotted prefixes
    never: set[str] = field(default_factory=set)  # dotted prefixes, any package


@dataclass(frozen=True)
class Break:
    module: str
    layer: str
    imported: str
    why: str

    def __str__(self) -> str:
        return f"{self.module} ({self.layer}) imports {self.imported}: {self.why}"


# --- reading the table -----------------------------------------------------------------


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_rows(markdown: str) -> list[dict[str, str]]:
    """The rows of the table whose header has `layer`, `where` and `may import`."""
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and {"layer", "where", "may import"} <= set(_cells(line)):
            header = _cells(line)
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(header, _cells(row), strict=True)))
            return rows
    raise TableError("no table with the columns layer, where, may import")


def _outside_parentheses(text: str) -> str:
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _items(cell: str) -> list[str]:
    """Split at commas and semicolons outside parentheses and code spans."""
    items, current, depth, in_code = [], [], 0, False
    for ch in cell:
        if ch == "`":
            in_code = not in_code
        elif not in_code and ch == "(":
            depth += 1
        elif not in_code and ch == ")":
            depth -= 1
        if ch in ",;" and depth == 0 and not in_code:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    items.append("".join(current).strip())
    return [item for item in items if item]


def _spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def module_name(span: str, root: Path = ROOT) -> str:
    """A path (`selectors/access`, `rendering.py`, `sessions_app/core/`) or a dotted name
    (`piweb.celery`, `django.template`) as a dotted module name."""
    if "/" not in span and not span.endswith(".py"):
        return span
    path = span.rstrip("/").removesuffix(".py").removesuffix("/__init__")
    if path == "__init__":
        return "sessions_app"
    if not path.startswith(PACKAGES):
        path = f"sessions_app/{path}"
    return path.replace("/", ".")


def _exists(dotted: str, root: Path) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.is_dir() or base.with_suffix(".py").is_file()


def parse_layers(markdown: str, root: Path = ROOT) -> list[Layer]:
    layers = []
    for row in table_rows(markdown):
        name = row["layer"].strip("*` ")
        paths = [
            (module_name(s), s.endswith("/")) for s in _spans(_outside_parentheses(row["where"]))
        ]
        if not paths:
            raise TableError(f"layer {name!r}: its where cell names no path")
        layers.append(Layer(name, paths))
    names = {layer.name for layer in layers}
    for layer, row in zip(layers, table_rows(markdown), strict=True):
        items = _items(row["may import"])
        first_never = next(
            (i for i, item in enumerate(items) if item.startswith("never")), len(items)
        )
        for item in items[:first_never]:
            _read_item(layer, item, names)
        for item in items[first_never:]:
            spans = _spans(item)
            if not spans:
                raise TableError(f"layer {layer.name!r}: {item!r} names no module")
            layer.never.update(module_name(span) for span in spans)
    for layer in layers:
        for dotted, _ in layer.paths:
            if dotted.startswith(PACKAGES) and not _exists(dotted, root):
                # (templates/ and static/ hold no module: a folder that exists will do)
                if not any((root / p).is_dir() for p in _folder_candidates(dotted)):
                    raise TableError(f"layer {layer.name!r}: {dotted} does not exist")
        for dotted in layer.allowed_modules:
            if dotted.startswith(PACKAGES) and not _exists(dotted, root):
                raise TableError(f"layer {layer.name!r} may import {dotted}, which does not exist")
    return layers


def _folder_candidates(dotted: str) -> list[str]:
    return ["/".join(dotted.split(".")), "/".join(dotted.split(".")[1:])]


def _read_item(layer: Layer, item: str, names: set[str]) -> None:
    plain = item.strip().strip("*").strip()
    if plain in ("—", "-") or (plain.startswith("(") and plain.endswith(")")):
        return
    spans = _spans(_outside_parentheses(plain))
    if spans:
        layer.allowed_modules.update(module_name(s) for s in spans)
        return
    word = re.sub(r"^the ", "", _outside_parentheses(plain).strip().lower()).strip()
    if word not in names:
        raise TableError(f"layer {layer.name!r}: cannot read {item!r} (not a layer name)")
    layer.allowed.add(word)


# --- reading the code ------------------------------------------------------------------


def _is_within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def module_of(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every name a module imports, absolute: `from x import y` gives x.y (or x itself for
    `*`), relative imports resolved against `module`. Imports inside functions count."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            names.update(base if a.name == "*" else f"{base}.{a.name}" for a in node.names)
    return names


def resolve(name: str, root: Path = ROOT) -> str:
    """The longest prefix of a dotted name that is a module or package of the app."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if _exists(".".join(parts[:end]), root):
            return ".".join(parts[:end])
    return name


def layer_of(module: str, layers: list[Layer]) -> tuple[Layer | None, str]:
    """The layer whose longest path holds the module (a file path only itself)."""
    best, best_path = None, ""
    for layer in layers:
        for path, folder in layer.paths:
            held = _is_within(module, path) if folder else module == path
            if held and len(path) > len(best_path):
                best, best_path = layer, path
    return best, best_path


def check_module(
    module: str, source: str, layers: list[Layer], root: Path = ROOT, is_package: bool = False
) -> list[Break]:
    layer, _ = layer_of(module, layers)
    if layer is None:
        return [Break(module, "none", "-", "no row of the table claims this module")]
    found = []
    for name in sorted(imports_of(source, module, is_package)):
        target = resolve(name, root) if name.startswith(PACKAGES) else name
        banned = [p for p in layer.never if _is_within(name, p) or _is_within(target, p)]
        if banned:
            found.append(Break(module, layer.name, name, f"the table says never {banned[0]}"))
            continue
        if not target.startswith(PACKAGES):
            continue  # the standard library and outside packages
        if target in PACKAGES:
            continue  # the bare package (`from sessions_app import x` also gives x)
        if any(_is_within(target, p) for p in layer.allowed_modules):
            continue
        other, _ = layer_of(target, layers)
        if other is None:
            found.append(Break(module, layer.name, name, "no row of the table claims it"))
        elif other is not layer and other.name not in layer.allowed:
            allowed = sorted(layer.allowed | layer.allowed_modules) or ["nothing of the app"]
            found.append(
                Break(
                    module,
                    layer.name,
                    name,
                    f"{layer.name} may import {', '.join(allowed)}; not {other.name}",
                )
            )
    return found


def app_modules(root: Path = ROOT) -> list[Path]:
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if not any(part in SKIPPED for part in path.relative_to(root).parts):
                found.append(path)
    return found


def check_tree(root: Path = ROOT, markdown: str | None = None) -> list[Break]:
    layers = parse_layers(markdown if markdown is not None else DOC.read_text(), root)
    breaks = []
    for path in app_modules(root):
        breaks += check_module(
            module_of(path, root), path.read_text(), layers, root, path.name == "__init__.py"
        )
    return breaks
