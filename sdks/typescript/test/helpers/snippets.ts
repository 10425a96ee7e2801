/**
 * The snippets the tests run as written: the seed's (sdks/seed/sdk-examples.txt, the repository's copy of the
 * seed's "SDK examples", so that a clone stands alone) and this README's.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PKG_ROOT } from "./paths.js";

/** sdks/seed/sdk-examples.txt, next to this package. */
export const SEED_EXAMPLES: string = join(PKG_ROOT, "..", "seed", "sdk-examples.txt");
export const README: string = join(PKG_ROOT, "README.md");
const SEED_HEADINGS = ["Python", "TypeScript", "Java", "Go"];

function stripBlankEnds(lines: string[]): string[] {
  let start = 0;
  let end = lines.length;
  while (start < end && lines[start]!.trim() === "") start++;
  while (end > start && lines[end - 1]!.trim() === "") end--;
  return lines.slice(start, end);
}

/**
 * The lines of the seed's snippet for `language`: those between its heading line and the next heading line
 * (sdks/seed/README.md), blank lines at both ends left out.
 */
export function seedSnippet(language: string): string[] {
  const lines = readFileSync(SEED_EXAMPLES, "utf8").split("\n");
  const headings = lines.flatMap((line, i) => (SEED_HEADINGS.includes(line) ? [i] : []));
  const found = headings.map((i) => lines[i]);
  if (JSON.stringify(found) !== JSON.stringify(SEED_HEADINGS)) {
    throw new Error(`${SEED_EXAMPLES}: expected the headings ${SEED_HEADINGS.join(", ")} once each, in order, got ${found.join(", ")}`);
  }
  const start = lines.indexOf(language);
  if (start < 0) throw new Error(`${SEED_EXAMPLES}: no ${language} heading`);
  const end = headings.find((i) => i > start) ?? lines.length;
  return stripBlankEnds(lines.slice(start + 1, end));
}

/** The fenced code blocks of `language` (```ts) in a Markdown file, in order, as lines. */
export function codeBlocks(language: string, path: string = README): string[][] {
  const blocks: string[][] = [];
  let current: string[] | undefined;
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (current === undefined) {
      if (line.trim() === "```" + language) current = [];
    } else if (line.trim() === "```") {
      blocks.push(current);
      current = undefined;
    } else {
      current.push(line);
    }
  }
  if (current !== undefined) throw new Error(`${path}: unterminated code block`);
  return blocks;
}

/** A file's lines, without the final newline's empty last line. */
export function fileLines(path: string): string[] {
  const lines = readFileSync(path, "utf8").split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}
