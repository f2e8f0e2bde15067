// A stdio MCP server on the official v2 TypeScript SDK (`@modelcontextprotocol/server` 2.x), for the
// gateway's tests of the 2026-07-28 revision toward upstreams:
//   node v2-server.mjs            serves both revisions (a 2025 `initialize` is served as 2025)
//   node v2-server.mjs --only-2026  refuses 2025 openings: a 2026-only server
// Tools:
//   echo {text}            -> "v2 echo: <text>"
//   deploy {env}           asks for input through a Multi Round-Trip Request (SEP-2322): an
//                          InputRequiredResult with an elicitation `confirm` and a requestState; the
//                          retried call carries the answer and the same requestState. On a 2025 session
//                          the SDK's shim sends a real elicitation/create request instead.
//                          -> "deployed to <env> (confirmed by <who>)" or "not deployed: <action>"
//   era {}                 -> which revision this call was served on
import { McpServer, inputRequired } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const only2026 = process.argv.includes('--only-2026');
// The state this server hands out, so a retry can be checked against it (a real server would seal it).
const issued = new Set();

serveStdio(
  () => {
    const server = new McpServer({ name: 'portcullis-v2-fixture', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.registerTool(
      'echo',
      { description: 'Echoes its text', inputSchema: z.object({ text: z.string() }) },
      async ({ text }) => ({ content: [{ type: 'text', text: `v2 echo: ${text}` }] }),
    );
    server.registerTool(
      'deploy',
      { description: 'Deploys after asking the user to confirm', inputSchema: z.object({ env: z.string() }) },
      async ({ env }, ctx) => {
        const responses = ctx.mcpReq.inputResponses;
        const answer = responses?.confirm;
        if (!answer) {
          const state = `deploy:${env}:${Math.random().toString(36).slice(2)}`;
          issued.add(state);
          return inputRequired({
            inputRequests: {
              confirm: inputRequired.elicit({
                message: `Deploy to ${env}?`,
                requestedSchema: {
                  type: 'object',
                  properties: { who: { type: 'string', description: 'Who confirms' } },
                  required: ['who'],
                },
              }),
            },
            requestState: state,
          });
        }
        // The SDK hands the echoed state through an accessor (it may verify it first).
        const accessor = ctx.mcpReq.requestState;
        const state = typeof accessor === 'function' ? await accessor() : accessor;
        if (state !== undefined && !issued.has(state)) {
          return { content: [{ type: 'text', text: `refused: requestState ${state} was never issued` }], isError: true };
        }
        if (answer.action !== 'accept') {
          return { content: [{ type: 'text', text: `not deployed: ${answer.action}` }] };
        }
        return { content: [{ type: 'text', text: `deployed to ${env} (confirmed by ${answer.content?.who})` }] };
      },
    );
    server.registerTool('era', { description: 'Which revision served this call' }, async (ctx) => ({
      // A 2026-07-28 request carries its revision in its `_meta` envelope; a 2025 session has none.
      content: [{ type: 'text', text: `protocol ${ctx.mcpReq.envelope?.['io.modelcontextprotocol/protocolVersion'] ?? '2025 session'}` }],
    }));
    return server;
  },
  { legacy: only2026 ? 'reject' : 'serve' },
);
