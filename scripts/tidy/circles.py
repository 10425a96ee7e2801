#!/usr/bin/env python3
"""No import circle between the files of one crate: the folders show the layers.

Per crate, a graph of its module files (under crates/<dir>/src/): an edge A -> B when file A names module B by
a path: `use crate::b::X;`, `crate::b::f()` in code, `super::x::Y` (from A's module, inline `mod m { }` blocks
counted), `self::x::Y`, use groups (`use crate::{a::X, b::{c, Y}}`) expanded. A path resolves to the deepest
module file among its prefixes: `crate::x::y::Z` to `x/y.rs` or `x/y/mod.rs` if there is one, else `x.rs` or
`x/mod.rs`, else the crate root. Test code is left out: items under `#[cfg(test)]` (the `mod tests { }` blocks),
files declared by `#[cfg(test)] mod name;`, files named tests.rs and files under a tests/ folder. Comments,
strings and `pub(in path)` visibilities are not references.

A module reaching down into its own submodules (`x.rs` declaring `mod y;` and using `y::T`, or the crate root
re-exporting `a::b::T`) is the tree itself, not an edge: only a submodule using its parent (`super::T`) or a
module using anything outside its own subtree counts. A strongly connected component of more than one file is
a circle: each is printed as `crate: a.rs -> b.rs -> a.rs` (a closed walk through all its files, by real
edges), with the line behind each step.

scripts/tidy/circles-allowed.txt lists the circles that are known and waiting to be opened, one per line as
the crate and the circle's files sorted (`store: codec.rs records.rs`). The check fails on a circle that is not
listed, and on a listed one that no longer exists (delete its line: the list only shrinks).

  python3 scripts/tidy/circles.py            # the check
  python3 scripts/tidy/circles.py --all      # every circle, listed or not, exit 1 if there is one
  python3 scripts/tidy/circles.py --keys     # each circle as its line of circles-allowed.txt
"""
from __future__ import annotations

import pathlib
import re
import sys
from collections import deque

ROOT = pathlib.Path(__file__).resolve().parents[2]
ALLOWED = pathlib.Path(__file__).resolve().with_name("circles-allowed.txt")

IDENT = re.compile(r"r#[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*")
CHAR_LIT = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]{1,6}\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'")
RAW_STR = re.compile(r'b?r(#*)"')
# `#[cfg(test)]`, `#[cfg(all(test, ...))]`: code that only the unit tests compile.
CFG_TEST = re.compile(r"#\[cfg\((?:all\()?\s*test\b[^\]]*\]")
PUB_IN = re.compile(r"\bpub\s*\(\s*in\s+[^)]*\)")
MOD_DECL = re.compile(r"\bmod\s+(r#)?([A-Za-z_][A-Za-z0-9_]*)\s*([{;])")
PATH_START = re.compile(r"(?<![\w$:])\b(crate|super|self)\s*::")


def blank(text: str, start: int, end: int, out: list[str]) -> None:
    """Replaces text[start:end] in `out` by spaces, keeping the newlines (so line numbers stay true)."""
    for i in range(start, end):
        if text[i] != "\n":
            out[i] = " "


def strip_comments_and_strings(text: str) -> str:
    """The source with comments, string and char literals blanked out; lifetimes kept."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(text, i, j, out)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(text, i, j, out)
            i = j
        elif c in "rb" and (m := RAW_STR.match(text, i)) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            blank(text, i, j, out)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(text, i, j + 1, out)
            i = j + 1
        elif c == "'":
            m = CHAR_LIT.match(text, i)
            if m:
                blank(text, i, m.end(), out)
                i = m.end()
            else:
                i += 1  # a lifetime or a label
        else:
            i += 1
    return "".join(out)


def matching_brace(text: str, i: int) -> int:
    """The index just past the `}` closing the `{` at text[i] (comments and strings already blanked)."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def strip_test_items(text: str) -> tuple[str, set[str]]:
    """The code with every `#[cfg(test)]` item blanked, and the names of the test-only `mod name;` files."""
    out = list(text)
    test_mods: set[str] = set()
    for m in CFG_TEST.finditer(text):
        # The item runs to the first `;` or to the block of the first `{`, whichever comes first.
        j = m.end()
        while j < len(text) and text[j] not in ";{":
            j += 1
        item = text[m.end():j]
        decl = re.search(r"\bmod\s+(?:r#)?([A-Za-z_]\w*)\s*$", item)
        if j < len(text) and text[j] == ";" and decl:
            test_mods.add(decl.group(1))
        end = j + 1 if j < len(text) and text[j] == ";" else matching_brace(text, j)
        blank(text, m.start(), end, out)
    return "".join(out), test_mods


