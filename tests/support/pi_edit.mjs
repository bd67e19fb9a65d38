// Runs pi's own edit text functions on cases read from stdin (a JSON list of
// {content, edits, path}) and prints, for each, {newContent, diff, firstChangedLine}
// or {error}. Usage: node pi_edit.mjs <pi package folder> < cases.json
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.argv[2];
const pi = await import(pathToFileURL(join(pkg, "dist", "core", "tools", "edit-diff.js")).href);
const cases = JSON.parse(readFileSync(0, "utf8"));
const out = cases.map(({ content, edits, path }) => {
  try {
    const { bom, text } = pi.stripBom(content);
    const ending = pi.detectLineEnding(text);
    const { baseContent, newContent } = pi.applyEditsToNormalizedContent(pi.normalizeToLF(text), edits, path);
    const { diff, firstChangedLine } = pi.generateDiffString(baseContent, newContent);
    return { written: bom + pi.restoreLineEndings(newContent, ending), diff, firstChangedLine: firstChangedLine ?? null };
  } catch (e) {
    return { error: String(e.message) };
  }
});
process.stdout.write(JSON.stringify(out));
