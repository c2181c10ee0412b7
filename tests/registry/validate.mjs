// Validates server.json files against the MCP Registry's schema (draft-07) with Ajv, and
// prints every error with its path: node validate.mjs SCHEMA FILE...
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import addFormats from "ajv-formats";

const [schemaFile, ...files] = process.argv.slice(2);
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validate = ajv.compile(JSON.parse(readFileSync(schemaFile, "utf8")));
let failed = false;
for (const f of files) {
  if (validate(JSON.parse(readFileSync(f, "utf8")))) {
    console.log(`${f}: valid`);
    continue;
  }
  failed = true;
  for (const e of validate.errors) console.log(`${f}: ${e.instancePath || "/"} ${e.message} ${JSON.stringify(e.params)}`);
}
process.exit(failed ? 1 : 0);