def inline_modules(code: str) -> list[tuple[int, int, str]]:
    """(start, end, name) of each inline `mod name { ... }` block, in order of their start."""
    spans = []
    for m in MOD_DECL.finditer(code):
        if m.group(3) == "{":
            spans.append((m.start(), matching_brace(code, m.end() - 1), m.group(2)))
    return spans


def module_at(base: tuple[str, ...], spans: list[tuple[int, int, str]], pos: int) -> tuple[str, ...]:
    """The module path at a position of a file whose own module is `base` (inline modules nest)."""
    path = list(base)
    for start, end, name in spans:
        if start <= pos < end:
            path.append(name)
    return tuple(path)


class Tokens:
    """Just enough of a tokenizer to read a path or a use tree."""

    def __init__(self, code: str, pos: int):
        self.code, self.pos = code, pos

    def skip_ws(self) -> None:
        while self.pos < len(self.code) and self.code[self.pos].isspace():
            self.pos += 1

    def peek(self, s: str) -> bool:
        self.skip_ws()
        return self.code.startswith(s, self.pos)

    def take(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def ident(self) -> str | None:
        self.skip_ws()
        m = IDENT.match(self.code, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return m.group(0).removeprefix("r#")


def read_tree(tok: Tokens, prefix: list[str]) -> list[list[str]]:
    """The full paths of a path or use tree at the tokenizer: `a::b::C`, `a::{b, c::D}`, `a::*`, `{self, x}`."""
    if tok.take("{"):
        paths: list[list[str]] = []
        while not tok.peek("}") and tok.pos < len(tok.code):
            paths += read_tree(tok, prefix)
            if not tok.take(","):
                break
        tok.take("}")
        return paths or [prefix]
    if tok.take("*"):
        return [prefix]
    name = tok.ident()
    if name is None:
        return [prefix]
    if name == "self" and prefix:
        return [prefix]  # `use a::{self, b}`: `a` itself
    path = prefix + [name]
    if tok.peek("::") and not tok.code.startswith("::<", tok.pos):
        tok.take("::")
        if tok.peek("<"):
            return [path]
        return read_tree(tok, path)
    return [path]


class Crate:
    def __init__(self, src: pathlib.Path):
        self.src = src
        self.files: dict[tuple[str, ...], pathlib.Path] = {}  # module path -> file
        self.code: dict[pathlib.Path, str] = {}
        self.test_only: set[tuple[str, ...]] = set()
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src)
            if "tests" in rel.parts[:-1] or rel.name == "tests.rs":
                continue
            parts = rel.with_suffix("").parts
            if len(parts) == 1 and parts[0] in ("lib", "main"):
                mod: tuple[str, ...] = ()
            elif parts[-1] == "mod":
                mod = tuple(parts[:-1])
            else:
                mod = tuple(parts)
            if mod in self.files:  # main.rs beside lib.rs: keep the library as the root
                continue
            self.files[mod] = f
        for mod, f in self.files.items():
            code, test_mods = strip_test_items(strip_comments_and_strings(f.read_text()))
            self.code[f] = PUB_IN.sub(lambda m: " " * len(m.group(0)), code)
            self.test_only |= {mod + (t,) for t in test_mods}
        for mod in list(self.files):
            if any(mod[: len(t)] == t for t in self.test_only):
                del self.files[mod]

    def name(self, f: pathlib.Path) -> str:
        return f.relative_to(self.src).as_posix()

    def resolve(self, path: tuple[str, ...]) -> tuple[str, ...]:
        """The deepest module file among the path's prefixes."""
        for k in range(len(path), -1, -1):
            if path[:k] in self.files:
                return path[:k]
        return ()

    def edges(self) -> dict[tuple[str, ...], dict[tuple[str, ...], int]]:
        """module -> {module it names: the first line that names it}, less the tree's own downward edges."""
        graph: dict[tuple[str, ...], dict[tuple[str, ...], int]] = {m: {} for m in self.files}
        for mod, f in self.files.items():
            code = self.code[f]
            spans = inline_modules(code)
            for m in PATH_START.finditer(code):
                here = module_at(mod, spans, m.start(1))
                tok = Tokens(code, m.start(1))
                lead: list[str] = []
                base: list[str] = []
                # The leading `crate::`, `self::`, `super::super::`...
                while True:
                    word = tok.ident()
                    if word == "crate" and not lead:
                        base = []
                    elif word == "self" and not lead:
                        base = list(here)
                    elif word == "super" and (not lead or lead[-1] in ("self", "super")):
                        base = (base if lead else list(here))[:-1]
                    else:
                        tok.pos -= len(word or "")
                        break
                    lead.append(word)
                    if not tok.take("::"):
                        break
                for path in read_tree(tok, base):
                    target = self.resolve(tuple(path))
                    if target == mod or target[: len(mod)] == mod:
                        continue  # itself, or down its own subtree: the tree, not a circle
                    line = code.count("\n", 0, m.start(1)) + 1
                    graph[mod].setdefault(target, line)
        return graph


def components(graph: dict) -> list[list]:
    """Tarjan's strongly connected components with more than one node, each sorted."""
    index: dict = {}
    low: dict = {}
    on_stack: set = set()
    stack: list = []
    found: list[list] = []
    counter = [0]

    def visit(v) -> None:
        # Iterative, so deep graphs do not hit Python's recursion limit.
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def walk(graph: dict, comp: list) -> list:
    """A closed walk by real edges from the component's first node through all its nodes and back."""
    inside = set(comp)

    def shortest(a, targets: set) -> list:
        prev = {a: None}
        queue = deque([a])
        while queue:
            v = queue.popleft()
            for w in sorted(graph[v]):
                if w in inside and w not in prev:
                    prev[w] = v
                    if w in targets:
                        path = [w]
                        while prev[path[-1]] is not None:
                            path.append(prev[path[-1]])
                        return path[::-1]
                    queue.append(w)
        return [a]

    route = [comp[0]]
    left = inside - {comp[0]}
    while left:
        step = shortest(route[-1], left)
        route += step[1:]
        left -= set(step)
    back = shortest(route[-1], {comp[0]}) if len(route) > 1 else [comp[0]]
    return route + back[1:]


def read_allowed() -> set[str]:
    if not ALLOWED.exists():
        return set()
    lines = (l.split("#", 1)[0].strip() for l in ALLOWED.read_text().splitlines())
    return {" ".join(l.split()) for l in lines if l}


def main() -> int:
    every = "--all" in sys.argv[1:]
    keys = "--keys" in sys.argv[1:]
    allowed = read_allowed()
    seen: set[str] = set()
    new: list[str] = []
    crates = sorted(p for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").exists() and (p / "src").is_dir())
    total = 0
    for crate_dir in crates:
        crate = Crate(crate_dir / "src")
        graph = crate.edges()
        for comp in components(graph):
            total += 1
            key = f"{crate_dir.name}: " + " ".join(sorted(crate.name(crate.files[m]) for m in comp))
            seen.add(key)
            if keys:
                print(key)
                continue
            if key in allowed and not every:
                continue
            route = walk(graph, comp)
            lines = [f"{crate_dir.name}: " + " -> ".join(crate.name(crate.files[m]) for m in route)]
            for a, b in zip(route, route[1:]):
                f = crate.files[a]
                lines.append(f"    crates/{crate_dir.name}/src/{crate.name(f)}:{graph[a][b]} names "
                             f"{'crate root' if not b else '::'.join(b)} ({crate.name(crate.files[b])})")
            new.append("\n".join(lines))
    if keys:
        return 0
    stale = sorted(allowed - seen)
    if new:
        what = "import circles" if every else "import circles not in scripts/tidy/circles-allowed.txt"
        print(f"{what} (move what both sides share into the module that owns it, or into a small module both "
              f"use, so the references point one way):", file=sys.stderr)
        for n in new:
            print(n, file=sys.stderr)
    if stale and not every:
        print("scripts/tidy/circles-allowed.txt lists circles that are gone (or changed): delete these lines "
              "(the list only shrinks; a changed circle is reported above under its new files):", file=sys.stderr)
        for s in stale:
            print(f"  {s}", file=sys.stderr)
    if new or (stale and not every):
        return 1
    print(f"ok: no import circle between the files of {len(crates)} crates, but the {total} listed in "
          f"scripts/tidy/circles-allowed.txt" if total else
          f"ok: no import circle between the files of {len(crates)} crates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
