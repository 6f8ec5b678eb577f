//! Load benchmark of `graphmind serve` (the real binary, started per case with a fresh
//! database). One run prints one table:
//!
//! - ingest: apps (tokio-tungstenite clients, one run each) send `run.started`, then
//!   `node.started` / `node.finished` pairs as fast as they can; events/s until the hub has
//!   accepted every event (`/health` stats) and until every one is committed (an events read,
//!   which flushes the writer, then `count(*)` in the SQLite file), for 1 and 8 apps;
//! - baselines in the same run: the same frames into a bare loopback WebSocket sink (no
//!   parse, no storage), and the same rows into a bare SQLite table (same schema, one
//!   transaction per 16,384 rows; once with SQLite's default page size, once with the hub's
//!   16 KiB) — what transport and storage alone allow; the SQLite ones run right before each
//!   hub repetition, and each hub case prints its persisted throughput over both baselines'
//!   (the median of the interleaved pairs);
//! - OTLP export on vs off (`serve --otlp` to a loopback collector that answers at once), in
//!   the same run and interleaved: 8 apps sending runs of 100 events, each finished, so the
//!   exporter works all through ingest; the persisted throughput ratio on/off is printed;
//! - gate round trip: the app sends `exec.paused`, a controller sees it through the
//!   `GET /api/pauses?wait=` long poll and POSTs the resume, the app answers `exec.resume`
//!   with `exec.resumed`, and the HTTP answer arrives: p50 / p99, also from the POST alone.
//!
//! `cargo bench -p graphmind-cli --bench hub_load` runs the full sizes (100,000 events per
//! case, 1,000 round trips). `HUB_LOAD_CASES=ingest,otlp,gate` (any of them; all by default)
//! runs only those parts: `ingest` (the baselines and the hub ingest cases), `otlp` (export on
//! vs off), `gate` (the round trips). `HUB_LOAD_BIN=<path>` runs another build of
//! `graphmind` as the hub (to compare a change against its parent with the same bench). Without `--bench` (e.g. `cargo test --benches`) it runs a small
//! smoke size and only checks that everything arrived.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

