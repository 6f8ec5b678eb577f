//! Hub authentication, a loose extension of `hello` / `hello.ack` that other GraphMind peers
//! ignore. It binds the whole hub → app channel, not only the handshake: a process between
//! the app and its hub (a relay on another loopback address) can forward bytes but can change,
//! add, replay or reorder none of the frames the app acts on.
//!
//! - The app sends a fresh random nonce `hubNonce` (64 hex digits) in its `hello`.
//! - The `graphmind serve` hub answers with a fresh nonce of its own, `hubNonce` in the
//!   `hello.ack` payload, and derives the connection's key from its per-start secret and both
//!   nonces ([`ChannelKey::derive`]). The secret lives in the hub's run file, which only the
//!   user who started it can read (mode 0600 in a 0700 directory); it is never sent.
//! - Every frame the hub sends on that connection from then on, the `hello.ack` first, ends
//!   with two envelope fields: `hubMacSeq` (a counter that grows with every frame) and
//!   `hubMac` = lowercase hex of HMAC-SHA256(key, `<hubMacSeq>` `\n` `<the frame without
//!   both fields>`) ([`ChannelKey::sign`]).
//! - The app, holding the secret, derives the same key and accepts a frame only if its MAC
//!   matches and its counter is above the last one accepted ([`ChannelCheck`]). The `hello.ack`'s
//!   MAC is the hub's proof: only a holder of the secret can make it.
//!
//! ```
//! use graphmind_protocol::hub_auth::{ChannelCheck, ChannelKey};
//!
//! let key = ChannelKey::derive("the-secret", "app-nonce", "hub-nonce");
//! let frame = key.sign(1, r#"{"gm":1,"type":"mode.set","payload":{"mode":"step"}}"#);
//! let mut check = ChannelCheck::new(ChannelKey::derive("the-secret", "app-nonce", "hub-nonce"));
//! assert_eq!(
//!     check.accept(&frame).as_deref(),
//!     Ok(r#"{"gm":1,"type":"mode.set","payload":{"mode":"step"}}"#)
//! );
//! // The same frame again (a replay) is refused, and so is any change to it.
//! assert!(check.accept(&frame).is_err());
//! assert!(check.accept(&frame.replace("step", "run")).is_err());
//! ```

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The `hello` payload field carrying the app's nonce, and the `hello.ack` payload field
/// carrying the hub's.
pub const NONCE_FIELD: &str = "hubNonce";
/// The envelope field carrying a hub frame's counter.
pub const MAC_SEQ_FIELD: &str = "hubMacSeq";
/// The envelope field carrying a hub frame's MAC.
pub const MAC_FIELD: &str = "hubMac";
/// The run-file key holding the hub's per-start secret.
pub const SECRET_KEY: &str = "hubSecret";
/// The longest nonce a hub answers (a nonce is 64 hex digits; anything far longer is noise).
pub const MAX_NONCE_LEN: usize = 256;
/// What the key derivation is labelled with, so that a key made for this purpose is good for
/// nothing else.
const KEY_LABEL: &[u8] = b"graphmind hub channel v1";

type HmacSha256 = Hmac<Sha256>;

/// The key that authenticates one connection's hub → app frames.
#[derive(Clone)]
pub struct ChannelKey([u8; 32]);

impl std::fmt::Debug for ChannelKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChannelKey(..)")
    }
}

