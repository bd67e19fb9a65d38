// Drives pi's own AgentSession (the SDK the pi CLI is built on) through a job, for the
// wire conformance test: prompts, a compaction, a navigation with a branch summary, and
// copies of the session file in between. Usage: node pi_wire.mjs <pi package> JOB.json
// JOB: {cwd, agentDir, sessionDir, sessionFile?, steps: [{op: "prompt", text} |
//       {op: "compact", instructions?} | {op: "navigate", target, instructions?} |
//       {op: "copy", to}]}
// Prints {"sessionFile", "leafId"}. The model and its endpoint come from agentDir's
// models.json and settings.json (PI_CODING_AGENT_DIR points there too).
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.argv[2];
const job = JSON.parse(readFileSync(process.argv[3], "utf8"));
const pi = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

const manager = job.sessionFile
  ? pi.SessionManager.open(job.sessionFile, job.sessionDir)
  : pi.SessionManager.create(job.cwd, job.sessionDir);
const { session } = await pi.createAgentSession({
  cwd: job.cwd,
  agentDir: job.agentDir,
  sessionManager: manager,
});
for (const step of job.steps) {
  if (step.op === "prompt") {
    await session.prompt(step.text);
  } else if (step.op === "compact") {
    await session.compact(step.instructions);
  } else if (step.op === "navigate") {
    const result = await session.navigateTree(step.target, {
      summarize: true,
      customInstructions: step.instructions,
    });
    if (result.cancelled || result.aborted) throw new Error(`navigation failed: ${JSON.stringify(result)}`);
  } else if (step.op === "copy") {
    copyFileSync(session.sessionFile, step.to);
  } else {
    throw new Error(`unknown step ${step.op}`);
  }
}
process.stdout.write(JSON.stringify({ sessionFile: session.sessionFile, leafId: manager.getLeafId() }));
process.exit(0);
