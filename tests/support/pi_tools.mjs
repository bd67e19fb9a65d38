// Prints pi's seven tools as its own factories build them: {name: {description,
// parameters, snippet, guidelines}}. Usage: node pi_tools.mjs <pi package folder>.
// Read by tests/support/pi_wording.py at test time; nothing of it is stored.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.argv[2];
const tools = await import(pathToFileURL(join(pkg, "dist", "core", "tools", "index.js")).href);
const out = {};
for (const name of ["read", "bash", "edit", "write", "grep", "find", "ls"]) {
  const factory = tools[`create${name[0].toUpperCase()}${name.slice(1)}ToolDefinition`];
  const def = factory(process.cwd());
  out[name] = {
    description: def.description,
    parameters: JSON.parse(JSON.stringify(def.parameters)),
    snippet: def.promptSnippet ?? null,
    guidelines: def.promptGuidelines ?? [],
  };
}
process.stdout.write(JSON.stringify(out));
