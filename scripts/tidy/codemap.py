#!/usr/bin/env python3
"""Every module of every crate is named in docs/ARCHITECTURE.md's code map.

The code map is the first fenced block under "## Code map". A crate's part starts at its line
`  <dir>/   <package>` and ends at the next crate's line. In its part, each `crates/<dir>/src/<path>.rs` must
appear by its path relative to src/ (`wire.rs`, `routes/portal.rs`, `source/nvml.rs`); a `mod.rs` by its folder
(`routes/`); the crate root (`lib.rs`, `main.rs`) by the crate's line itself.

Exit status 1 and one line per missing module, saying where to add it.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def code_map(text: str) -> list[str]:
    after = text.split("\n## Code map", 1)
    if len(after) != 2:
        sys.exit(f"{DOC}: no '## Code map' section")
    block = re.search(r"```[^\n]*\n(.*?)\n```", after[1], re.S)
    if not block:
        sys.exit(f"{DOC}: no fenced block under '## Code map'")
    return block.group(1).split("\n")


def crate_parts(lines: list[str], crates: list[str]) -> dict[str, str]:
    """The code map's text for each crate folder."""
    header = re.compile(r"^  (" + "|".join(map(re.escape, crates)) + r")/\s")
    parts: dict[str, list[str]] = {}
    current = None
    for line in lines:
        m = header.match(line)
        if m:
            current = m.group(1)
            parts.setdefault(current, []).append(line)
        elif current is not None and (line.startswith("    ") or line.strip() == ""):
            parts[current].append(line)
        elif current is not None and not line.startswith("  "):
            current = None  # back at the repository's top level (examples/, deploy/, ...)
        elif current is not None:
            parts[current].append(line)
    return {k: "\n".join(v) for k, v in parts.items()}


def main() -> int:
    crates = sorted(p.name for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").exists())
    parts = crate_parts(code_map(DOC.read_text()), crates)
    missing = []
    for crate in crates:
        src = ROOT / "crates" / crate / "src"
        part = parts.get(crate)
        if part is None:
            missing.append(f"crates/{crate}: no line `  {crate}/   <package>  ...` in the code map")
            continue
        for f in sorted(src.rglob("*.rs")):
            rel = f.relative_to(src).as_posix()
            if rel in ("lib.rs", "main.rs"):
                continue
            name = rel[: -len("mod.rs")] if rel.endswith("/mod.rs") else rel
            # The path as a token: not the tail of a longer path or name (`metrics.rs` is not `store_metrics.rs`).
            if not re.search(r"(?<![\w/.-])" + re.escape(name) + r"(?![\w/])", part):
                missing.append(f"crates/{crate}/src/{rel}: `{name}` is not named in the `{crate}/` part")
    if missing:
        print(f"{DOC.relative_to(ROOT)}: the code map must name every module (add a line saying what each does):",
              file=sys.stderr)
        for m in missing:
            print(f"  {m}", file=sys.stderr)
        return 1
    n = sum(1 for c in crates for _ in (ROOT / "crates" / c / "src").rglob("*.rs"))
    print(f"ok: the code map names all {n} modules of {len(crates)} crates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
