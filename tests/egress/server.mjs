// A static HTTPS server on loopback for the egress tests (issue 35): serves the folder `root`, a
// folder's index.html or index.json, `{ORIGIN}` in .json and .html replaced by the origin it was asked
// under, `/redirect?to=<url>` as a 302. Every request is appended to `log` ("host method path"), so a
// test can tell whether anything reached a server it must not. Prints {"port": n} once it listens.
// Usage: node server.mjs '{"root": .., "cert": .., "key": .., "log": ..}'
import { createServer } from "node:https";
import { readFileSync, appendFileSync, statSync, existsSync } from "node:fs";
import { join, normalize, extname } from "node:path";

const config = JSON.parse(process.argv[2]);
const types = { ".json": "application/json", ".html": "text/html", ".txt": "text/plain", ".tgz": "application/octet-stream", ".whl": "application/octet-stream" };

function file(urlPath) {
  const clean = normalize(decodeURIComponent(urlPath)).replace(/^(\.\.[/\\])+/, "");
  let path = join(config.root, clean);
  if (existsSync(path) && statSync(path).isDirectory()) {
    path = ["index.html", "index.json"].map((n) => join(path, n)).find(existsSync) ?? path;
  }
  return existsSync(path) && statSync(path).isFile() ? path : null;
}

const server = createServer({ cert: readFileSync(config.cert), key: readFileSync(config.key) }, (req, res) => {
  appendFileSync(config.log, `${req.headers.host} ${req.method} ${req.url}\n`);
  const url = new URL(req.url, `https://${req.headers.host}`);
  if (url.pathname === "/redirect") {
    res.writeHead(302, { Location: url.searchParams.get("to") ?? "/" });
    return res.end();
  }
  const path = file(url.pathname);
  if (!path) {
    res.writeHead(404, { "Content-Type": "text/plain" });
    return res.end("not found\n");
  }
  let body = readFileSync(path);
  const type = types[extname(path)] ?? "application/octet-stream";
  if (extname(path) === ".json" || extname(path) === ".html") {
    body = Buffer.from(body.toString("utf8").replaceAll("{ORIGIN}", `https://${req.headers.host}`));
  }
  res.writeHead(200, { "Content-Type": type, "Content-Length": body.length });
  res.end(body);
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
});
