//! The hub's open connections, counted against a budget below the process's descriptor limit,
//! so that a local process opening many slow connections cannot make the hub unreachable.
//!
//! A connection is *waiting* while it has no request in hand: from its accept until its first
//! request's headers are complete, and again between keep-alive requests. A connection whose
//! request is being answered is *busy*, and an upgraded WebSocket (`/ingest`, `/ws/ui`) is
//! *upgraded* for as long as its socket is open. When a new connection comes while the hub holds
//! its budget, or while half the budget is waiting, the connection that has waited longest is
//! closed (*shed*) to make room: a client that trickles its headers a byte at a time loses its
//! place to the next one, which sends whole headers at once (`/health`, an app's upgrade to
//! `/ingest`) and is busy before anything newer comes. Upgrades may not take the last
//! [`UPGRADE_RESERVE`] places, so plain requests (`/health`, the API) always find one.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::Notify;

/// Descriptors kept out of the connection budget for the hub's own files (SQLite and its
/// journal, the listener, the runtime's poller, stdio, the OTLP exporter's sockets).
pub const FD_RESERVE: usize = 64;
/// The smallest budget, whatever the descriptor limit says.
pub const MIN_CONNECTIONS: usize = 32;
/// The budget when the descriptor limit cannot be read (the macOS default soft limit, 256,
/// less [`FD_RESERVE`]).
pub const FALLBACK_CONNECTIONS: usize = 256 - FD_RESERVE;
/// Places upgrades may not take: kept for plain requests (`/health`, the API).
pub const UPGRADE_RESERVE: usize = 16;

/// The soft limit on open descriptors of this process (`RLIMIT_NOFILE`), where the system
/// says it (Linux: `/proc/self/limits`).
pub fn descriptor_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line
        .trim_start_matches("Max open files")
        .split_whitespace()
        .next()?;
    if soft == "unlimited" {
        return Some(usize::MAX);
    }
    soft.parse().ok()
}

/// The connection budget under a descriptor limit of `limit` (unknown: `None`).
pub fn budget_for(limit: Option<usize>) -> usize {
    limit
        .map_or(FALLBACK_CONNECTIONS, |l| l.saturating_sub(FD_RESERVE))
        .max(MIN_CONNECTIONS)
}

#[derive(Debug)]
struct Entry {
    /// Its place among the waiting connections (smallest waited longest), while waiting.
    waiting: Option<u64>,
    upgraded: bool,
    shed: Arc<Notify>,
}

#[derive(Debug, Default)]
struct Table {
    next: u64,
    entries: HashMap<u64, Entry>,
    /// (place, id) of the waiting connections.
    waiting: BTreeSet<(u64, u64)>,
    upgraded: usize,
}

