// Opens session files with pi's own SessionManager, the way `pi --session FILE` loads them,
// and prints what pi would continue from: its leaf id and the context it builds there.
// Usage: node pi_open.mjs PI_PACKAGE_DIR SCRATCH_DIR FILE...
// Prints one JSON object: {"version": "...", "files": {FILE: {"leafId", "context"}}}.
// pi may repair a file it opens (a missing final newline), so callers pass copies.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, scratchDir, ...files] = process.argv.slice(2);
const { SessionManager } = await import(
  pathToFileURL(join(packageDir, "dist", "core", "session-manager.js")).href
);
const version = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")).version;
const out = { version, files: {} };
for (const file of files) {
  const manager = SessionManager.open(file, scratchDir);
  out.files[file] = {
    leafId: manager.getLeafId(),
    context: manager.buildSessionContext(),
  };
}
process.stdout.write(JSON.stringify(out));
