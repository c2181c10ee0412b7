// Drives toolsift with the official TypeScript SDK's client, which validates every tool in a
// tools/list answer: node tsclient.mjs TOOLSIFT CONFIG QUERY. It lists tools, searches with
// QUERY (unlocking the matches), lists again and prints {"before": [...], "after": [...]}
// with the names listed each time. An error exits non-zero with its message on stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, config, query] = process.argv.slice(2);
const client = new Client({ name: "toolsift-e2e-ts", version: "1" });
await client.connect(new StdioClientTransport({ command: bin, args: ["--config", config], stderr: "ignore" }));
const names = async () => (await client.listTools()).tools.map((t) => t.name);
const before = await names();
const res = await client.callTool({ name: "tool_search", arguments: { query } });
if (res.isError) throw new Error("tool_search: " + JSON.stringify(res.content));
const after = await names();
console.log(JSON.stringify({ before, after }));
await client.close();
