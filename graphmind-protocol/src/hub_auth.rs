//! Hub authentication, a loose extension of `hello` / `hello.ack` that other GraphMind peers
//! ignore: the app sends a fresh random `hubNonce` in its `hello`; a hub that holds a secret
//! answers with `hubProof` = lowercase hex of HMAC-SHA256(secret, nonce) in its `hello.ack`.
//!
//! The `graphmind serve` hub writes its per-start secret (`hubSecret`) into its run file, which
//! only the user who started it can read (mode 0600 in a 0700 directory). An app that can read
//! the file, and receives the matching proof, knows it talks to that hub and not to another
//! local process that took the port first.
//!
//! ```
//! use graphmind_protocol::hub_auth::{hub_proof, proof_matches};
//!
//! let proof = hub_proof("the-secret", "a-nonce");
//! assert_eq!(proof.len(), 64);
//! assert!(proof_matches("the-secret", "a-nonce", &proof));
//! assert!(!proof_matches("another-secret", "a-nonce", &proof));
//! ```

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The `hello` payload field carrying the app's nonce.
pub const NONCE_FIELD: &str = "hubNonce";
/// The `hello.ack` payload field carrying the hub's proof.
pub const PROOF_FIELD: &str = "hubProof";
/// The run-file key holding the hub's per-start secret.
pub const SECRET_KEY: &str = "hubSecret";
/// The longest nonce a hub answers (a nonce is 64 hex digits; anything far longer is noise).
pub const MAX_NONCE_LEN: usize = 256;

/// The proof for `nonce` under `secret`: lowercase hex of HMAC-SHA256 keyed with the secret's
/// UTF-8 bytes over the nonce's UTF-8 bytes (64 characters).
#[must_use]
pub fn hub_proof(secret: &str, nonce: &str) -> String {
    use std::fmt::Write;
    // HMAC takes keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(nonce.as_bytes());
    let tag = mac.finalize().into_bytes();
    tag.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Whether `proof` is the proof for `nonce` under `secret`, compared in constant time (the
/// length is not secret). Hex case matters: proofs are lowercase.
#[must_use]
pub fn proof_matches(secret: &str, nonce: &str, proof: &str) -> bool {
    let expected = hub_proof(secret, nonce);
    let (a, b) = (expected.as_bytes(), proof.as_bytes());
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_is_hmac_sha256_as_in_rfc_4231() {
        // RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?".
        assert_eq!(
            hub_proof("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_proof_matches_only_its_secret_and_nonce() {
        let p = hub_proof("s", "n");
        assert!(proof_matches("s", "n", &p));
        assert!(!proof_matches("s", "m", &p));
        assert!(!proof_matches("t", "n", &p));
        assert!(!proof_matches("s", "n", &p[..63]));
        assert!(!proof_matches("s", "n", &p.to_uppercase()));
        assert!(!proof_matches("s", "n", ""));
    }
}