struct Sizes {
    events: usize,
    round_trips: usize,
    reps: usize,
    full: bool,
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes = if full {
        Sizes {
            events: 100_000,
            round_trips: 1_000,
            reps: 5,
            full,
        }
    } else {
        Sizes {
            events: 2_000,
            round_trips: 20,
            reps: 1,
            full,
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(&sizes));
}

/// Whether the part `name` runs (`HUB_LOAD_CASES`, all when unset).
fn part(name: &str) -> bool {
    std::env::var("HUB_LOAD_CASES").map_or(true, |v| v.split(',').any(|p| p.trim() == name))
}

async fn run(sizes: &Sizes) {
    let dir = TempDir::new();
    let mut rows: Vec<[String; 4]> = Vec::new();
    let n = sizes.events;
    println!(
        "hub_load: {} mode, {n} events per ingest case (median of {}), {} gate round trips, {} cores",
        if sizes.full { "bench" } else { "smoke" },
        sizes.reps,
        sizes.round_trips,
        std::thread::available_parallelism().map_or(0, usize::from)
    );

    // Every ingest case runs `reps` times (fresh hub and database each time); the table shows
    // the median and, in the notes, the slowest — the machine is shared, single runs are noisy.
    if part("ingest") {
        ingest_cases(sizes, &dir, &mut rows).await;
    }
    if part("otlp") {
        otlp_cases(sizes, &dir, &mut rows).await;
    }
    let (full_rt, post_rt) = if part("gate") {
        let db = dir.0.join("hub-gate.db");
        let hub = Hub::start(
            &dir.0,
            &db,
            &["--pause-on-error", "off", "--allow-control", "resume"],
        );
        let rt = gate_round_trips(&hub, sizes.round_trips).await;
        drop(hub);
        rt
    } else {
        (Vec::new(), Vec::new())
    };

    println!();
    println!(
        "{:<46} {:>12} {:>12}  notes",
        "case", "ingested/s", "persisted/s"
    );
    for r in &rows {
        println!("{:<46} {:>12} {:>12}  {}", r[0], r[1], r[2], r[3]);
    }
    println!();
    println!(
        "{:<46} {:>10} {:>10} {:>10}",
        "gate round trip", "p50 µs", "p99 µs", "max µs"
    );
    for (name, v) in [
        ("exec.paused -> long poll -> resume -> released", &full_rt),
        (
            "resume POST -> exec.resume -> exec.resumed -> 200",
            &post_rt,
        ),
    ] {
        println!(
            "{:<46} {:>10} {:>10} {:>10}",
            name,
            pct(v, 50.0),
            pct(v, 99.0),
            v.iter().max().copied().unwrap_or(0)
        );
    }
}

/// The baselines and the hub ingest cases (1 and 8 apps).
async fn ingest_cases(sizes: &Sizes, dir: &TempDir, rows: &mut Vec<[String; 4]>) {
    let n = sizes.events;
    let reps = sizes.reps;
    for apps in [1, 8] {
        let mut t = Vec::new();
        for _ in 0..reps {
            t.push(ws_sink_baseline(apps, n).await);
        }
        rows.push([
            format!("baseline: loopback WebSocket sink, {apps} app(s)"),
            rate(n, median(&t)),
            "-".into(),
            format!("no parse, no storage; slowest {}/s", rate(n, worst(&t))),
        ]);
    }
    // The hub, each repetition right after a bare SQLite baseline (interleaved: the machine's
    // load moves both alike), so the ratio hub / bare SQLite of the same moment is printed.
    let mut bare_all = Vec::new();
    let mut paged_all = Vec::new();
    let mut hub_rows = Vec::new();
    for apps in [1, 8] {
        let mut runs = Vec::new();
        let mut ratios = Vec::new();
        let mut paged_ratios = Vec::new();
        let mut page_sizes = Vec::new();
        for i in 0..reps {
            let bare = sqlite_baseline(&dir.0.join(format!("bare-{apps}-{i}.db")), n, None);
            bare_all.push(bare);
            let paged = sqlite_baseline(
                &dir.0.join(format!("paged-{apps}-{i}.db")),
                n,
                Some(HUB_PAGE_SIZE),
            );
            paged_all.push(paged);
            let db = dir.0.join(format!("hub-{apps}-{i}.db"));
            let hub = Hub::start(&dir.0, &db, &["--pause-on-error", "off"]);
            let r = hub_ingest(&hub, &db, apps, n).await;
            drop(hub);
            // Printed: another build (`HUB_LOAD_BIN`) may give its database another page size.
            page_sizes.push(page_size_of(&db));
            ratios.push(bare.as_secs_f64() / r.persisted.as_secs_f64());
            paged_ratios.push(paged.as_secs_f64() / r.persisted.as_secs_f64());
            runs.push(r);
        }
        ratios.sort_by(f64::total_cmp);
        paged_ratios.sort_by(f64::total_cmp);
        let acc: Vec<Duration> = runs.iter().map(|r| r.accepted).collect();
        let per: Vec<Duration> = runs.iter().map(|r| r.persisted).collect();
        let mut cpu: Vec<f64> = runs.iter().map(|r| r.hub_cpu).collect();
        cpu.sort_by(f64::total_cmp);
        let mut sent: Vec<Duration> = runs.iter().map(|r| r.sent).collect();
        sent.sort();
        // Hub CPU time per event does not depend on how much CPU other processes leave it.
        let mut us: Vec<f64> = runs
            .iter()
            .map(|r| r.hub_cpu * r.persisted.as_secs_f64() * 1e6 / n as f64)
            .collect();
        us.sort_by(f64::total_cmp);
        hub_rows.push([
            format!("hub ingest, {apps} app(s)"),
            rate(n, median(&acc)),
            rate(n, median(&per)),
            format!(
                "persisted / bare SQLite {:.2} (median of {} interleaved pairs; {:.2}..{:.2}), / bare SQLite with the hub's page size {:.2} ({:.2}..{:.2}); slowest {}/s persisted; hub CPU {:.0}% of one core, {:.1} CPU-µs/event; apps sent all in {:.0} ms; the hub's database has pages of {} bytes",
                ratios[ratios.len() / 2],
                ratios.len(),
                ratios[0],
                ratios[ratios.len() - 1],
                paged_ratios[paged_ratios.len() / 2],
                paged_ratios[0],
                paged_ratios[paged_ratios.len() - 1],
                rate(n, worst(&per)),
                cpu[cpu.len() / 2] * 100.0,
                us[us.len() / 2],
                sent[sent.len() / 2].as_secs_f64() * 1e3,
                page_sizes[0]
            ),
        ]);
    }
    rows.push([
        "baseline: bare SQLite INSERT OR IGNORE".into(),
        "-".into(),
        rate(n, median(&bare_all)),
        format!(
            "same schema, 16,384 rows per transaction; run before each hub repetition; slowest {}/s",
            rate(n, worst(&bare_all))
        ),
    ]);
    rows.push([
        "baseline: the same, with the hub's page size".into(),
        "-".into(),
        rate(n, median(&paged_all)),
        format!(
            "PRAGMA page_size = {HUB_PAGE_SIZE} (the hub's, for new databases); run before each hub repetition; slowest {}/s",
            rate(n, worst(&paged_all))
        ),
    ]);
    rows.extend(hub_rows);
}

/// The page size of the database at `db`.
fn page_size_of(db: &Path) -> i64 {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row("PRAGMA page_size", [], |r| r.get(0)))
        .expect("the page size of the hub's database")
}

