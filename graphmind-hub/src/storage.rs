//! SQLite storage: a `runs` and an `events` table in WAL mode, and `deleted_runs`: the ids of
//! the runs the retention rule deleted (tombstones), so that an app replaying their events
//! does not bring them back.
//!
//! All writes go through ONE writer thread that drains a channel and commits whatever has
//! queued up in one transaction (prepared statements, `synchronous=NORMAL`), so a flood of
//! small events costs one commit per batch, not one per event. `INSERT OR IGNORE` on the
//! `(run_id, seq)` primary key makes replays idempotent. Reads use a small pool of separate
//! connections, which WAL lets run beside the writer.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, params};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::files;

/// One stored envelope.
#[derive(Debug, Clone)]
pub struct EventRow {
    /// The run.
    pub run_id: Arc<str>,
    /// Sender's seq.
    pub seq: u64,
    /// Sender's timestamp.
    pub ts: u64,
    /// Message type.
    pub kind: std::borrow::Cow<'static, str>,
    /// The envelope as JSON text.
    pub body: Arc<str>,
}

/// The stored summary of a run (without its event count, which the writer keeps).
#[derive(Debug, Clone, Default)]
pub struct RunRow {
    /// The run.
    pub run_id: String,
    /// App name.
    pub app: Option<String>,
    /// Run name.
    pub name: Option<String>,
    /// running, ok, error, aborted, abandoned.
    pub status: String,
    /// Start (run.started ts).
    pub started_at: Option<u64>,
    /// End (run.finished ts).
    pub ended_at: Option<u64>,
    /// SDK info as JSON text.
    pub sdk: Option<String>,
    /// When the hub first saw the run.
    pub created_at: u64,
    /// Stored events (read side only).
    pub event_count: u64,
    /// Its app announced events of it lost (read side only; written by [`Writer::gap`]).
    pub incomplete: bool,
    /// Stored `node.error` events (read side only).
    pub error_count: u64,
}

/// One write of a [`Writer::queue`]d batch.
#[derive(Debug)]
pub enum Write {
    /// A run summary upsert (boxed: rare, and larger than an event).
    Run(Box<RunRow>),
    /// An event.
    Event(EventRow),
}

enum WriteOp {
    /// Run summaries and events in their order, with the events' share of the queue's byte
    /// budget, given back once their batch is written.
    Many(Vec<Write>, Option<OwnedSemaphorePermit>),
    Run(RunRow),
    /// A run deleted by a retention pass that became active again meanwhile: stored again,
    /// its tombstone removed.
    Revive(RunRow),
    Barrier(oneshot::Sender<()>),
    Retain(RetainOp),
    /// A run with a gap.
    Gap(String),
}

/// A retention pass asked of the writer.
struct RetainOp {
    retention: Retention,
    now_ms: u64,
    /// Runs not to delete whatever their age (unfinished runs of the hub's memory).
    protect: HashSet<String>,
    /// Gets the ids of the deleted runs once the pass is over.
    done: oneshot::Sender<Vec<String>>,
}

/// A retention pass in progress on the writer thread: runs are deleted a few at a time, between
/// batches of writes, so ingest never waits for a long delete.
struct Trim {
    doomed: Vec<String>,
    next: usize,
    deleted: Vec<String>,
    done: oneshot::Sender<Vec<String>>,
}

/// Sends work to the writer thread. Cheap to clone.
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<WriteOp>,
    /// Bytes of event bodies queued and not yet written ([`WRITER_BYTES`] permits).
    bytes: Arc<Semaphore>,
}

/// Queue depth of the writer channel, in sends (a send is one operation or one batch of up
/// to an app's burst of rows); a full queue slows the senders down (backpressure to the apps'
/// sockets) instead of growing without bound. What the queued rows hold is bounded by
/// [`WRITER_BYTES`], not by this.
const WRITER_QUEUE: usize = 65_536;
/// Bytes the rows queued for the writer may hold: each event's body plus [`ROW_COST`] per row.
/// A writer that falls behind slows the senders down at this, whether the rows are large
/// (65,536 batches of 512 KB would be 32 GB) or tiny (65,536 batches of 16 small rows would
/// otherwise hold a million rows' overhead).
pub const WRITER_BYTES: usize = 64 * 1024 * 1024;
/// What a queued row costs besides its event body, charged to [`WRITER_BYTES`]: its
/// `EventRow`/`RunRow` and the reference-counted headers and run id behind it, rounded up.
pub const ROW_COST: usize = 128;
/// Most operations committed in one transaction.
const MAX_BATCH: usize = 16_384;
/// Runs deleted per transaction by a retention pass while the hub runs.
const TRIM_CHUNK: usize = 32;
/// How long the id of a deleted run is remembered: an app's replay ring older than this is
/// not expected (the age limit of runs, too).
pub const TOMBSTONE_MAX_AGE_MS: u64 = 30 * 86_400_000;
/// Most deleted run ids remembered; beyond it the oldest are forgotten.
pub const TOMBSTONE_MAX: usize = 50_000;

