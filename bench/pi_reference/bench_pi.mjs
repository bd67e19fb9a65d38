// Times pi's own core functions on inputs written by bench/core_bench.py, so both
// sides run on the same data in one bench run.  Usage: node bench_pi.mjs JOB.json
// JOB.json: {"cases": [{name, size, fn, entries?|text?, leaf?, keep?, repeat?}]}.
// Prints {"package", "node", "results": [{name, size, ms, cpuMs}]}: the median wall-clock
// and the median process CPU time (user + system, so it includes V8's GC threads) of
// `repeat` runs (default 5).
//
// `node bench_pi.mjs --serve` instead reads one case a line on stdin and answers each with
// one line {"ms": [...], "cpuMs": [...]} (`repeat` runs, default 1), so that the caller can
// alternate its own runs with pi's and the machine's load falls on both alike.  The first
// line it writes is {"package", "node"}.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const pkg = process.env.PI_PACKAGE || "pi-0.80.2";
// The modules that define the functions (the package index also loads the
// provider SDKs, which this install may resolve to another pi's versions).
const dist = join(here, "node_modules", pkg, "dist", "core");
const load_module = (path) => import(pathToFileURL(join(dist, path)).href);
const pi = {
  ...(await load_module("session-manager.js")),
  ...(await load_module("compaction/compaction.js")),
  ...(await load_module("tools/truncate.js")),
};

const loaded = new Map();
function load(file, asText) {
  if (!loaded.has(file)) {
    const raw = readFileSync(file, "utf8");
    loaded.set(file, asText ? raw : JSON.parse(raw));
  }
  return loaded.get(file);
}

const makers = {
  buildSessionContext: (c) => {
    const entries = load(c.entries);
    return () => pi.buildSessionContext(entries, c.leaf);
  },
  // The app's shape, as pi's SessionManager does it: one id map, the path to the leaf
  // (getBranch's walk), then the context at that leaf with the same map.
  branchThenContext: (c) => {
    const entries = load(c.entries);
    return () => {
      const byId = new Map();
      for (const e of entries) byId.set(e.id, e);
      const path = [];
      let current = byId.get(c.leaf);
      while (current) {
        path.push(current);
        current = current.parentId ? byId.get(current.parentId) : undefined;
      }
      path.reverse();
      return [path, pi.buildSessionContext(entries, c.leaf, byId)];
    };
  },
  findCutPoint: (c) => {
    const entries = load(c.entries);
    const keep = c.keep === "Infinity" ? Infinity : c.keep;
    return () => pi.findCutPoint(entries, 0, entries.length, keep);
  },
  truncateTail: (c) => {
    const text = load(c.text, true);
    return () => pi.truncateTail(text);
  },
  truncateHead: (c) => {
    const text = load(c.text, true);
    return () => pi.truncateHead(text);
  },
};

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};

// `repeat` timed runs of one case: {walls, cpus} in milliseconds.
function timeCase(c, repeat) {
  const run = makers[c.fn](c);
  const walls = [];
  const cpus = [];
  for (let i = 0; i < repeat; i++) {
    const cpu = process.cpuUsage();
    const start = process.hrtime.bigint();
    run();
    walls.push(Number(process.hrtime.bigint() - start) / 1e6);
    const used = process.cpuUsage(cpu);
    cpus.push((used.user + used.system) / 1e3);
  }
  if (c.text) loaded.delete(c.text); // big texts: free before the next one
  return { walls, cpus };
}

if (process.argv[2] === "--serve") {
  const { createInterface } = await import("node:readline");
  process.stdout.write(JSON.stringify({ package: pkg, node: process.version }) + "\n");
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    const { walls, cpus } = timeCase(c, c.repeat ?? 1);
    process.stdout.write(JSON.stringify({ ms: walls, cpuMs: cpus }) + "\n");
  }
} else {
  const job = JSON.parse(readFileSync(process.argv[2], "utf8"));
  const results = [];
  for (const c of job.cases) {
    const { walls, cpus } = timeCase(c, c.repeat ?? 5);
    results.push({ name: c.name, size: c.size, ms: median(walls), cpuMs: median(cpus) });
  }
  process.stdout.write(JSON.stringify({ package: pkg, node: process.version, results }));
}
