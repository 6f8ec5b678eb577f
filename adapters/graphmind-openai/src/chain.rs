//! Responses chains: which invocation each response id belongs to.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// Responses chains: which invocation each response id belongs to, so that a request naming
/// a `previous_response_id` continues exactly that invocation. Bounded (oldest forgotten).
#[derive(Debug, Default)]
pub(crate) struct Chains {
    ids: Mutex<VecDeque<(String, String)>>,
}

/// Response ids remembered per client.
const CHAIN_IDS: usize = 1024;

impl Chains {
    /// The invocation key for a request continuing `previous` (a fresh one when unknown).
    pub(crate) fn key_for(&self, previous: Option<&str>) -> String {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(prev) = previous
            && let Some((_, key)) = ids.iter().rev().find(|(id, _)| id == prev)
        {
            return key.clone();
        }
        drop(ids);
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        format!("openai-responses-{}", NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Remembers that response `id` belongs to invocation `key`.
    pub(crate) fn remember(&self, id: &str, key: &str) {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        if ids.len() >= CHAIN_IDS {
            ids.pop_front();
        }
        ids.push_back((id.to_owned(), key.to_owned()));
    }
}

/// A Responses step's place in its chain.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    pub(crate) chains: Arc<Chains>,
    pub(crate) key: String,
}
