// An upstream MCP server (official TypeScript SDK, stdio) whose tools misbehave on purpose, for the
// hub's failure tests: `crash` exits the process, `hang` never answers, `big` answers more bytes than the
// hub accepts, `garbage` writes a non-JSON line to stdout before answering, `ok` just answers.
// A state file (argv[2]) counts the starts, so tests can see the hub restart it.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { appendFileSync } from "node:fs";

if (process.argv[2]) appendFileSync(process.argv[2], "start\n");
const server = new Server({ name: "misbehaving", version: "1.0.0" }, { capabilities: { tools: {} } });
const names = ["ok", "crash", "hang", "big", "garbage"];
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: names.map((name) => ({
    name,
    description: `${name} on purpose`,
    inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: name === "ok", destructiveHint: name === "crash" },
  })),
}));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  switch (request.params.name) {
    case "ok":
      return { content: [{ type: "text", text: "fine" }] };
    case "crash":
      setTimeout(() => process.exit(3), 10);
      return new Promise(() => {});
    case "hang":
      return new Promise(() => {});
    case "big":
      return { content: [{ type: "text", text: "x".repeat(2_000_000) }] };
    case "garbage":
      process.stdout.write("this is not JSON-RPC\n");
      return { content: [{ type: "text", text: "after garbage" }] };
    default:
      return { content: [{ type: "text", text: "unknown" }], isError: true };
  }
});
await server.connect(new StdioServerTransport());