impl Writer {
    /// Queues an event.
    #[cfg(test)]
    pub async fn event(&self, row: EventRow) {
        self.queue(vec![Write::Event(row)]).await;
    }

    /// Queues run summaries and events, in their order, with one send and one share of the
    /// byte budget for all of their events: an app's burst of frames costs one round on the
    /// channel and the semaphore, not one per event.
    pub async fn queue(&self, writes: Vec<Write>) {
        if writes.is_empty() {
            return;
        }
        // Each row also pays what holding it costs besides its body, so a flood of tiny events
        // is held back at the same budget as a few large ones (the channel counts batches).
        let bytes: usize = writes
            .iter()
            .map(|w| match w {
                Write::Event(e) => e.body.len() + ROW_COST,
                Write::Run(_) => ROW_COST,
            })
            .sum();
        // A batch larger than the whole budget takes all of it, and waits for an empty queue.
        let n = u32::try_from(bytes.min(WRITER_BYTES)).unwrap_or(u32::MAX);
        let permit = Arc::clone(&self.bytes).acquire_many_owned(n).await.ok();
        let _ = self.tx.send(WriteOp::Many(writes, permit)).await;
    }

    /// Queues a run summary upsert.
    pub async fn run(&self, row: RunRow) {
        let _ = self.tx.send(WriteOp::Run(row)).await;
    }

    /// Queues a run summary upsert of a run a retention pass deleted while it became active
    /// again: it is stored again and no longer counts as deleted.
    pub async fn revive(&self, row: RunRow) {
        let _ = self.tx.send(WriteOp::Revive(row)).await;
    }

    /// Resolves once everything queued before it is committed.
    /// Marks `run_id` as having a gap (idempotent).
    pub async fn gap(&self, run_id: String) {
        let _ = self.tx.send(WriteOp::Gap(run_id)).await;
    }

    /// Waits until everything queued before it is committed.
    pub async fn barrier(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(WriteOp::Barrier(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// Applies the retention rule (as at start) except to the `protect`ed runs, after
    /// everything queued before it is committed; the deletes run in small transactions between
    /// the writer's other work. Returns the ids of the deleted runs.
    pub async fn retain(
        &self,
        retention: Retention,
        now_ms: u64,
        protect: HashSet<String>,
    ) -> Vec<String> {
        let (done, rx) = oneshot::channel();
        let op = WriteOp::Retain(RetainOp {
            retention,
            now_ms,
            protect,
            done,
        });
        if self.tx.send(op).await.is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }
}

/// The database: opened once at start (schema, retention), then a writer thread and readers.
pub struct Storage {
    /// The writer.
    pub writer: Writer,
    /// The reader pool.
    pub reader: Arc<Reader>,
    /// The runs a starting hub holds in memory: the newest `memory_runs` kept after retention
    /// (newest first), then any older one still `running` (an earlier hub's, given the abandon
    /// grace).
    pub runs: Vec<RunRow>,
    /// Whether storage holds runs beyond [`Storage::runs`]: then lists and reads of runs must
    /// look in storage too.
    pub more_runs: bool,
    /// Ids of the runs the retention rule deleted (remembered [`TOMBSTONE_MAX_AGE_MS`], at
    /// most [`TOMBSTONE_MAX`]) with when they were deleted (epoch ms).
    pub deleted: Vec<(String, u64)>,
    /// Must be kept for the life of the hub: one hub per database.
    pub lock: std::fs::File,
}

/// Retention policy, applied at start and periodically while the hub runs.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Keep the newest N runs.
    pub keep: usize,
    /// Drop runs older than this many days.
    pub max_age_days: u64,
}

fn pragmas(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    // Only a new database takes it (an existing one keeps its page size): 16 KiB pages hold
    // ~60 events each, so a burst of inserts splits and rebalances a quarter as many pages and
    // writes fewer, larger WAL frames.
    conn.pragma_update(None, "page_size", 16_384)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.pragma_update(None, "cache_size", -16_000)?;
    Ok(())
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    app TEXT,
    name TEXT,
    status TEXT NOT NULL DEFAULT 'running',
    started_at INTEGER,
    ended_at INTEGER,
    sdk TEXT,
    event_count INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
-- Run lists and retention order runs by start: a hub that evicted runs from memory lists them
-- from here.
CREATE INDEX IF NOT EXISTS runs_by_start ON runs (coalesce(started_at, created_at), run_id);
-- Runs the retention rule deleted: events of them are dropped on intake (an app's replay
-- ring may still hold them). Added to databases of earlier versions on open.
CREATE TABLE IF NOT EXISTS deleted_runs (
    run_id TEXT PRIMARY KEY,
    deleted_at INTEGER NOT NULL
) WITHOUT ROWID;
-- Runs with a gap: their app announced events of them lost (`lostRuns`). Added to databases
-- of earlier versions on open.
CREATE TABLE IF NOT EXISTS run_gaps (
    run_id TEXT PRIMARY KEY
) WITHOUT ROWID;
";

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn u64_of(v: Option<i64>) -> Option<u64> {
    v.map(|x| u64::try_from(x).unwrap_or(0))
}

impl Storage {
    /// Opens (or creates, mode 0600) the database, applies the schema and the retention, and
    /// starts the writer. Of the kept runs, the newest `memory_runs` are read for memory (and
    /// any older one still running); the rest stay in storage only. Runs left `running` by an
    /// earlier hub stay `running`: the hub gives their apps the abandon grace to come back
    /// (`HubState::abandon_unclaimed`).
    pub fn open(
        path: &Path,
        retention: Retention,
        memory_runs: usize,
        now_ms: u64,
    ) -> Result<Self, String> {
        let fail = |what: &str, e: &dyn std::fmt::Display| {
            format!("cannot {what} the database {}: {e}", path.display())
        };
        files::ensure_parent(path).map_err(|e| fail("create the directory of", &e))?;
        let lock = lock_file(path)?;
        files::touch_private(path).map_err(|e| fail("create", &e))?;
        let conn = Connection::open(path).map_err(|e| fail("open", &e))?;
        pragmas(&conn).map_err(|e| fail("configure", &e))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| fail("create the tables of", &e))?;
        apply_retention(&conn, retention, now_ms).map_err(|e| fail("trim", &e))?;
        let (runs, more_runs) =
            load_start_runs(&conn, retention.keep.max(1).min(memory_runs.max(1)))
                .map_err(|e| fail("read", &e))?;
        let deleted = load_tombstones(&conn).map_err(|e| fail("read", &e))?;
        // WAL and SHM files are created by SQLite with the database file's mode; make sure of
        // it for files left by an earlier run. By path (chmod), never by opening them: closing
        // any descriptor of a file drops every POSIX lock the process holds on it, and without
        // its lock on `-shm` the next process that opens the database (e.g. a reader) takes it
        // for unused and truncates it under the hub's mapping (SIGBUS).
        for suffix in ["-wal", "-shm"] {
            let mut p = path.as_os_str().to_owned();
            p.push(suffix);
            let p = PathBuf::from(p);
            if p.exists() {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600));
            }
        }
        let (tx, rx) = mpsc::channel(WRITER_QUEUE);
        std::thread::Builder::new()
            .name("graphmind-writer".into())
            .spawn(move || writer_loop(&conn, rx))
            .map_err(|e| fail("start the writer of", &e))?;
        Ok(Self {
            writer: Writer {
                tx,
                bytes: Arc::new(Semaphore::new(WRITER_BYTES)),
            },
            reader: Arc::new(Reader {
                path: path.to_path_buf(),
                pool: Mutex::new(Vec::new()),
            }),
            runs,
            more_runs,
            deleted,
            lock,
        })
    }
}

