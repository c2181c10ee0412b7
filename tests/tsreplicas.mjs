// Many sessions through a load balancer, with the official TypeScript SDK's client:
// node tsreplicas.mjs URL TOKEN N. Each session searches with a query of its own (so each
// unlocks its own tools), then the script prints {"phase":"ready","sessions":[...]} with
// each session's tool list, and waits for a line on stdin (the test kills a replica
// meanwhile). Then each session lists its tools again and calls the first tool it
// unlocked, retrying a request once as a client does; it prints
// {"phase":"after","sessions":[{"before","after","called","error"}]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import readline from "node:readline";

const [url, token, n] = process.argv.slice(2);
const queries = ["create issue", "list commits", "fork repository", "merge pull request", "search code",
  "create branch", "get file contents", "add issue comment", "list pull requests", "search users"];
const names = async (c) => (await c.listTools()).tools.map((t) => t.name);
const once = async (f) => { try { return await f(); } catch { return await f(); } };

const sessions = await Promise.all(Array.from({ length: Number(n) }, async (_, i) => {
  const client = new Client({ name: "toolsift-e2e-replicas", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  const res = await client.callTool({ name: "tool_search", arguments: { query: queries[i % queries.length], max_results: 2 } });
  if (res.isError) throw new Error("tool_search: " + JSON.stringify(res.content));
  const before = await names(client);
  return { client, before, unlocked: before.filter((t) => t.startsWith("github__")) };
}));
console.log(JSON.stringify({ phase: "ready", sessions: sessions.map((s) => s.before) }));

const rl = readline.createInterface({ input: process.stdin });
await new Promise((resolve) => rl.once("line", resolve));
rl.close();

const after = await Promise.all(sessions.map(async (s) => {
  try {
    const list = await once(() => names(s.client));
    const res = await once(() => s.client.callTool({ name: s.unlocked[0], arguments: {} }));
    return { before: s.before, after: list, called: !res.isError };
  } catch (e) {
    return { before: s.before, error: String(e) };
  }
}));
console.log(JSON.stringify({ phase: "after", sessions: after }));
await Promise.all(sessions.map((s) => s.client.close()));
