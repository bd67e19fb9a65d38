// pi 0.80.2's own prompt-template functions and skill command, for the conformance test.
// Usage: node pi_templates.mjs <pi package folder> < JOB.json
// JOB: {cases: [{template, command}], load: {cwd, agentDir, paths}?,
//       skills: [{name, filePath, baseDir}], skillCommands: [text]}
// Prints {cases: [{args, substituted, expanded}], loaded: [...], skillBlocks: [...]}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.argv[2];
const job = JSON.parse(readFileSync(0, "utf8"));
const templates = await import(pathToFileURL(join(pkg, "dist", "core", "prompt-templates.js")).href);
const pi = await import(pathToFileURL(join(pkg, "dist", "index.js")).href);

const COMMAND = /^\/([^\s]+)(?:\s+([\s\S]*))?$/; // expandPromptTemplate's own pattern
const cases = (job.cases || []).map(({ template, command }) => {
  const match = command.match(COMMAND);
  const args = templates.parseCommandArgs(match ? (match[2] ?? "") : command);
  return {
    args,
    substituted: templates.substituteArgs(template, args),
    expanded: templates.expandPromptTemplate(command, [{ name: "t", content: template }]),
  };
});

const loaded = job.load
  ? templates
      .loadPromptTemplates({ ...job.load, promptPaths: job.load.paths, includeDefaults: false })
      .map((t) => ({ name: t.name, description: t.description, argumentHint: t.argumentHint ?? "", content: t.content }))
  : [];

// _expandSkillCommand is a method of AgentSession: run it on the skills given.
const host = {
  resourceLoader: { getSkills: () => ({ skills: job.skills || [] }) },
  _extensionRunner: { emitError() {} },
};
const skillBlocks = (job.skillCommands || []).map((text) => pi.AgentSession.prototype._expandSkillCommand.call(host, text));

process.stdout.write(JSON.stringify({ cases, loaded, skillBlocks }));