/// Takes `<db>.lock`: a second hub on the same database would mark the first one's live runs
/// abandoned and trim under its feet.
fn lock_file(db: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut p = db.as_os_str().to_owned();
    p.push(".lock");
    let p = PathBuf::from(p);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&p)
        .map_err(|e| format!("cannot create {}: {e}", p.display()))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "the database {} is in use by another graphmind serve; stop it or pass --db",
            db.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(format!("cannot lock {}: {e}", p.display())),
    }
}

/// The runs the retention rule drops: all but the newest `keep`, and those older than
/// `max_age_days`.
fn doomed_runs(conn: &Connection, r: Retention, now_ms: u64) -> rusqlite::Result<Vec<String>> {
    let cutoff = now_ms.saturating_sub(r.max_age_days.saturating_mul(86_400_000));
    let mut st = conn.prepare_cached(
        "SELECT run_id FROM runs WHERE run_id NOT IN (
             SELECT run_id FROM runs ORDER BY coalesce(started_at, created_at) DESC LIMIT ?1)
         OR coalesce(started_at, created_at) < ?2",
    )?;
    st.query_map(params![i64_of(r.keep as u64), i64_of(cutoff)], |row| {
        row.get(0)
    })?
    .collect()
}

/// Deletes runs and their events, and remembers their ids (tombstones), in one transaction.
fn delete_runs(conn: &Connection, ids: &[String], now_ms: u64) -> rusqlite::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let tx = conn.unchecked_transaction()?;
    {
        let mut ev = tx.prepare_cached("DELETE FROM events WHERE run_id = ?1")?;
        let mut run = tx.prepare_cached("DELETE FROM runs WHERE run_id = ?1")?;
        let mut gap = tx.prepare_cached("DELETE FROM run_gaps WHERE run_id = ?1")?;
        let mut tomb = tx.prepare_cached(
            "INSERT INTO deleted_runs (run_id, deleted_at) VALUES (?1, ?2)
             ON CONFLICT (run_id) DO UPDATE SET deleted_at = excluded.deleted_at",
        )?;
        for id in ids {
            ev.execute([id])?;
            run.execute([id])?;
            gap.execute([id])?;
            tomb.execute(params![id, i64_of(now_ms)])?;
        }
    }
    tx.commit()
}

