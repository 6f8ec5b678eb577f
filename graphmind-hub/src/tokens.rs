//! Per-start secrets: the viewer token and the agent token (128 bits each).

use subtle::ConstantTimeEq;

/// A 128-bit random token, written as 32 lowercase hex digits.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// A fresh random token.
    pub fn generate() -> Result<Self, String> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| format!("no system randomness: {e}"))?;
        Ok(Self(hex(&bytes)))
    }

    /// The token text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Compares in constant time (for equal lengths; the length is not secret).
    pub fn matches(&self, candidate: &str) -> bool {
        let a = self.0.as_bytes();
        let b = candidate.as_bytes();
        a.len() == b.len() && bool::from(a.ct_eq(b))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A random id with a prefix, for request ids and session tokens.
pub fn random_id(prefix: &str) -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        // Ids need uniqueness, not secrecy: fall back to time and a counter.
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        return format!("{prefix}_{:x}_{n}", super::now_ms());
    }
    format!("{prefix}_{}", hex(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_128_bit_hex_and_compare_exactly() {
        let t = Token::generate().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.as_str().len(), 32);
        assert!(t.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        let copy = t.as_str().to_owned();
        assert!(t.matches(&copy));
        assert!(!t.matches(""));
        let mut other = t.as_str().to_owned();
        other.replace_range(31.., if other.ends_with('0') { "1" } else { "0" });
        assert!(!t.matches(&other));
    }
}
