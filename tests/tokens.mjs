// Counts o200k tokens (the GPT-4o tokenizer, as in bench/catalogs/TABLE.md) in JSON
// files, for the README's token figures: node tokens.mjs FILE...
import { readFileSync } from "node:fs";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";

for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, "utf8");
  console.log(`${file}\t${text.length} bytes\t${countTokens(text)} tokens`);
}
