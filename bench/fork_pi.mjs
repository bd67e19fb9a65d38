// pi's own fork of a session file, for bench/fork_bench.py: opens FILE with pi's
// SessionManager, forks the path to LEAF (createBranchedSession) into DIR, and prints
// {"file", "ms"}: the new file's path and the fork's wall-clock time.
// Usage: PI_PACKAGE=pi-0.80.2 node fork_pi.mjs FILE LEAF DIR
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = process.env.PI_PACKAGE || "pi-0.80.2";
const modules = process.env.PI_MODULES || join(here, "pi_reference", "node_modules");
const { SessionManager } = await import(
  pathToFileURL(join(modules, pkg, "dist", "core", "session-manager.js")).href
);
const [file, leaf, dir] = process.argv.slice(2);
const manager = SessionManager.open(file, dir);
const started = performance.now();
const forked = manager.createBranchedSession(leaf);
const ms = performance.now() - started;
console.log(JSON.stringify({ file: forked, ms }));
