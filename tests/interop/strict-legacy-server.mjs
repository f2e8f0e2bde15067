// A stdio MCP server of the 2025-11-25 revision that ends at any request before `initialize`, as servers
// on some SDKs do: the shape that a 2026-07-28 probe (`server/discover`) kills. For the gateway's test
// that such a server is started again and opened with `initialize` alone. One tool: echo {text}.
import { createInterface } from 'node:readline';

let initialized = false;
const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');
createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (!initialized && message.method !== 'initialize') process.exit(1);
  if (message.id === undefined) return; // notifications
  const answer = (result) => send({ jsonrpc: '2.0', id: message.id, result });
  switch (message.method) {
    case 'initialize':
      initialized = true;
      return answer({
        protocolVersion: '2025-11-25',
        capabilities: { tools: {} },
        serverInfo: { name: 'strict-legacy', version: '1.0.0' },
      });
    case 'tools/list':
      return answer({
        tools: [{ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
      });
    case 'tools/call':
      return answer({ content: [{ type: 'text', text: `strict echo: ${message.params.arguments?.text}` }] });
    default:
      return send({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'method not found' } });
  }
});