fn mac_with(key: &[u8]) -> HmacSha256 {
    // HMAC takes keys of any length, so this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!("any key length"))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

impl ChannelKey {
    /// The key for a connection whose app sent `app_nonce` and whose hub answered
    /// `hub_nonce`: HMAC-SHA256 keyed with the secret's UTF-8 bytes over
    /// `"graphmind hub channel v1" 0x00 app_nonce 0x00 hub_nonce`.
    #[must_use]
    pub fn derive(secret: &str, app_nonce: &str, hub_nonce: &str) -> Self {
        let mut mac = mac_with(secret.as_bytes());
        mac.update(KEY_LABEL);
        mac.update(&[0]);
        mac.update(app_nonce.as_bytes());
        mac.update(&[0]);
        mac.update(hub_nonce.as_bytes());
        Self(mac.finalize().into_bytes().into())
    }

    /// The MAC of `frame` as the `counter`th frame of the connection (lowercase hex).
    #[must_use]
    pub fn mac(&self, counter: u64, frame: &str) -> String {
        let mut mac = mac_with(&self.0);
        mac.update(counter.to_string().as_bytes());
        mac.update(b"\n");
        mac.update(frame.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// `frame` (a JSON object's text, as the hub sends it) with `,"hubMacSeq":<counter>,
    /// "hubMac":"<mac>"` added before its closing brace. Text that is not an object with at
    /// least one field is returned as it is (and will be refused by the app).
    #[must_use]
    pub fn sign(&self, counter: u64, frame: &str) -> String {
        let mut out = String::with_capacity(frame.len() + 110);
        out.push_str(frame);
        self.sign_in_place(counter, &mut out);
        out
    }

    /// [`ChannelKey::sign`] in place: `frame` becomes the signed frame.
    pub fn sign_in_place(&self, counter: u64, frame: &mut String) {
        // An empty object has no field to follow; no hub frame is one.
        let signable = frame
            .strip_suffix('}')
            .is_some_and(|body| !body.trim_end().ends_with('{'));
        if !signable {
            return;
        }
        let mac = self.mac(counter, frame);
        frame.pop();
        push_fields(frame, counter, &mac);
    }
}

fn push_fields(out: &mut String, counter: u64, mac: &str) {
    use std::fmt::Write;
    let _ = write!(
        out,
        r#","{MAC_SEQ_FIELD}":{counter},"{MAC_FIELD}":"{mac}"}}"#
    );
}

/// Why a hub frame was refused by [`ChannelCheck::accept`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelError {
    /// The frame carries no `hubMacSeq` / `hubMac` at its end.
    Unsigned,
    /// The MAC does not match the frame under the connection's key.
    BadMac,
    /// The counter is not above the last accepted one (a replayed or reordered frame).
    Replayed,
}

impl std::fmt::Display for ChannelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Unsigned => "it carries no hubMac",
            Self::BadMac => "its hubMac does not match",
            Self::Replayed => "its hubMacSeq is not above the last one accepted (a replay)",
        })
    }
}

/// What precedes the MAC in a signed frame (`,"hubMac":"`).
const MAC_NEEDLE: &str = ",\"hubMac\":\"";
/// What precedes the counter in a signed frame (`,"hubMacSeq":`).
const MAC_SEQ_NEEDLE: &str = ",\"hubMacSeq\":";

/// A signed frame cut apart: the frame as it was signed, its counter and its MAC.
struct Signed<'a> {
    body: String,
    counter: u64,
    mac: &'a str,
}

/// Cuts `text` into the frame that was signed, its counter and its MAC. The fields are the
/// last two of the object, exactly as [`ChannelKey::sign`] writes them.
fn split(text: &str) -> Option<Signed<'_>> {
    let rest = text.strip_suffix("\"}")?;
    let (rest, mac) = rest.rsplit_once(MAC_NEEDLE)?;
    if mac.len() != 64 || !mac.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (frame, counter) = rest.rsplit_once(MAC_SEQ_NEEDLE)?;
    if counter.is_empty() || counter.len() > 20 || !counter.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let counter = counter.parse().ok()?;
    let mut body = String::with_capacity(frame.len() + 1);
    body.push_str(frame);
    body.push('}');
    Some(Signed { body, counter, mac })
}

/// The app's side of a connection's channel: checks each hub frame's MAC under the key and
/// that counters only grow.
#[derive(Debug)]
pub struct ChannelCheck {
    key: ChannelKey,
    /// The counter of the last frame accepted (frames start at 1).
    last: u64,
}

impl ChannelCheck {
    /// A check for a new connection under `key`.
    #[must_use]
    pub fn new(key: ChannelKey) -> Self {
        Self { key, last: 0 }
    }

