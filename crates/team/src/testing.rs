//! A private PostgreSQL server for tests: Debian's own binaries (`initdb`, `pg_ctl` under
//! /usr/lib/postgresql/N/bin, or `$PORTCULLIS_PG_BIN`) on a data folder of its own and a free loopback
//! port, with a password (SCRAM) for TCP. As root the server runs as the `postgres` user, since
//! PostgreSQL refuses to run as root. Stopped and removed when dropped (a kept one is only stopped).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The database user the tests connect as.
pub const USER: &str = "portcullis";

/// A running private PostgreSQL server.
pub struct PrivatePostgres {
    /// The server's folder: its data, socket, log and password file.
    root: PathBuf,
    /// Removes `root` when dropped; `None` for a folder that is kept ([`PrivatePostgres::kept`]).
    _temp: Option<tempfile::TempDir>,
    bin: PathBuf,
    port: u16,
    password: String,
    /// The server's own TLS files when it was started with TLS (a CA-less self-signed certificate).
    tls: Option<(PathBuf, PathBuf)>,
}

/// Where Debian's server binaries are.
pub fn server_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PORTCULLIS_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").exists())
        .collect();
    found.sort();
    found.pop()
}

fn as_root() -> bool {
    nix::unistd::geteuid().is_root()
}

impl PrivatePostgres {
    /// Starts a fresh server (no TLS).
    pub fn start() -> PrivatePostgres {
        PrivatePostgres::start_with(None)
    }

    /// Starts a fresh server that also speaks TLS with `cert_pem`/`key_pem`.
    pub fn start_with_tls(cert_pem: &str, key_pem: &str) -> PrivatePostgres {
        PrivatePostgres::start_with(Some((cert_pem, key_pem)))
    }

    /// A server on folder `root` that outlives the process (for benches that reuse a large database):
    /// started again with its data when `root` holds a server made this way, else made there; stopped,
    /// not removed, when dropped.
    pub fn kept(root: &Path) -> PrivatePostgres {
        let bin = server_bin().expect("PostgreSQL's server binaries (apt-get install postgresql)");
        let pwfile = root.join("pwfile");
        if !root.join("data").join("PG_VERSION").exists() {
            std::fs::create_dir_all(root).unwrap();
            return PrivatePostgres::make(root.to_path_buf(), None, bin, None);
        }
        let password = std::fs::read_to_string(&pwfile).unwrap().trim().to_owned();
        let port = free_port();
        let pg = PrivatePostgres { root: root.to_path_buf(), _temp: None, bin, port, password, tls: None };
        pg.start_again();
        pg
    }

    fn start_with(tls: Option<(&str, &str)>) -> PrivatePostgres {
        let bin = server_bin().expect("PostgreSQL's server binaries (apt-get install postgresql)");
        let dir = tempfile::Builder::new().prefix("portcullis-pg").tempdir().unwrap();
        PrivatePostgres::make(dir.path().to_path_buf(), Some(dir), bin, tls)
    }