/// The page size the hub gives a new database (`graphmind-hub/src/storage.rs`, `pragmas`).
const HUB_PAGE_SIZE: u32 = 16_384;

/// OTLP export on vs off.
async fn otlp_cases(sizes: &Sizes, dir: &TempDir, rows: &mut Vec<[String; 4]>) {
    let n = sizes.events;
    let reps = sizes.reps;
    // OTLP export on vs off, same run, interleaved: 8 apps sending short finished runs (so
    // the exporter works all through ingest), the export going to a loopback collector that
    // answers 200 at once.
    let mut collector = Collector::start().await;
    let per_run = 100;
    let (alone_us, expected) = exporter_alone(n, per_run);
    let mut off = Vec::new();
    let mut on = Vec::new();
    let mut exported = Vec::new();
    let mut until_exported: Vec<f64> = Vec::new();
    for i in 0..reps {
        for export in [false, true] {
            let db = dir.0.join(format!("hub-otlp-{export}-{i}.db"));
            let endpoint = collector.endpoint();
            let mut flags = vec!["--pause-on-error", "off"];
            if export {
                flags.extend(["--otlp", endpoint.as_str()]);
            }
            let hub = Hub::start(&dir.0, &db, &flags);
            let r = hub_ingest_runs(&hub, &db, 8, n, per_run, export).await;
            if export {
                assert_eq!(r.runs, expected.len(), "the runs the bench built");
                collector.verify(&expected);
                exported.push(r.exported.expect("exported"));
                until_exported.push(r.cpu_until_exported.expect("exported") * 1e6 / n as f64);
                on.push(r.ingest);
            } else {
                off.push(r.ingest);
            }
            drop(hub);
        }
    }
    let cpu_us = |v: &[Ingest]| {
        let mut us: Vec<f64> = v
            .iter()
            .map(|r| r.hub_cpu * r.persisted.as_secs_f64() * 1e6 / n as f64)
            .collect();
        us.sort_by(f64::total_cmp);
        us[us.len() / 2]
    };
    let (us_off, us_on) = (cpu_us(&off), cpu_us(&on));
    let per_off: Vec<Duration> = off.iter().map(|r| r.persisted).collect();
    let per_on: Vec<Duration> = on.iter().map(|r| r.persisted).collect();
    let ratio = median(&per_off).as_secs_f64() / median(&per_on).as_secs_f64();
    rows.push([
        format!("hub ingest, 8 apps, runs of {per_run}, export off"),
        rate(
            n,
            median(&off.iter().map(|r| r.accepted).collect::<Vec<_>>()),
        ),
        rate(n, median(&per_off)),
        format!(
            "slowest {}/s persisted; hub {us_off:.1} CPU-µs/event",
            rate(n, worst(&per_off))
        ),
    ]);
    rows.push([
        format!("hub ingest, 8 apps, runs of {per_run}, --otlp on"),
        rate(n, median(&on.iter().map(|r| r.accepted).collect::<Vec<_>>())),
        rate(n, median(&per_on)),
        format!(
            "throughput ratio on/off {ratio:.2} (persisted, medians); hub {us_on:.1} CPU-µs/event (export included); every run exported {:.0} ms after the start (median), hub {:.1} CPU-µs/event until then; slowest {}/s persisted",
            median(&exported).as_secs_f64() * 1e3,
            {
                until_exported.sort_by(f64::total_cmp);
                until_exported[until_exported.len() / 2]
            },
            rate(n, worst(&per_on))
        ),
    ]);
    rows.push([
        "exporter alone (spans + encode, 1 thread)".to_owned(),
        String::new(),
        String::new(),
        format!(
            "{alone_us:.2} CPU-µs/event: the bench's runs of {per_run} built and encoded in this process, nothing else running (median of 5)"
        ),
    ]);
    if !sizes.full {
        assert!(collector.spans() > 0, "the collector got spans");
    }
}