/// Forgets the tombstones older than [`TOMBSTONE_MAX_AGE_MS`] and all but the newest
/// [`TOMBSTONE_MAX`].
fn prune_tombstones(conn: &Connection, now_ms: u64) -> rusqlite::Result<()> {
    let cutoff = now_ms.saturating_sub(TOMBSTONE_MAX_AGE_MS);
    conn.prepare_cached("DELETE FROM deleted_runs WHERE deleted_at < ?1")?
        .execute([i64_of(cutoff)])?;
    conn.prepare_cached(
        "DELETE FROM deleted_runs WHERE run_id IN (
             SELECT run_id FROM deleted_runs ORDER BY deleted_at DESC, run_id DESC
             LIMIT -1 OFFSET ?1)",
    )?
    .execute([i64_of(TOMBSTONE_MAX as u64)])?;
    Ok(())
}

/// The remembered ids of deleted runs, with when they were deleted.
fn load_tombstones(conn: &Connection) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut st = conn.prepare_cached("SELECT run_id, deleted_at FROM deleted_runs")?;
    st.query_map([], |row| {
        Ok((row.get(0)?, u64_of(row.get(1)?).unwrap_or(0)))
    })?
    .collect()
}

fn apply_retention(conn: &Connection, r: Retention, now_ms: u64) -> rusqlite::Result<()> {
    let doomed = doomed_runs(conn, r, now_ms)?;
    delete_runs(conn, &doomed, now_ms)?;
    prune_tombstones(conn, now_ms)
}

fn run_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        run_id: row.get(0)?,
        app: row.get(1)?,
        name: row.get(2)?,
        status: row.get(3)?,
        started_at: u64_of(row.get(4)?),
        ended_at: u64_of(row.get(5)?),
        sdk: row.get(6)?,
        created_at: u64_of(row.get(7)?).unwrap_or(0),
        event_count: u64_of(row.get(8)?).unwrap_or(0),
        incomplete: row.get::<_, i64>(9)? != 0,
        error_count: u64_of(row.get(10)?).unwrap_or(0),
    })
}

/// The newest `limit` runs, newest first (by start), ties by id, newest id first.
fn load_runs(conn: &Connection, limit: usize) -> rusqlite::Result<Vec<RunRow>> {
    let mut st = conn.prepare_cached(
        "SELECT run_id, app, name, status, started_at, ended_at, sdk, created_at, event_count,
                EXISTS (SELECT 1 FROM run_gaps g WHERE g.run_id = runs.run_id),
                (SELECT count(*) FROM events e WHERE e.run_id = runs.run_id AND e.type = 'node.error')
         FROM runs ORDER BY coalesce(started_at, created_at) DESC, run_id DESC LIMIT ?1",
    )?;
    st.query_map([i64_of(limit as u64)], run_row)?.collect()
}

/// The runs a starting hub holds in memory: the newest `limit`, then every older one still
/// `running`; and whether storage holds more runs than these.
fn load_start_runs(conn: &Connection, limit: usize) -> rusqlite::Result<(Vec<RunRow>, bool)> {
    let mut runs = load_runs(conn, limit)?;
    let total: i64 = conn.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))?;
    let more = usize::try_from(total).unwrap_or(usize::MAX) > runs.len();
    if more {
        let have: HashSet<String> = runs.iter().map(|r| r.run_id.clone()).collect();
        let mut st = conn.prepare(
            "SELECT run_id, app, name, status, started_at, ended_at, sdk, created_at, event_count,
                    EXISTS (SELECT 1 FROM run_gaps g WHERE g.run_id = runs.run_id),
                (SELECT count(*) FROM events e WHERE e.run_id = runs.run_id AND e.type = 'node.error')
             FROM runs WHERE status = 'running'
             ORDER BY coalesce(started_at, created_at) DESC, run_id DESC",
        )?;
        for r in st.query_map([], run_row)? {
            let r = r?;
            if !have.contains(&r.run_id) {
                runs.push(r);
            }
        }
    }
    Ok((runs, more))
}