    /// The frame `text` stood for, without its `hubMacSeq` and `hubMac`, if it was signed under
    /// this connection's key with a counter above the last accepted one.
    ///
    /// # Errors
    /// Why the frame is refused: unsigned, a MAC that does not match, or a counter already
    /// passed.
    pub fn accept(&mut self, text: &str) -> Result<String, ChannelError> {
        let signed = split(text).ok_or(ChannelError::Unsigned)?;
        let expected = self.key.mac(signed.counter, &signed.body);
        if !bool::from(expected.as_bytes().ct_eq(signed.mac.as_bytes())) {
            return Err(ChannelError::BadMac);
        }
        if signed.counter <= self.last {
            return Err(ChannelError::Replayed);
        }
        self.last = signed.counter;
        Ok(signed.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mac_is_hmac_sha256_as_in_rfc_4231() {
        // RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?"; the MAC
        // covers "<counter>\n<frame>", so the counter and newline are the data's first bytes.
        let key = ChannelKey(*b"Jefe\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0");
        // A 32-byte key zero-padded is the same HMAC key as "Jefe" (HMAC pads keys with zeros).
        assert_eq!(
            key.mac(7, "what do ya want for nothing?"),
            hex(&{
                let mut m = mac_with(b"Jefe");
                m.update(b"7\nwhat do ya want for nothing?");
                m.finalize().into_bytes()
            })
        );
        let mut m = mac_with(b"Jefe");
        m.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&m.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn the_needles_spell_the_field_names() {
        assert_eq!(MAC_NEEDLE, format!(r#","{MAC_FIELD}":""#));
        assert_eq!(MAC_SEQ_NEEDLE, format!(r#","{MAC_SEQ_FIELD}":"#));
    }

    #[test]
    fn the_key_depends_on_the_secret_and_both_nonces() {
        let k = ChannelKey::derive("s", "a", "h");
        assert_eq!(k.0, ChannelKey::derive("s", "a", "h").0);
        assert_ne!(k.0, ChannelKey::derive("t", "a", "h").0);
        assert_ne!(k.0, ChannelKey::derive("s", "b", "h").0);
        assert_ne!(k.0, ChannelKey::derive("s", "a", "i").0);
        // The separator keeps nonces from sliding into each other.
        assert_ne!(k.0, ChannelKey::derive("s", "ah", "").0);
    }

    #[test]
    fn a_signed_frame_stays_json_and_checks_out_once() {
        let key = ChannelKey::derive("s", "a", "h");
        let frame = r#"{"gm":1,"seq":3,"type":"exec.resume","payload":{"action":"inject","output":{"hubMacSeq":9}}}"#;
        let signed = key.sign(5, frame);
        let v: serde_json::Value = serde_json::from_str(&signed).expect("still JSON");
        assert_eq!(v[MAC_SEQ_FIELD], 5);
        assert_eq!(v[MAC_FIELD].as_str().map(str::len), Some(64));
        let mut check = ChannelCheck::new(key.clone());
        assert_eq!(check.accept(&signed).as_deref(), Ok(frame));
        assert_eq!(check.accept(&signed), Err(ChannelError::Replayed));
        // An earlier counter after a later one: reordered.
        assert_eq!(
            check.accept(&key.sign(4, frame)),
            Err(ChannelError::Replayed)
        );
        // Counters may skip (frames the app never saw), never go back.
        assert_eq!(check.accept(&key.sign(9, frame)).as_deref(), Ok(frame));
    }

    #[test]
    fn any_change_to_a_signed_frame_is_refused() {
        let key = ChannelKey::derive("s", "a", "h");
        let frame = r#"{"gm":1,"type":"exec.resume","payload":{"output":false}}"#;
        let signed = key.sign(1, frame);
        let fresh = || ChannelCheck::new(key.clone());
        assert_eq!(
            fresh().accept(&signed.replace("false", "true")),
            Err(ChannelError::BadMac)
        );
        // The counter is under the MAC: raising it to pass a replay check fails.
        assert_eq!(
            fresh().accept(&signed.replace(r#""hubMacSeq":1"#, r#""hubMacSeq":2"#)),
            Err(ChannelError::BadMac)
        );
        // Another connection's key (a relay cannot choose the hub's nonce for the app).
        assert_eq!(
            ChannelCheck::new(ChannelKey::derive("s", "a", "other")).accept(&signed),
            Err(ChannelError::BadMac)
        );
        assert_eq!(fresh().accept(frame), Err(ChannelError::Unsigned));
        assert_eq!(fresh().accept(""), Err(ChannelError::Unsigned));
        assert_eq!(
            fresh().accept(&signed.replace(r#","hubMacSeq":1"#, "")),
            Err(ChannelError::Unsigned)
        );
        // Something appended after the MAC.
        let mut appended = signed.clone();
        appended.pop();
        appended.push_str(r#","x":1}"#);
        assert_eq!(fresh().accept(&appended), Err(ChannelError::Unsigned));
        assert_eq!(fresh().accept(&signed).as_deref(), Ok(frame));
    }

    #[test]
    fn text_that_is_not_an_object_is_left_unsigned() {
        let key = ChannelKey::derive("s", "a", "h");
        assert_eq!(key.sign(1, "[1]"), "[1]");
        assert_eq!(key.sign(1, "{ }"), "{ }");
        assert_eq!(key.sign(1, r#""}""#), r#""}""#);
    }
}