fn rate(n: usize, d: Duration) -> String {
    let per_s = n as f64 / d.as_secs_f64();
    let s = format!("{:.0}", per_s);
    // Thousands separators.
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    s[s.len() / 2]
}

fn worst(v: &[Duration]) -> Duration {
    v.iter().max().copied().unwrap_or_default()
}

fn pct(v: &[u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let i = ((p / 100.0) * (s.len() - 1) as f64).round() as usize;
    s[i.min(s.len() - 1)]
}

// ----- frames -------------------------------------------------------------------------------

fn frame(seq: usize, run: &str, kind: &str, payload: &Value) -> String {
    json!({"gm": 1, "seq": seq, "ts": 1_700_000_000_000u64 + seq as u64, "runId": run, "type": kind, "payload": payload})
        .to_string()
}

/// `count` frames of one run: run.started, node.started / node.finished pairs (seq 1..).
fn run_frames(run: &str, count: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(count);
    out.push(frame(
        1,
        run,
        "run.started",
        &json!({"app": "bench", "sdk": {"name": "rust", "version": "0.1.0"}, "meta": {"name": "load"}}),
    ));
    let mut i = 0;
    while out.len() < count {
        let seq = out.len() + 1;
        let call = format!("call_{}", i / 2);
        let p = if i % 2 == 0 {
            json!({"nodeId": "tool:search", "kind": "tool", "name": "search", "instanceId": call,
                   "input": {"query": "flights from Berlin to Lisbon", "limit": 5}})
        } else {
            json!({"nodeId": "tool:search", "instanceId": call, "durationMs": 1.25, "status": "ok",
                   "output": {"hits": i, "first": "LH 1166"}, "heldMs": 0.0})
        };
        let kind = if i % 2 == 0 {
            "node.started"
        } else {
            "node.finished"
        };
        out.push(frame(seq, run, kind, &p));
        i += 1;
    }
    out
}

fn hello() -> String {
    frame(
        0,
        "*",
        "hello",
        &json!({"versions": {"protocol": 1, "client": "0.1.0"},
                "capabilities": ["pause", "step", "inject", "retry", "abort", "run-claim"],
                "app": "bench", "sdk": {"name": "rust", "version": "0.1.0"}}),
    )
}

async fn send_all(ws: &mut Ws, frames: Vec<String>) {
    for (i, f) in frames.into_iter().enumerate() {
        ws.feed(Message::text(f)).await.expect("send");
        if i % 512 == 511 {
            ws.flush().await.expect("flush");
        }
    }
    ws.flush().await.expect("flush");
}

/// Splits `n` events over `apps` runs.
fn split(n: usize, apps: usize) -> Vec<usize> {
    (0..apps)
        .map(|i| n / apps + usize::from(i < n % apps))
        .collect()
}

// ----- baselines ----------------------------------------------------------------------------

async fn ws_sink_baseline(apps: usize, n: usize) -> Duration {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let server = tokio::spawn(async move {
        let mut handles = Vec::new();
        for _ in 0..apps {
            let (s, _) = listener.accept().await.expect("accept");
            handles.push(tokio::spawn(async move {
                let mut ws = tokio_tungstenite::accept_async(s).await.expect("accept ws");
                let mut got = 0usize;
                while let Some(Ok(m)) = ws.next().await {
                    if m.is_text() {
                        got += 1;
                    }
                }
                got
            }));
        }
        let mut total = 0;
        for h in handles {
            total += h.await.expect("join");
        }
        total
    });
    let mut clients = Vec::new();
    for (i, count) in split(n, apps).into_iter().enumerate() {
        let (ws, _) = tokio_tungstenite::connect_async_with_config(
            format!("ws://127.0.0.1:{port}/"),
            None,
            true,
        )
        .await
        .expect("connect");
        clients.push((ws, run_frames(&format!("run_sink{i}"), count)));
    }
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for (mut ws, frames) in clients {
        tasks.push(tokio::spawn(async move {
            send_all(&mut ws, frames).await;
            let _ = ws.close(None).await;
            while let Some(Ok(_)) = ws.next().await {}
        }));
    }
    for t in tasks {
        t.await.expect("join");
    }
    let got = server.await.expect("join");
    let took = t0.elapsed();
    assert_eq!(got, n, "the sink got every frame");
    took
}

const SCHEMA: &str = "CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, \
    ts INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;";

/// The bare SQLite baseline: SQLite's default page size, or `page_size` (the hub's own, to
/// show what the hub's setting alone gives).
fn sqlite_baseline(path: &Path, n: usize, page_size: Option<u32>) -> Duration {
    let frames = run_frames("run_bare", n);
    let conn = rusqlite::Connection::open(path).expect("open");
    if let Some(p) = page_size {
        conn.pragma_update(None, "page_size", p).expect("page size");
    }
    conn.pragma_update(None, "journal_mode", "WAL")
        .expect("wal");
    conn.pragma_update(None, "synchronous", "NORMAL")
        .expect("sync");
    conn.execute_batch(SCHEMA).expect("schema");
    let t0 = Instant::now();
    for chunk in frames.chunks(16_384).collect::<Vec<_>>().iter().enumerate() {
        let (c, rows) = chunk;
        let tx = conn.unchecked_transaction().expect("tx");
        {
            let mut st = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO events (run_id, seq, ts, type, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .expect("prepare");
            for (i, body) in rows.iter().enumerate() {
                let seq = (c * 16_384 + i + 1) as i64;
                st.execute(rusqlite::params![
                    "run_bare",
                    seq,
                    seq,
                    "node.started",
                    body
                ])
                .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    let took = t0.elapsed();
    let count: i64 = conn
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .expect("count");
    assert_eq!(count as usize, n);
    took
}

// ----- the hub ------------------------------------------------------------------------------

struct Hub {
    child: Child,
    port: u16,
    token: String,
}

impl Hub {
    fn start(home: &Path, db: &Path, extra: &[&str]) -> Self {
        // `HUB_LOAD_BIN`: another build of the hub (a before/after comparison, same bench).
        let bin = std::env::var_os("HUB_LOAD_BIN").map_or_else(
            || PathBuf::from(env!("CARGO_BIN_EXE_graphmind")),
            PathBuf::from,
        );
        let mut child = Command::new(bin)
            .args(["serve", "--port", "0", "--json", "--no-open", "--db"])
            .arg(db)
            .args(extra)
            .env("GRAPHMIND_HOME", home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn graphmind serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the --json line");
        let v: Value = serde_json::from_str(line.trim()).expect("JSON line");
        let port = v["port"].as_u64().expect("port") as u16;
        let run: Value = serde_json::from_str(
            &std::fs::read_to_string(v["runFile"].as_str().expect("runFile")).expect("run file"),
        )
        .expect("run file JSON");
        Self {
            child,
            port,
            token: run["token"].as_str().expect("token").to_owned(),
        }
    }

    /// user + system CPU time of the hub process so far.
    fn cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        let after = stat.rsplit_once(") ").map_or("", |(_, r)| r);
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks: u64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0)
            + f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0);
        Duration::from_millis(ticks * 10) // USER_HZ is 100 on Linux
    }

    async fn app(&self) -> Ws {
        // Apps disable Nagle, as the graphmind client does: small control frames go out at once.
        let (mut ws, _) = tokio_tungstenite::connect_async_with_config(
            format!("ws://127.0.0.1:{}/ingest", self.port),
            None,
            true,
        )
        .await
        .expect("connect /ingest");
        ws.send(Message::text(hello())).await.expect("hello");
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) if t.as_str().contains("\"hello.ack\"") => return ws,
                Some(Ok(_)) => {}
                other => panic!("no hello.ack: {other:?}"),
            }
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A keep-alive HTTP/1.1 connection to the hub.
struct Http {
    r: tokio::io::BufReader<TcpStream>,
    port: u16,
}

impl Http {
    async fn connect(port: u16) -> Self {
        let s = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        s.set_nodelay(true).expect("nodelay");
        Self {
            r: tokio::io::BufReader::new(s),
            port,
        }
    }

    async fn send(&mut self, method: &str, path: &str, token: Option<&str>, body: Option<&str>) {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n",
            self.port
        );
        if let Some(t) = token {
            req.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        if let Some(b) = body {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                b.len()
            ));
        } else {
            req.push_str("\r\n");
        }
        self.r
            .get_mut()
            .write_all(req.as_bytes())
            .await
            .expect("write");
    }

    async fn answer(&mut self) -> (u16, String) {
        let mut status = 0;
        let mut len = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            self.r.read_line(&mut line).await.expect("read");
            let l = line.trim_end();
            if l.is_empty() && status != 0 {
                break;
            }
            if l.starts_with("HTTP/1.1 ") {
                status = l[9..12].parse().expect("status");
            } else if let Some((k, v)) = l.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse().expect("length");
            }
        }
        let mut body = vec![0; len];
        self.r.read_exact(&mut body).await.expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    async fn get(&mut self, path: &str) -> (u16, String) {
        self.send("GET", path, None, None).await;
        self.answer().await
    }
}