    /// Makes a server on `root` (initdb) and starts it.
    fn make(
        root: PathBuf,
        temp: Option<tempfile::TempDir>,
        bin: PathBuf,
        tls: Option<(&str, &str)>,
    ) -> PrivatePostgres {
        let dir = root.as_path();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let password = format!("pw-{}", std::process::id());
        let pwfile = dir.join("pwfile");
        std::fs::write(&pwfile, format!("{password}\n")).unwrap();
        std::fs::create_dir(dir.join("run")).unwrap();
        std::fs::create_dir(dir.join("data")).unwrap();
        std::fs::set_permissions(dir.join("data"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut files = vec![pwfile.clone(), dir.join("run"), dir.join("data")];
        let tls = tls.map(|(cert, key)| {
            let (c, k) = (dir.join("server.crt"), dir.join("server.key"));
            std::fs::write(&c, cert).unwrap();
            std::fs::write(&k, key).unwrap();
            std::fs::set_permissions(&k, std::fs::Permissions::from_mode(0o600)).unwrap();
            files.extend([c.clone(), k.clone()]);
            (c, k)
        });
        if as_root() {
            let postgres = nix::unistd::User::from_name("postgres").unwrap().expect("the postgres user");
            for file in &files {
                nix::unistd::chown(file, Some(postgres.uid), Some(postgres.gid)).unwrap();
            }
        }
        let port = free_port();
        let pg = PrivatePostgres { root, _temp: temp, bin, port, password, tls };
        let data = pg.data();
        let initdb = pg.server_command(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                USER,
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                &format!("--pwfile={}", pwfile.display()),
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        run(initdb, "initdb");
        pg.start_again();
        pg
    }

    fn data(&self) -> PathBuf {
        self.root.as_path().join("data")
    }

    /// A command for one of the server's binaries, as the user the server runs as.
    fn server_command(&self, program: &str, args: &[&str]) -> Command {
        let path = self.bin.join(program);
        let mut command = if as_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        command.args(args).current_dir(self.root.as_path());
        command
    }

    /// Starts the server (again, after [`PrivatePostgres::stop`]) and waits until it accepts connections.
    pub fn start_again(&self) {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self.root.as_path().join("run").display()
        );
        if let Some((cert, key)) = &self.tls {
            options.push_str(&format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                cert.display(),
                key.display()
            ));
        }
        let data = self.data();
        let log = self.root.as_path().join("run").join("log");
        let start = self.server_command(
            "pg_ctl",
            &["-D", data.to_str().unwrap(), "-o", &options, "-l", log.to_str().unwrap(), "-w", "start"],
        );
        run(start, "pg_ctl start");
    }

    /// Stops the server (`fast`: clients are disconnected, what was committed is kept).
    pub fn stop(&self) {
        let data = self.data();
        run(
            self.server_command("pg_ctl", &["-D", data.to_str().unwrap(), "-m", "fast", "-w", "stop"]),
            "pg_ctl stop",
        );
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// A URL of database `db` (made with [`PrivatePostgres::create_db`]) without its password.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}?sslmode=disable", self.port)
    }

    /// The same database over TLS, trusting `roots` (a PEM file).
    pub fn tls_url(&self, db: &str, roots: &Path) -> String {
        format!(
            "postgres://{USER}@localhost:{}/{db}?sslmode=verify-full&sslrootcert={}",
            self.port,
            roots.display()
        )
    }

    /// Writes the server's password into an owner-only file `name` in `dir` (as a hub's password file
    /// must be), and returns its path.
    pub fn password_file(&self, dir: &Path, name: &str) -> PathBuf {
        let file = dir.join(name);
        std::fs::write(&file, format!("{}\n", self.password)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        file
    }

    /// The team ledger of database `db`, its password in an owner-only file in `dir`.
    pub fn team_db(&self, db: &str, dir: &Path) -> crate::TeamDb {
        crate::TeamDb::parse(&self.url(db), Some(&self.password_file(dir, "pw"))).unwrap()
    }

    /// Makes database `db`.
    pub fn create_db(&self, db: &str) {
        self.sql("postgres", &format!("CREATE DATABASE \"{db}\""));
    }

    /// Runs `sql` on database `db` over the server's socket; rows as tab-separated lines.
    pub fn sql(&self, db: &str, sql: &str) -> Vec<Vec<String>> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", self.root.as_path().join("run").to_str().unwrap()])
            .args(["-p", &self.port.to_string(), "-U", USER, "-d", db, "-c", sql])
            .output()
            .unwrap();
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\t').map(str::to_owned).collect())
            .collect()
    }

    /// One number from `sql`.
    pub fn count(&self, db: &str, sql: &str) -> i64 {
        self.sql(db, sql)[0][0].parse().unwrap()
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .server_command("pg_ctl", &["-D", data.to_str().unwrap_or(""), "-m", "immediate", "stop"])
            .output();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn run(mut command: Command, what: &str) {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