fn writer_loop(conn: &Connection, mut rx: mpsc::Receiver<WriteOp>) {
    let mut batch = Vec::with_capacity(1024);
    let mut barriers = Vec::new();
    let mut retains = Vec::new();
    let mut trims: std::collections::VecDeque<Trim> = std::collections::VecDeque::new();
    loop {
        // While a retention pass is in progress the writer does not sleep: it deletes a chunk
        // whenever no write is waiting.
        let first = if trims.is_empty() {
            match rx.blocking_recv() {
                Some(op) => Some(op),
                None => break,
            }
        } else {
            match rx.try_recv() {
                Ok(op) => Some(op),
                Err(mpsc::error::TryRecvError::Empty) => None,
                Err(mpsc::error::TryRecvError::Disconnected) => break,
            }
        };
        if let Some(op) = first {
            // Counted in writes: a queued batch of events counts as its events.
            let mut writes = op.writes();
            batch.push(op);
            while writes < MAX_BATCH {
                match rx.try_recv() {
                    Ok(op) => {
                        writes += op.writes();
                        batch.push(op);
                    }
                    Err(_) => break,
                }
            }
            if let Err(e) = write_batch(conn, &mut batch, &mut barriers, &mut retains) {
                eprintln!("graphmind: storing events failed: {e}");
            }
            batch.clear();
            for b in barriers.drain(..) {
                let _ = b.send(());
            }
            for r in retains.drain(..) {
                trims.push_back(start_trim(conn, r));
            }
        }
        // One chunk per round: a batch of writes, then a few deletes.
        if let Some(t) = trims.front_mut() {
            let end = (t.next + TRIM_CHUNK).min(t.doomed.len());
            let chunk = &t.doomed[t.next..end];
            match delete_runs(conn, chunk, super::now_ms()) {
                Ok(()) => t.deleted.extend_from_slice(chunk),
                Err(e) => eprintln!("graphmind: trimming old runs failed: {e}"),
            }
            t.next = end;
            if t.next >= t.doomed.len()
                && let Some(t) = trims.pop_front()
            {
                let _ = t.done.send(t.deleted);
            }
        }
    }
}

impl WriteOp {
    /// How many rows it writes (at least 1: an op without rows still takes a turn).
    fn writes(&self) -> usize {
        match self {
            Self::Many(w, _) => w.len().max(1),
            _ => 1,
        }
    }
}

/// Picks the runs a retention pass deletes (the deletes follow chunk by chunk).
fn start_trim(conn: &Connection, r: RetainOp) -> Trim {
    if let Err(e) = prune_tombstones(conn, r.now_ms) {
        eprintln!("graphmind: forgetting old deleted runs failed: {e}");
    }
    let doomed = match doomed_runs(conn, r.retention, r.now_ms) {
        Ok(d) => d.into_iter().filter(|id| !r.protect.contains(id)).collect(),
        Err(e) => {
            eprintln!("graphmind: finding old runs failed: {e}");
            Vec::new()
        }
    };
    Trim {
        doomed,
        next: 0,
        deleted: Vec::new(),
        done: r.done,
    }
}

fn write_batch(
    conn: &Connection,
    batch: &mut Vec<WriteOp>,
    barriers: &mut Vec<oneshot::Sender<()>>,
    retains: &mut Vec<RetainOp>,
) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction();
    let mut counts: HashMap<Arc<str>, u64> = HashMap::new();
    let mut streak: Option<(Arc<str>, u64)> = None;
    let mut budget: Option<OwnedSemaphorePermit> = None;
    let result = (|| {
        let tx = tx?;
        {
            let mut ins = tx.prepare_cached(
                "INSERT OR IGNORE INTO events (run_id, seq, ts, type, body) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            // A summary queued before its run was deleted does not bring the run back.
            let mut up = tx.prepare_cached(
                "INSERT INTO runs (run_id, app, name, status, started_at, ended_at, sdk, created_at)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
                 WHERE NOT EXISTS (SELECT 1 FROM deleted_runs WHERE run_id = ?1)
                 ON CONFLICT (run_id) DO UPDATE SET app = excluded.app, name = excluded.name,
                   status = excluded.status, started_at = excluded.started_at,
                   ended_at = excluded.ended_at, sdk = excluded.sdk",
            )?;
            let mut undelete = tx.prepare_cached("DELETE FROM deleted_runs WHERE run_id = ?1")?;
            let mut gap =
                tx.prepare_cached("INSERT OR IGNORE INTO run_gaps (run_id) VALUES (?1)")?;
            macro_rules! run_params {
                ($r:expr) => {
                    params![
                        $r.run_id,
                        $r.app,
                        $r.name,
                        $r.status,
                        $r.started_at.map(i64_of),
                        $r.ended_at.map(i64_of),
                        $r.sdk,
                        i64_of($r.created_at)
                    ]
                };
            }
            let mut event = |e: EventRow| -> rusqlite::Result<usize> {
                let n = ins.execute(params![
                    &*e.run_id,
                    i64_of(e.seq),
                    i64_of(e.ts),
                    &*e.kind,
                    &*e.body
                ])?;
                // Events of one run come in streaks: counted without a lookup.
                if n == 1 {
                    match &mut streak {
                        Some((run, k)) if Arc::ptr_eq(run, &e.run_id) => *k += 1,
                        _ => {
                            if let Some((run, k)) = streak.replace((e.run_id, 1)) {
                                *counts.entry(run).or_default() += k;
                            }
                        }
                    }
                }
                Ok(n)
            };
            // The permits go back together once the batch is written: one semaphore round per
            // batch, not per event.
            let mut give_back = |permit: Option<OwnedSemaphorePermit>| {
                if let Some(p) = permit {
                    match &mut budget {
                        Some(b) => b.merge(p),
                        None => budget = Some(p),
                    }
                }
            };
            for op in batch.drain(..) {
                let revive = matches!(op, WriteOp::Revive(_));
                match op {
                    WriteOp::Many(writes, permit) => {
                        for w in writes {
                            match w {
                                Write::Event(e) => event(e)?,
                                Write::Run(r) => up.execute(run_params!(r))?,
                            };
                        }
                        give_back(permit);
                    }
                    WriteOp::Run(r) | WriteOp::Revive(r) => {
                        if revive {
                            undelete.execute([&r.run_id])?;
                        }
                        up.execute(run_params!(r))?;
                    }
                    WriteOp::Gap(id) => {
                        gap.execute([&id])?;
                    }
                    WriteOp::Barrier(b) => barriers.push(b),
                    WriteOp::Retain(r) => retains.push(r),
                }
            }
            if let Some((run, k)) = streak.take() {
                *counts.entry(run).or_default() += k;
            }
            let mut cnt = tx.prepare_cached(
                "INSERT INTO runs (run_id, created_at, event_count) VALUES (?1, ?2, ?3)
                 ON CONFLICT (run_id) DO UPDATE SET event_count = event_count + excluded.event_count",
            )?;
            let now = i64_of(super::now_ms());
            for (run, n) in &counts {
                cnt.execute(params![&**run, now, i64_of(*n)])?;
            }
        }
        tx.commit()
    })();
    // A failed batch still answers every barrier queued in it.
    for op in batch.drain(..) {
        match op {
            WriteOp::Barrier(b) => barriers.push(b),
            WriteOp::Retain(r) => retains.push(r),
            WriteOp::Many(..) | WriteOp::Run(_) | WriteOp::Revive(_) | WriteOp::Gap(_) => {}
        }
    }
    result
}

