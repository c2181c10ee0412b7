// Times two tool_search calls of a client that never re-lists, with the official TypeScript
// SDK's client under the given clientInfo: node tshabit.mjs TOOLSIFT CONFIG NAME VERSION
// QUERY1 QUERY2. Prints {"first": ms, "second": ms}. toolsift gets this process's
// environment (its state folder included). Like a client, it lists the tools once connected,
// until an always-load tool shows the servers are up (a model's first request takes longer).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, config, name, version, q1, q2] = process.argv.slice(2);
const client = new Client({ name, version });
await client.connect(new StdioClientTransport({ command: bin, args: ["--config", config], env: process.env, stderr: "ignore" }));
for (let i = 0; ; i++) {
  const { tools } = await client.listTools();
  if (tools.some((t) => t.name !== "tool_search" && t.name !== "call_tool")) break;
  if (i === 200) throw new Error("no server connected within 10 s");
  await new Promise((r) => setTimeout(r, 50));
}
const timed = async (query) => {
  const start = performance.now();
  const res = await client.callTool({ name: "tool_search", arguments: { query } });
  if (res.isError) throw new Error("tool_search: " + JSON.stringify(res.content));
  return performance.now() - start;
};
const first = await timed(q1);
const second = await timed(q2);
console.log(JSON.stringify({ first, second }));
await client.close();
