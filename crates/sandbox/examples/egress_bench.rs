//! The egress proxy's own cost, one JSON object per line on stdout: what a connection through it adds
//! (CONNECT, the host check, the proxy's resolution and its connection upstream), and how many bytes
//! per second it relays, each against the same loopback upstream reached directly.
//!
//! `cargo run --release -p portcullis-sandbox --example egress_bench -- [connections] [megabytes]`
//!
//! The proxy listens on loopback TCP here; in the sandbox it will be reached over a Unix socket bridged
//! into the command's namespace (not built yet), which this bench does not include.
#![allow(clippy::print_stdout, clippy::print_stderr)] // a bench binary reports on stdout and stderr

use portcullis_harness::HostPattern;
use portcullis_sandbox::egress::{EgressRules, Resolver, serve_connection};
use serde_json::json;
use std::error::Error;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type BenchResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

const HOST: &str = "bench.example";
const CHUNK: usize = 256 * 1024;

fn emit(line: serde_json::Value) {
    if writeln!(std::io::stdout(), "{line}").is_err() {
        std::process::exit(1);
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    sorted.get(i).copied().unwrap_or(0.0)
}

/// An upstream that answers `ping` with `pong`, or reads everything it is sent and answers with the
/// byte count.
async fn upstream() -> BenchResult<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                let mut buf = vec![0u8; CHUNK];
                let mut total = 0u64;
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if total == 0 && &buf[..n] == b"ping" {
                                let _ = s.write_all(b"pong").await;
                                return;
                            }
                            total += n as u64;
                        }
                    }
                }
                let _ = s.write_all(&total.to_be_bytes()).await;
            });
        }
    });
    Ok(address)
}

/// The proxy on loopback, allowing `HOST` on the upstream's port.
async fn proxy(port: u16) -> BenchResult<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let rules = Arc::new(EgressRules {
        hosts: vec![HostPattern::parse(&format!("{HOST}:{port}"))?],
        by: "rule `bench` (bench)".into(),
        ask: None,
    });
    let resolver = Arc::new(Resolver::Map([(HOST.to_owned(), IpAddr::from([127, 0, 0, 1]))].into()));
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            let _ = s.set_nodelay(true);
            let (rules, resolver) = (rules.clone(), resolver.clone());
            tokio::spawn(async move { serve_connection(s, &rules, &resolver).await });
        }
    });
    Ok(address)
}

/// A connection to the upstream: directly, or through the proxy (CONNECT, then its answer read).
async fn open(upstream: SocketAddr, via: Option<SocketAddr>) -> BenchResult<TcpStream> {
    let Some(proxy) = via else {
        let s = TcpStream::connect(upstream).await?;
        s.set_nodelay(true)?;
        return Ok(s);
    };
    let mut s = TcpStream::connect(proxy).await?;
    s.set_nodelay(true)?;
    s.write_all(format!("CONNECT {HOST}:{} HTTP/1.1\r\n\r\n", upstream.port()).as_bytes()).await?;
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).await? == 0 {
            return Err("the proxy closed the connection".into());
        }
        answer.push(byte[0]);
    }
    if !answer.starts_with(b"HTTP/1.1 200") {
        return Err(format!("the proxy said {}", String::from_utf8_lossy(&answer)).into());
    }
    Ok(s)
}

/// µs per connection (open, ping, pong), sorted.
async fn connections(n: usize, upstream: SocketAddr, via: Option<SocketAddr>) -> BenchResult<Vec<f64>> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let mut s = open(upstream, via).await?;
        s.write_all(b"ping").await?;
        let mut pong = [0u8; 4];
        s.read_exact(&mut pong).await?;
        if &pong != b"pong" {
            return Err("a wrong answer".into());
        }
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    Ok(times)
}

/// MB/s of `megabytes` sent through one connection, counted by the upstream.
async fn throughput(megabytes: usize, upstream: SocketAddr, via: Option<SocketAddr>) -> BenchResult<f64> {
    let mut s = open(upstream, via).await?;
    let chunk = vec![0x5au8; CHUNK];
    let total = megabytes * 1024 * 1024;
    let started = Instant::now();
    let mut sent = 0;
    while sent < total {
        s.write_all(&chunk).await?;
        sent += CHUNK;
    }
    s.shutdown().await?;
    let mut count = [0u8; 8];
    s.read_exact(&mut count).await?;
    let seconds = started.elapsed().as_secs_f64();
    if u64::from_be_bytes(count) != sent as u64 {
        return Err(format!("the upstream counted {} of {sent} bytes", u64::from_be_bytes(count)).into());
    }
    Ok(sent as f64 / 1e6 / seconds)
}

async fn run(n: usize, megabytes: usize) -> BenchResult<()> {
    let upstream = upstream().await?;
    let via = proxy(upstream.port()).await?;
    // Warm up both paths.
    connections(n / 10 + 1, upstream, None).await?;
    connections(n / 10 + 1, upstream, Some(via)).await?;
    let direct = connections(n, upstream, None).await?;
    let proxied = connections(n, upstream, Some(via)).await?;
    let (d50, p50) = (percentile(&direct, 50.0), percentile(&proxied, 50.0));
    emit(json!({"bench": "egress_connection", "connections": n,
        "direct_p50_us": d50, "proxied_p50_us": p50, "added_p50_us": p50 - d50,
        "added_p90_us": percentile(&proxied, 90.0) - percentile(&direct, 90.0)}));
    let mut direct_mbs = Vec::new();
    let mut proxied_mbs = Vec::new();
    for _ in 0..3 {
        direct_mbs.push(throughput(megabytes, upstream, None).await?);
        proxied_mbs.push(throughput(megabytes, upstream, Some(via)).await?);
    }
    direct_mbs.sort_by(f64::total_cmp);
    proxied_mbs.sort_by(f64::total_cmp);
    emit(json!({"bench": "egress_throughput", "megabytes": megabytes,
        "direct_mb_per_s": direct_mbs[1], "proxied_mb_per_s": proxied_mbs[1], "goal_mb_per_s": 500}));
    Ok(())
}

fn main() -> BenchResult<()> {
    let numbers: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = numbers.first().copied().unwrap_or(2000).max(1);
    let megabytes = numbers.get(1).copied().unwrap_or(1024).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(run(n, megabytes))
}