/// Read connections, pooled.
pub struct Reader {
    path: PathBuf,
    pool: Mutex<Vec<Connection>>,
}

impl Reader {
    /// Readers of the database at `path` without opening it for writing (`graphmind export`
    /// reads the database of a hub that may be running).
    pub fn at(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            pool: Mutex::new(Vec::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<R>) -> Result<R, String> {
        let conn = self.pool.lock().ok().and_then(|mut p| p.pop());
        let conn = match conn {
            Some(c) => c,
            None => {
                let c = Connection::open(&self.path).map_err(|e| e.to_string())?;
                c.busy_timeout(Duration::from_secs(5))
                    .map_err(|e| e.to_string())?;
                c
            }
        };
        let out = f(&conn).map_err(|e| e.to_string());
        if let Ok(mut p) = self.pool.lock()
            && p.len() < 8
        {
            p.push(conn);
        }
        out
    }

    /// Stored envelopes of a run with seq > `after_seq` (all when `None`), in seq order: at
    /// most `limit`, and the page stops before the event that would take its bodies past
    /// `max_bytes` (it always holds at least one event), so a page of large events costs at
    /// most about `max_bytes` of memory whatever `limit` says. Returns the page and whether
    /// more events follow it.
    pub fn events_within(
        &self,
        run_id: &str,
        after_seq: Option<u64>,
        limit: usize,
        max_bytes: usize,
    ) -> Result<(Vec<(u64, String)>, bool), String> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT seq, body FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
            )?;
            let after = after_seq.map_or(-1, i64_of);
            // Rows are stepped one at a time: SQLite reads no further than the page needs.
            let mut rows = st.query(params![run_id, after])?;
            let mut page = Vec::new();
            let mut bytes = 0usize;
            while let Some(row) = rows.next()? {
                // The length is read in place: a row past the page is never copied.
                let len = row.get_ref(1)?.as_bytes().map_or(0, <[u8]>::len);
                if page.len() >= limit || (!page.is_empty() && bytes + len > max_bytes) {
                    return Ok((page, true));
                }
                bytes += len;
                page.push((u64_of(row.get(0)?).unwrap_or(0), row.get(1)?));
            }
            Ok((page, false))
        })
    }

    /// As [`Reader::events_within`], but the bodies are appended to `out`, comma separated,
    /// as they are read (no copy per event): the page of a replay frame. Returns the seqs of
    /// the page and whether more events follow it. `lean`: each without its `gm` and `runId`
    /// members ([`crate::lean::append_lean`]).
    pub fn append_events_within(
        &self,
        run_id: &str,
        after_seq: Option<u64>,
        limit: usize,
        max_bytes: usize,
        lean: bool,
        out: &mut String,
    ) -> Result<(Vec<u64>, bool), String> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT seq, body FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
            )?;
            let after = after_seq.map_or(-1, i64_of);
            let mut rows = st.query(params![run_id, after])?;
            let mut seqs = Vec::new();
            let mut bytes = 0usize;
            while let Some(row) = rows.next()? {
                let body = row.get_ref(1)?.as_str()?;
                if seqs.len() >= limit || (!seqs.is_empty() && bytes + body.len() > max_bytes) {
                    return Ok((seqs, true));
                }
                bytes += body.len();
                if !seqs.is_empty() {
                    out.push(',');
                }
                if lean {
                    crate::lean::append_lean(out, body, run_id);
                } else {
                    out.push_str(body);
                }
                seqs.push(u64_of(row.get(0)?).unwrap_or(0));
            }
            Ok((seqs, false))
        })
    }

    /// The stored summary of one run.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRow>, String> {
        self.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT run_id, app, name, status, started_at, ended_at, sdk, created_at,
                        event_count, EXISTS (SELECT 1 FROM run_gaps g WHERE g.run_id = ?1),
                (SELECT count(*) FROM events e WHERE e.run_id = runs.run_id AND e.type = 'node.error')
                 FROM runs WHERE run_id = ?1",
            )?;
            let mut rows = st.query_map([run_id], run_row)?;
            rows.next().transpose()
        })
    }

    /// The newest `limit` stored runs, newest first (by start).
    pub fn runs(&self, limit: usize) -> Result<Vec<RunRow>, String> {
        self.with(|c| load_runs(c, limit))
    }

    /// Every stored seq of a run.
    pub fn seqs(&self, run_id: &str) -> Result<HashSet<u64>, String> {
        self.with(|c| {
            let mut st = c.prepare_cached("SELECT seq FROM events WHERE run_id = ?1")?;
            st.query_map([run_id], |row| Ok(u64_of(row.get(0)?).unwrap_or(0)))?
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        conn.execute_batch(SCHEMA).expect("schema");
        conn
    }

    fn row(id: &str) -> RunRow {
        RunRow {
            run_id: id.into(),
            status: "ok".into(),
            created_at: 1,
            ..RunRow::default()
        }
    }

    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).expect("count")
    }

    fn write(conn: &Connection, ops: Vec<WriteOp>) {
        let mut batch = ops;
        write_batch(conn, &mut batch, &mut Vec::new(), &mut Vec::new()).expect("batch");
    }

    #[test]
    fn a_delete_leaves_a_tombstone_and_a_late_summary_does_not_bring_the_run_back() {
        let conn = db();
        write(
            &conn,
            vec![WriteOp::Run(row("run_a")), WriteOp::Run(row("run_b"))],
        );
        delete_runs(&conn, &["run_a".into()], 42).expect("delete");
        assert_eq!(
            load_tombstones(&conn).expect("load"),
            [("run_a".into(), 42)]
        );
        // A summary queued before the delete and written after it.
        write(&conn, vec![WriteOp::Run(row("run_a"))]);
        assert_eq!(
            count(&conn, "SELECT count(*) FROM runs WHERE run_id = 'run_a'"),
            0
        );
        // A run that became active again during the pass is stored again.
        write(&conn, vec![WriteOp::Revive(row("run_a"))]);
        assert_eq!(
            count(&conn, "SELECT count(*) FROM runs WHERE run_id = 'run_a'"),
            1
        );
        assert!(load_tombstones(&conn).expect("load").is_empty());
    }

    #[test]
    fn tombstones_are_pruned_by_age_and_count() {
        let conn = db();
        let now = 100 * 86_400_000;
        let tx = conn.unchecked_transaction().expect("tx");
        {
            let mut ins = tx
                .prepare("INSERT INTO deleted_runs (run_id, deleted_at) VALUES (?1, ?2)")
                .expect("prepare");
            ins.execute(params!["too_old", i64_of(now - TOMBSTONE_MAX_AGE_MS - 1)])
                .expect("insert");
            ins.execute(params!["oldest_kept_out", i64_of(now - 10)])
                .expect("insert");
            for i in 0..TOMBSTONE_MAX {
                ins.execute(params![format!("run_{i}"), i64_of(now)])
                    .expect("insert");
            }
        }
        tx.commit().expect("commit");
        prune_tombstones(&conn, now).expect("prune");
        let left = load_tombstones(&conn).expect("load");
        assert_eq!(left.len(), TOMBSTONE_MAX);
        assert!(
            left.iter()
                .all(|(id, at)| id.starts_with("run_") && *at == now)
        );
    }

    /// A store in a fresh folder `gm-writer-<name>-<pid>` under the temporary directory whose
    /// writer is stalled: another connection holds the write lock (returned; end its
    /// transaction to release the writer), which the writer waits on (its busy timeout is 5 s),
    /// as it would behind a slow disk. With the folder, to remove at the end, and a
    /// current-thread runtime to queue writes on.
    fn stalled_writer(
        name: &str,
    ) -> (
        std::path::PathBuf,
        Storage,
        Connection,
        tokio::runtime::Runtime,
    ) {
        let dir = std::env::temp_dir().join(format!("gm-writer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("w.db");
        let retention = Retention {
            keep: 100,
            max_age_days: 30,
        };
        let st = Storage::open(&path, retention, 1000, 1).expect("open");
        let lock = Connection::open(&path).expect("open");
        lock.execute_batch("BEGIN IMMEDIATE").expect("lock");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        (dir, st, lock, rt)
    }

    /// How many events `st` holds.
    fn stored_events(st: &Storage) -> u64 {
        let stored: i64 = st
            .reader
            .with(|c| c.query_row("SELECT count(*) FROM events", [], |r| r.get(0)))
            .expect("count");
        u64::try_from(stored).expect("a count")
    }

    fn page_size(path: &Path) -> i64 {
        let conn = Connection::open(path).expect("open");
        conn.query_row("PRAGMA page_size", [], |r| r.get(0))
            .expect("page size")
    }

    /// Stores `n` events of run `run` through the writer and waits until they are committed.
    fn store_events(st: &Storage, run: &str, n: u64) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let run: Arc<str> = Arc::from(run);
        rt.block_on(async {
            for seq in 1..=n {
                st.writer
                    .event(EventRow {
                        run_id: Arc::clone(&run),
                        seq,
                        ts: seq,
                        kind: "node.started".into(),
                        body: Arc::from(format!("{{\"gm\":1,\"seq\":{seq}}}")),
                    })
                    .await;
            }
            st.writer.barrier().await;
        });
    }

    #[test]
    fn a_new_database_has_16_kib_pages_and_an_older_one_keeps_its_own() {
        let dir = std::env::temp_dir().join(format!("gm-pages-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let retention = Retention {
            keep: 100,
            max_age_days: 30,
        };
        let new = dir.join("new.db");
        let st = Storage::open(&new, retention, 1000, 1).expect("open");
        store_events(&st, "run_new", 500);
        assert_eq!(stored_events(&st), 500);
        assert_eq!(page_size(&new), 16_384);
        // A database of an earlier version: 4 KiB pages, WAL, events already in it.
        let old = dir.join("old.db");
        {
            let conn = Connection::open(&old).expect("open");
            conn.pragma_update(None, "page_size", 4096)
                .expect("page size");
            conn.pragma_update(None, "journal_mode", "WAL")
                .expect("wal");
            conn.execute_batch(SCHEMA).expect("schema");
            conn.execute(
                "INSERT INTO events (run_id, seq, ts, type, body) VALUES ('run_old', 1, 1, 'x', '{}')",
                [],
            )
            .expect("insert");
        }
        let st = Storage::open(&old, retention, 1000, 1).expect("open the older database");
        store_events(&st, "run_more", 500);
        assert_eq!(stored_events(&st), 501);
        assert_eq!(page_size(&old), 4096);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bursts_of_tiny_events_queued_past_a_stalled_writer_stop_at_the_byte_budget() {
        // Regression: the channel counts batches, so before rows paid `ROW_COST`, 65,536
        // batches of 16 tiny events (a million rows) could wait behind a stalled writer.
        let (dir, st, lock, rt) = stalled_writer("tiny");
        let body: Arc<str> = Arc::from("{\"gm\":1}");
        let run: Arc<str> = Arc::from("run_t");
        let burst = |first: u64| {
            (first..first + 16)
                .map(|seq| {
                    Write::Event(EventRow {
                        run_id: Arc::clone(&run),
                        seq,
                        ts: 0,
                        kind: "x.tiny".into(),
                        body: Arc::clone(&body),
                    })
                })
                .collect::<Vec<_>>()
        };
        let writer = st.writer.clone();
        let bursts = rt.block_on(async {
            let mut n = 0u64;
            while n < 70_000 {
                let send = writer.queue(burst(n * 16));
                if tokio::time::timeout(Duration::from_millis(300), send)
                    .await
                    .is_err()
                {
                    break;
                }
                n += 1;
            }
            n
        });
        let per_burst = 16 * (body.len() + ROW_COST);
        assert_eq!(
            bursts,
            (WRITER_BYTES / per_burst) as u64,
            "bursts of 16 tiny events queued past a stalled writer"
        );
        assert!(bursts < WRITER_QUEUE as u64, "the byte budget binds first");
        lock.execute_batch("ROLLBACK").expect("unlock");
        rt.block_on(writer.barrier());
        assert_eq!(
            stored_events(&st),
            bursts * 16,
            "every queued event is written"
        );
        drop(st);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stalled_writer_holds_senders_back_at_its_byte_budget_and_loses_nothing() {
        let (dir, st, lock, rt) = stalled_writer("bytes");
        // A body of 1 MiB with its row's cost.
        let mib: Arc<str> = Arc::from("x".repeat(1024 * 1024 - ROW_COST));
        let row = |seq: u64| EventRow {
            run_id: Arc::from("run_w"),
            seq,
            ts: 0,
            kind: "x.blob".into(),
            body: Arc::clone(&mib),
        };
        let writer = st.writer.clone();
        let queued = rt.block_on(async {
            let mut n = 0u64;
            while n < 200 {
                let send = writer.event(row(n));
                if tokio::time::timeout(Duration::from_millis(300), send)
                    .await
                    .is_err()
                {
                    break;
                }
                n += 1;
            }
            n
        });
        let budget = (WRITER_BYTES / (1024 * 1024)) as u64;
        assert_eq!(queued, budget, "1 MiB events queued past a stalled writer");
        lock.execute_batch("COMMIT").expect("unlock");
        rt.block_on(async {
            for seq in queued..queued + 10 {
                writer.event(row(seq)).await;
            }
            writer.barrier().await;
        });
        assert_eq!(
            stored_events(&st),
            queued + 10,
            "every queued event is written"
        );
        drop(st);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
