// Puts the agents' bearer token on every request to the Portcullis gateway, for the conformance suite
// (its CLI cannot send headers). Everything else passes unchanged both ways, Host and Origin included,
// so the gateway's own DNS-rebinding checks are what the suite sees; responses (SSE too) are streamed.
//
//   node auth-proxy.mjs --port P --target http://127.0.0.1:G --token-file FILE
// Prints `listening http://127.0.0.1:P` when ready.
import http from "node:http";
import { readFileSync } from "node:fs";

const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const target = new URL(arg("--target"));
const token = readFileSync(arg("--token-file"), "utf8").trim();
const port = Number(arg("--port") ?? 0);

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstream = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", (e) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(`auth-proxy: ${e.message}`);
  });
  req.pipe(upstream);
  res.on("close", () => upstream.destroy());
});
server.listen(port, "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${server.address().port}`);
});
