// Signs in to toolsift the way MCP clients do, with the official TypeScript SDK's OAuth
// client: node tsoauth.mjs URL USER QUERY. It finds toolsift's resource metadata from the
// 401, registers with the authorization server it names, signs in as USER (the provider
// double reads login_hint) with PKCE, connects, lists tools, searches with QUERY and prints
// {"tools": [...], "search": "...", "aud": ...}: the aud of the token it was given.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const [url, user, query] = process.argv.slice(2);
const redirectUrl = "http://127.0.0.1:9/callback"; // never reached: the redirect is read, not followed
let info, tokens, verifier, code;
const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return { client_name: "toolsift-e2e", redirect_uris: [redirectUrl], grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"], token_endpoint_auth_method: "none" };
  },
  clientInformation: () => info,
  saveClientInformation: (i) => { info = i; },
  tokens: () => tokens,
  saveTokens: (t) => { tokens = t; },
  async redirectToAuthorization(u) {
    u.searchParams.set("login_hint", user);
    const res = await fetch(u, { redirect: "manual" });
    code = new URL(res.headers.get("location")).searchParams.get("code");
  },
  saveCodeVerifier: (v) => { verifier = v; },
  codeVerifier: () => verifier,
};
const transport = () => new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
let client = new Client({ name: "toolsift-e2e-oauth", version: "1" });
try {
  await client.connect(transport());
} catch (e) {
  if (!(e instanceof UnauthorizedError)) throw e;
  const t = transport();
  await t.finishAuth(code);
  client = new Client({ name: "toolsift-e2e-oauth", version: "1" });
  await client.connect(t);
}
const tools = (await client.listTools()).tools.map((t) => t.name);
const res = await client.callTool({ name: "tool_search", arguments: { query } });
if (res.isError) throw new Error("tool_search: " + JSON.stringify(res.content));
const aud = JSON.parse(Buffer.from(tokens.access_token.split(".")[1], "base64url")).aud;
console.log(JSON.stringify({ tools, search: res.content.map((c) => c.text).join("\n"), aud }));
await client.close();