struct Ingest {
    accepted: Duration,
    persisted: Duration,
    sent: Duration,
    hub_cpu: f64,
}

async fn hub_ingest(hub: &Hub, db: &Path, apps: usize, n: usize) -> Ingest {
    let mut conns = Vec::new();
    for (i, count) in split(n, apps).into_iter().enumerate() {
        let ws = hub.app().await;
        conns.push((ws, run_frames(&format!("run_load{apps}x{i}"), count)));
    }
    let mut http = Http::connect(hub.port).await;
    let accepted_now = |h: &str| -> u64 {
        serde_json::from_str::<Value>(h).expect("health")["stats"]["eventsAccepted"]
            .as_u64()
            .expect("eventsAccepted")
    };
    let base = accepted_now(&http.get("/health").await.1);
    let cpu0 = hub.cpu();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for (mut ws, frames) in conns {
        tasks.push(tokio::spawn(async move {
            send_all(&mut ws, frames).await;
            ws
        }));
    }
    let mut open = Vec::new();
    for t in tasks {
        open.push(t.await.expect("join"));
    }
    let sent = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(120);
    let accepted = loop {
        let got = accepted_now(&http.get("/health").await.1) - base;
        if got >= n as u64 {
            break t0.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "the hub accepted only {got} of {n} events"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    // An events read flushes the writer: everything accepted before it is committed after.
    // Reads of events take a token; the agent token is one.
    http.send(
        "GET",
        &format!("/api/runs/run_load{apps}x0/events?afterSeq={n}&limit=1"),
        Some(&hub.token),
        None,
    )
    .await;
    let (status, _) = http.answer().await;
    assert_eq!(status, 200);
    let persisted = t0.elapsed();
    let hub_cpu = (hub.cpu() - cpu0).as_secs_f64() / persisted.as_secs_f64();
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the hub's db");
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE run_id LIKE ?1",
            [format!("run_load{apps}x%")],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(rows as usize, n, "every event is in the database");
    drop(open);
    Ingest {
        accepted,
        persisted,
        sent,
        hub_cpu,
    }
}

/// A loopback OTLP/HTTP collector for the export case: answers every `POST /v1/traces` with
/// 200 at once and keeps the request bodies; [`Collector::verify`] decodes them (with the
/// official proto types) after the timed window — a real collector runs elsewhere, so its
/// decoding is not charged to the hub's throughput on these shared cores.
struct Collector {
    port: u16,
    bodies: Arc<std::sync::Mutex<Vec<axum::body::Bytes>>>,
    spans: u64,
}

impl Collector {
    async fn start() -> Self {
        let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let kept = Arc::clone(&kept);
                async move {
                    kept.lock().expect("bodies").push(body);
                    axum::http::StatusCode::OK
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            port,
            bodies,
            spans: 0,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Decodes the requests got since the last call and checks that every run arrived whole:
    /// `expected` holds each run's trace id and its count of spans.
    fn verify(&mut self, expected: &std::collections::HashMap<Vec<u8>, usize>) {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use prost::Message as _;
        let bodies = std::mem::take(&mut *self.bodies.lock().expect("bodies"));
        let mut traces: std::collections::HashMap<Vec<u8>, usize> =
            std::collections::HashMap::new();
        for body in bodies {
            let req = ExportTraceServiceRequest::decode(body.as_ref()).expect("OTLP request");
            for span in req
                .resource_spans
                .iter()
                .flat_map(|r| &r.scope_spans)
                .flat_map(|s| &s.spans)
            {
                *traces.entry(span.trace_id.clone()).or_default() += 1;
                self.spans += 1;
            }
        }
        assert_eq!(traces.len(), expected.len(), "one trace per run");
        assert!(
            traces == *expected,
            "every run arrived whole, its spans none twice"
        );
    }

    fn spans(&self) -> u64 {
        self.spans
    }
}

/// Frames of one connection: consecutive runs of `per_run` events each (run.started, node
/// pairs, run.finished), `count` events in all, seqs counting up across runs.
fn finished_runs_frames(prefix: &str, count: usize, per_run: usize) -> (Vec<String>, usize) {
    let mut out = Vec::with_capacity(count);
    let mut runs = 0;
    while out.len() < count {
        let run = format!("{prefix}r{runs}");
        let len = per_run.min(count - out.len()).max(2);
        let base = out.len();
        for (i, f) in run_frames(&run, len - 1).into_iter().enumerate() {
            let mut v: Value = serde_json::from_str(&f).expect("frame");
            v["seq"] = json!(base + i + 1);
            out.push(v.to_string());
        }
        out.push(frame(
            base + len,
            &run,
            "run.finished",
            &json!({"status": "ok"}),
        ));
        runs += 1;
    }
    (out, runs)
}

struct RunsIngest {
    ingest: Ingest,
    /// Runs sent.
    runs: usize,
    /// The hub's CPU seconds from the start until the collector had every run (export on).
    cpu_until_exported: Option<f64>,
    /// Time from the start until the collector had every run (export on).
    exported: Option<Duration>,
}

/// [`hub_ingest`] with short finished runs; with `export`, also waits until the hub reports
/// every run exported.
async fn hub_ingest_runs(
    hub: &Hub,
    db: &Path,
    apps: usize,
    n: usize,
    per_run: usize,
    export: bool,
) -> RunsIngest {
    let mut conns = Vec::new();
    let mut total_runs = 0;
    let mut n_sent = 0;
    for (i, count) in split(n, apps).into_iter().enumerate() {
        let ws = hub.app().await;
        let (frames, runs) = finished_runs_frames(&format!("run_fin{i}"), count, per_run);
        total_runs += runs;
        n_sent += frames.len();
        conns.push((ws, frames));
    }
    let n = n_sent;
    let mut http = Http::connect(hub.port).await;
    let health = |h: &str| serde_json::from_str::<Value>(h).expect("health");
    let base = health(&http.get("/health").await.1)["stats"]["eventsAccepted"]
        .as_u64()
        .expect("eventsAccepted");
    let cpu0 = hub.cpu();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for (mut ws, frames) in conns {
        tasks.push(tokio::spawn(async move {
            send_all(&mut ws, frames).await;
            ws
        }));
    }
    let mut open = Vec::new();
    for t in tasks {
        open.push(t.await.expect("join"));
    }
    let sent = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(120);
    let accepted = loop {
        let got = health(&http.get("/health").await.1)["stats"]["eventsAccepted"]
            .as_u64()
            .unwrap_or(0)
            - base;
        if got >= n as u64 {
            break t0.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "the hub accepted only {got} of {n} events"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    http.send(
        "GET",
        "/api/runs/run_fin0r0/events?afterSeq=1000000&limit=1",
        Some(&hub.token),
        None,
    )
    .await;
    let (status, _) = http.answer().await;
    assert_eq!(status, 200);
    let persisted = t0.elapsed();
    let hub_cpu = (hub.cpu() - cpu0).as_secs_f64() / persisted.as_secs_f64();
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the hub's db");
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM events WHERE run_id LIKE 'run_fin%'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(rows as usize, n, "every event is in the database");
    let mut cpu_until_exported = None;
    let exported = if export {
        loop {
            let h = health(&http.get("/health").await.1);
            let o = &h["otlp"];
            if o["runsExported"].as_u64() == Some(total_runs as u64) {
                cpu_until_exported = Some((hub.cpu() - cpu0).as_secs_f64());
                break Some(t0.elapsed());
            }
            assert_eq!(o["runsDropped"], 0, "no run dropped: {h}");
            assert_eq!(o["runsFailed"], 0, "no run failed: {h}");
            assert!(Instant::now() < deadline, "not every run exported: {h}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    } else {
        None
    };
    drop(open);
    RunsIngest {
        ingest: Ingest {
            accepted,
            persisted,
            sent,
            hub_cpu,
        },
        runs: total_runs,
        cpu_until_exported,
        exported,
    }
}

/// The exporter's own CPU per event, apart from ingest and core contention: the spans of the
/// export case's runs (`n` events, runs of `per_run`, as the 8 apps send them) built from
/// their envelopes and encoded as requests of 64 runs, on this thread, with nothing else
/// running. Returns this thread's CPU-µs per event (median of 5) and each run's trace id with its count of spans.
fn exporter_alone(n: usize, per_run: usize) -> (f64, std::collections::HashMap<Vec<u8>, usize>) {
    use graphmind_hub::otlp::{MapOptions, encode, run_spans, trace_id};
    let mut runs: Vec<(String, Vec<String>)> = Vec::new();
    for (i, count) in split(n, 8).into_iter().enumerate() {
        let (frames, _) = finished_runs_frames(&format!("run_fin{i}"), count, per_run);
        for f in frames {
            let v: Value = serde_json::from_str(&f).expect("frame");
            let run = v["runId"].as_str().expect("runId").to_owned();
            match runs.last_mut() {
                Some((id, bodies)) if *id == run => bodies.push(f),
                _ => runs.push((run, vec![f])),
            }
        }
    }
    let events: usize = runs.iter().map(|(_, b)| b.len()).sum();
    let expected = runs
        .iter()
        .map(|(id, bodies)| {
            let rs = run_spans(id, bodies, false, MapOptions::default());
            let spans = rs.scope_spans.iter().map(|s| s.spans.len()).sum();
            (trace_id(id).to_vec(), spans)
        })
        .collect();
    // This thread's user + system CPU time (10 ms ticks; each repetition takes far longer).
    let thread_cpu = || {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
        let after = stat.rsplit_once(") ").map_or("", |(_, r)| r);
        let f: Vec<&str> = after.split_whitespace().collect();
        let ticks: u64 = f.get(11).and_then(|x| x.parse().ok()).unwrap_or(0)
            + f.get(12).and_then(|x| x.parse().ok()).unwrap_or(0);
        Duration::from_millis(ticks * 10)
    };
    let mut us = Vec::new();
    for _ in 0..5 {
        let t0 = thread_cpu();
        let mut bytes = 0;
        for chunk in runs.chunks(64) {
            let batch = chunk
                .iter()
                .map(|(id, bodies)| run_spans(id, bodies, false, MapOptions::default()))
                .collect();
            bytes += encode(batch).len();
        }
        assert!(bytes > 0);
        us.push((thread_cpu() - t0).as_secs_f64() * 1e6 / events as f64);
    }
    us.sort_by(f64::total_cmp);
    (us[2], expected)
}

async fn gate_round_trips(hub: &Hub, rounds: usize) -> (Vec<u64>, Vec<u64>) {
    let run = "run_gate";
    let ws = hub.app().await;
    let (mut sink, mut stream) = ws.split();
    sink.send(Message::text(frame(
        1,
        run,
        "run.started",
        &json!({"app": "bench", "sdk": {"name": "rust", "version": "0.1.0"}, "meta": {"name": "gate"}}),
    )))
    .await
    .expect("send");
    let sink = Arc::new(tokio::sync::Mutex::new(sink));
    let seq = Arc::new(std::sync::atomic::AtomicUsize::new(2));
    // The app answers every exec.resume at once.
    let responder = {
        let sink = Arc::clone(&sink);
        let seq = Arc::clone(&seq);
        tokio::spawn(async move {
            while let Some(Ok(m)) = stream.next().await {
                let Message::Text(t) = m else { continue };
                let v: Value = serde_json::from_str(t.as_str()).expect("JSON");
                if v["type"] != "exec.resume" {
                    continue;
                }
                let s = seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let f = frame(
                    s,
                    run,
                    "exec.resumed",
                    &json!({"pauseId": v["payload"]["pauseId"], "action": v["payload"]["action"]}),
                );
                sink.lock()
                    .await
                    .send(Message::text(f))
                    .await
                    .expect("send");
            }
        })
    };
    let mut poll = Http::connect(hub.port).await;
    let mut ctl = Http::connect(hub.port).await;
    let mut full = Vec::with_capacity(rounds);
    let mut post = Vec::with_capacity(rounds);
    for i in 0..rounds + rounds / 10 {
        let pause = format!("pause_bench_{i}");
        poll.send(
            "GET",
            &format!("/api/pauses?runId={run}&wait=5"),
            Some(&hub.token),
            None,
        )
        .await;
        let t0 = Instant::now();
        {
            let s = seq.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let f = frame(
                s,
                run,
                "exec.paused",
                &json!({"pauseId": pause, "nodeId": "tool:search", "point": "before"}),
            );
            sink.lock()
                .await
                .send(Message::text(f))
                .await
                .expect("send");
        }
        let (status, body) = poll.answer().await;
        assert_eq!(status, 200);
        assert!(
            body.contains(&pause),
            "the long poll shows the pause: {body}"
        );
        let t1 = Instant::now();
        ctl.send(
            "POST",
            &format!("/api/runs/{run}/pauses/{pause}/resume"),
            Some(&hub.token),
            Some(r#"{"action":"continue"}"#),
        )
        .await;
        let (status, body) = ctl.answer().await;
        assert_eq!(status, 200, "resume: {body}");
        let end = Instant::now();
        // The first tenth warms up.
        if i >= rounds / 10 {
            full.push((end - t0).as_micros() as u64);
            post.push((end - t1).as_micros() as u64);
        }
    }
    responder.abort();
    (full, post)
}

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let p = std::env::temp_dir().join(format!("gm-hub-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
