// pi-ai's detectCompat (not exported) run on models read from stdin: its source is taken
// from the pinned package's dist file and evaluated alone (it uses no other name).
import { readFileSync } from "node:fs";

const source = readFileSync(process.argv[2], "utf8");
const start = source.indexOf("function detectCompat(model) {");
const end = source.indexOf("\n}\n", start);
if (start < 0 || end < 0) throw new Error("detectCompat not found in " + process.argv[2]);
const detectCompat = new Function(source.slice(start, end + 2) + "\nreturn detectCompat;")();
const models = JSON.parse(readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(models.map((model) => detectCompat(model))));
