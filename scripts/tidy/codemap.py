#!/usr/bin/env python3
"""docs/ARCHITECTURE.md's code map (the "## Code map" section, a paragraph a folder) matches the tree.

- every crate has its paragraph, starting `**crates/<dir>**`;
- every folder under a crate's src/ is named in the section as `<folder>/` (`routes/`, `samples/`);
- every file the section names (`something.rs`, `a/b.rs`, `dir/`) exists in the repository.

Exit status 1 and one line per problem, saying what to fix.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def section(text: str) -> str:
    m = re.search(r"\n## Code map\n(.*?)(?=\n## )", text, re.S)
    if not m:
        sys.exit(f"{DOC}: no '## Code map' section")
    return m.group(1)


def main() -> int:
    part = section(DOC.read_text())
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    dirs = {str(pathlib.PurePosixPath(f).parent) + "/" for f in files}
    dirs |= {"/".join(d.split("/")[:i]) + "/" for d in list(dirs) for i in range(1, d.count("/"))}
    problems = []
    crates = sorted(p.name for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").exists())
    for crate in crates:
        if f"**crates/{crate}**" not in part:
            problems.append(f"crates/{crate}: no paragraph starting `**crates/{crate}**`")
        src = ROOT / "crates" / crate / "src"
        for d in sorted(p for p in src.rglob("*") if p.is_dir()):
            name = d.name + "/"
            if not re.search(r"(?<![\w-])" + re.escape(name), part):
                problems.append(f"crates/{crate}/src/{d.relative_to(src)}: `{name}` is not named in the code map")
    for tok in re.findall(r"`([^`\n]+)`", part):
        for name in re.findall(r"[\w./-]+\.(?:rs|py|sh|md|json|yaml|txt|ts)\b|[\w.-]+(?:/[\w.-]+)*/(?![\w.])", tok):
            if name.endswith("/"):
                ok = any(("/" + d).endswith("/" + name) for d in dirs)
            else:
                ok = any(("/" + f).endswith("/" + name) for f in files)
            if not ok:
                problems.append(f"`{name}` is named in the code map but is not in the tree")
    if problems:
        print(f"{DOC.relative_to(ROOT)}: the code map must match the tree:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    print(f"ok: the code map names every crate and folder of {len(crates)} crates, and every file it names exists")
    return 0


if __name__ == "__main__":
    sys.exit(main())