impl Table {
    fn tick(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Closes the connection that has waited longest; whether there was one.
    fn shed_oldest(&mut self) -> bool {
        let Some((place, id)) = self.waiting.pop_first() else {
            return false;
        };
        debug_assert!(
            self.entries
                .get(&id)
                .is_some_and(|e| e.waiting == Some(place))
        );
        // Gone from the count at once; its socket closes as soon as its task sees the signal.
        if let Some(e) = self.entries.remove(&id) {
            e.shed.notify_one();
        }
        true
    }
}

/// The open connections of a hub and their budget.
#[derive(Debug)]
pub struct Connections {
    budget: usize,
    table: Mutex<Table>,
    shed: AtomicU64,
    refused: AtomicU64,
    upgrades_refused: AtomicU64,
}

impl Connections {
    /// A table for at most `budget` connections.
    pub fn new(budget: usize) -> Arc<Self> {
        Arc::new(Self {
            budget: budget.max(1),
            table: Mutex::new(Table::default()),
            shed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            upgrades_refused: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Most connections waiting for a request at once: half the budget.
    fn waiting_cap(&self) -> usize {
        (self.budget / 2).max(1)
    }

    /// Takes in a just-accepted connection, shedding the longest-waiting ones to make room.
    /// `None`: every place is busy or upgraded; the new connection is to be closed.
    pub fn admit(self: &Arc<Self>) -> Option<Slot> {
        let mut t = self.lock();
        while t.entries.len() >= self.budget || t.waiting.len() >= self.waiting_cap() {
            if !t.shed_oldest() {
                break;
            }
            self.shed.fetch_add(1, Ordering::Relaxed);
        }
        if t.entries.len() >= self.budget {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let id = t.tick();
        let place = t.tick();
        let shed = Arc::new(Notify::new());
        t.entries.insert(
            id,
            Entry {
                waiting: Some(place),
                upgraded: false,
                shed: Arc::clone(&shed),
            },
        );
        t.waiting.insert((place, id));
        Some(Slot {
            id,
            table: Arc::clone(self),
            shed,
        })
    }

    /// Frees a descriptor when accepting failed (the limit was reached after all): sheds the
    /// connection that has waited longest.
    pub fn relieve(&self) {
        if self.lock().shed_oldest() {
            self.shed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The `/health` document's `connections` part.
    pub fn health(&self) -> Value {
        let t = self.lock();
        json!({
            "open": t.entries.len(),
            "waiting": t.waiting.len(),
            "upgraded": t.upgraded,
            "budget": self.budget,
            "shed": self.shed.load(Ordering::Relaxed),
            "refused": self.refused.load(Ordering::Relaxed),
            "upgradesRefused": self.upgrades_refused.load(Ordering::Relaxed),
        })
    }
}

/// One admitted connection's place; dropping it (with the socket it travels with) frees it.
#[derive(Debug)]
pub struct Slot {
    id: u64,
    table: Arc<Connections>,
    shed: Arc<Notify>,
}

impl Slot {
    /// A request's headers are complete: the connection is busy until the guard (kept with
    /// the response body) drops.
    pub fn request(self: &Arc<Self>) -> Busy {
        let mut t = self.table.lock();
        if let Some(place) = t.entries.get_mut(&self.id).and_then(|e| e.waiting.take()) {
            t.waiting.remove(&(place, self.id));
        }
        Busy(Arc::clone(self))
    }

    /// Whether an upgrade may take this place (not one of the last [`UPGRADE_RESERVE`]);
    /// counted when refused.
    pub fn may_upgrade(&self) -> bool {
        let ok = self.table.lock().upgraded + UPGRADE_RESERVE < self.table.budget;
        if !ok {
            self.table.upgrades_refused.fetch_add(1, Ordering::Relaxed);
        }
        ok
    }

    /// The connection was upgraded: it is never shed.
    pub fn upgraded(&self) {
        let mut t = self.table.lock();
        if let Some(e) = t.entries.get_mut(&self.id)
            && !e.upgraded
        {
            e.upgraded = true;
            t.upgraded += 1;
        }
    }

    /// Completes when the connection is shed.
    pub async fn shed(&self) {
        self.shed.notified().await;
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut t = self.table.lock();
        if let Some(e) = t.entries.remove(&self.id) {
            if let Some(place) = e.waiting {
                t.waiting.remove(&(place, self.id));
            }
            if e.upgraded {
                t.upgraded -= 1;
            }
        }
    }
}

/// A request in hand; dropping it makes the connection wait again (unless it was upgraded).
#[derive(Debug)]
pub struct Busy(Arc<Slot>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut t = self.0.table.lock();
        let place = t.tick();
        let id = self.0.id;
        if let Some(e) = t.entries.get_mut(&id)
            && !e.upgraded
            && e.waiting.is_none()
        {
            e.waiting = Some(place);
            t.waiting.insert((place, id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_stays_below_the_descriptor_limit() {
        assert_eq!(budget_for(Some(256)), 256 - FD_RESERVE);
        assert_eq!(budget_for(Some(1024)), 1024 - FD_RESERVE);
        assert_eq!(budget_for(Some(40)), MIN_CONNECTIONS);
        assert_eq!(budget_for(None), FALLBACK_CONNECTIONS);
        assert!(descriptor_limit().is_some_and(|l| l > 0) || !cfg!(target_os = "linux"));
    }

    #[test]
    fn the_longest_waiting_connection_is_shed_first_and_busy_ones_never() {
        let c = Connections::new(4);
        let alive = |s: &Slot| c.lock().entries.contains_key(&s.id);
        let a = Arc::new(c.admit().expect("a"));
        let busy = a.request();
        let b = c.admit().expect("b");
        let d = c.admit().expect("d");
        // Two waiting is half of 4: the next one sheds b (waiting longest), never busy a.
        let e = c.admit().expect("e");
        assert_eq!(c.health()["shed"], json!(1));
        assert!(!alive(&b) && alive(&a) && alive(&d) && alive(&e));
        // a waits again, the newest: the next one sheds d and e, not a.
        drop(busy);
        let f = c.admit().expect("f");
        assert_eq!(c.health()["shed"], json!(3));
        assert!(!alive(&d) && !alive(&e) && alive(&a) && alive(&f));
    }

    #[test]
    fn upgrades_leave_places_for_plain_requests_and_a_full_table_refuses() {
        let c = Connections::new(UPGRADE_RESERVE + 2);
        let mut held = Vec::new();
        for _ in 0..2 {
            let s = Arc::new(c.admit().expect("admitted"));
            let busy = s.request();
            assert!(s.may_upgrade());
            s.upgraded();
            drop(busy);
            held.push(s);
        }
        let s = Arc::new(c.admit().expect("admitted"));
        assert!(!s.may_upgrade(), "the reserve is kept");
        assert_eq!(c.health()["upgradesRefused"], json!(1));
        // Every place busy: a new connection is refused, none shed.
        let mut busy = Vec::new();
        busy.push(s.request());
        while let Some(s) = c.admit() {
            let s = Arc::new(s);
            busy.push(s.request());
            held.push(s);
        }
        assert_eq!(c.health()["refused"], json!(1));
        assert_eq!(c.health()["shed"], json!(0));
        drop(busy);
        drop(held);
        drop(s);
        assert_eq!(c.health()["open"], json!(0));
        assert_eq!(c.health()["upgraded"], json!(0));
    }
}
