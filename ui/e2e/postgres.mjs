// A private PostgreSQL server for the end-to-end specs (as the Rust tests' `portcullis_team::testing`):
// Debian's binaries on a temporary folder and a free loopback port, a SCRAM password for TCP, run as the
// `postgres` user when the spec runs as root. `stop()` ends it and removes its folder.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "./harness.mjs";

function serverBin() {
  if (process.env.PORTCULLIS_PG_BIN) return process.env.PORTCULLIS_PG_BIN;
  const found = existsSync("/usr/lib/postgresql")
    ? readdirSync("/usr/lib/postgresql")
        .map((v) => `/usr/lib/postgresql/${v}/bin`)
        .filter((b) => existsSync(`${b}/initdb`))
        .sort()
    : [];
  if (found.length === 0) throw new Error("PostgreSQL's server binaries are needed (apt-get install postgresql)");
  return found[found.length - 1];
}

export async function startPostgres() {
  const bin = serverBin();
  const dir = mkdtempSync(path.join(os.tmpdir(), "portcullis-e2e-pg-"));
  chmodSync(dir, 0o755);
  const password = `pw-${process.pid}`;
  const [data, run, pwfile] = [`${dir}/data`, `${dir}/run`, `${dir}/pwfile`];
  mkdirSync(data, { mode: 0o700 });
  mkdirSync(run);
  writeFileSync(pwfile, `${password}\n`);
  const root = process.getuid?.() === 0;
  if (root) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    for (const f of [data, run, pwfile]) chownSync(f, uid, gid);
  }
  const server = (program, args) =>
    root ? execFileSync("runuser", ["-u", "postgres", "--", `${bin}/${program}`, ...args], { cwd: dir }) : execFileSync(`${bin}/${program}`, args, { cwd: dir });
  const port = await freePort();
  server("initdb", ["-D", data, "-U", "portcullis", "--auth-host=scram-sha-256", "--auth-local=trust", `--pwfile=${pwfile}`, "-E", "UTF8", "--no-sync"]);
  server("pg_ctl", ["-D", data, "-o", `-p ${port} -k ${run} -c listen_addresses=127.0.0.1 -c fsync=off`, "-l", `${run}/log`, "-w", "start"]);
  const psql = (db, sql) =>
    execFileSync(`${bin}/psql`, ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", run, "-p", String(port), "-U", "portcullis", "-d", db, "-c", sql])
      .toString()
      .trim();
  return {
    port,
    password,
    psql,
    url: (db) => `postgres://portcullis@127.0.0.1:${port}/${db}?sslmode=disable`,
    stop: () => {
      try {
        server("pg_ctl", ["-D", data, "-m", "immediate", "stop"]);
      } catch {
        // already stopped
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
