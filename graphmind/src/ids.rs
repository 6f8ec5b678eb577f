//! Ids: the per-process base, the shared counter, call/pause/invocation ids and run ids.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    if getrandom::fill(&mut buf).is_err() {
        // No OS randomness: fall back to the clock, ids only need to be unlikely to repeat.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = nanos ^ u128::from(std::process::id()) << 64;
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (seed >> ((i % 16) * 8)) as u8;
        }
    }
    buf
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Six hex characters fixed for the process.
pub(crate) fn process_base() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| hex(&random_bytes::<3>()))
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Ids a thread takes from [`COUNTER`] at a time.
const ID_BLOCK: u64 = 256;

thread_local! {
    /// This thread's block of ids: (next, end).
    static IDS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// The next value of the id counter shared by every generated id: unique in the process and
/// increasing on each thread (threads take blocks of ids, so no shared write per id).
pub(crate) fn next_counter() -> u64 {
    IDS.try_with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            next = COUNTER.fetch_add(ID_BLOCK, Ordering::Relaxed) + 1;
            end = next + ID_BLOCK;
        }
        ids.set((next + 1, end));
        next
    })
    .unwrap_or_else(|_| COUNTER.fetch_add(1, Ordering::Relaxed) + 1)
}

/// `<prefix>_<6 hex per process>_<counter>` (`pause_`, `call_`, `inv_`), in one allocation.
pub(crate) fn next_id(prefix: &str) -> String {
    use std::fmt::Write;
    let n = next_counter();
    let base = process_base();
    let mut id = String::with_capacity(prefix.len() + base.len() + 22);
    id.push_str(prefix);
    id.push('_');
    id.push_str(base);
    id.push('_');
    let _ = write!(id, "{n}");
    id
}

/// A run id shared by every event of the run without copying it.
pub(crate) type RunId = Arc<str>;

/// `run_` + 12 hex.
pub(crate) fn new_run_id() -> String {
    format!("run_{}", hex(&random_bytes::<6>()))
}
