//! Lazy captures: a value kept as itself and serialized into its JSON text only when
//! something reads it (the transport sending it, a replay, a gate showing it). A model
//! step's request and response are captured this way by the adapters, so that a detached
//! call — whose events may never be read — pays a clone and a length count instead of a
//! serialization.
//!
//! The length is counted by walking the value's `Serialize` without writing anything
//! ([`json_len`]): exact for everything but floats, which count as the longest text
//! `serde_json` writes for them, so the count is an upper bound of the text's length. The
//! replay ring sizes a lazy capture by it (twice: the value and, once read, its text), and
//! the recording path decides compact or budgeted by it, exactly as for a capture held as
//! text.

use std::sync::{Arc, OnceLock};

use serde::Serialize;
use serde::ser::{self, Serializer};
use serde_json::value::RawValue;

/// The most JSON text a compact record carries (half the payload budget; larger captures are
/// recorded the way large values are).
pub(crate) const COMPACT_TEXT_MAX: usize = graphmind_protocol::PAYLOAD_BUDGET / 2;

/// A value that can write its JSON text.
trait ToJson: Send + Sync {
    fn to_json(&self) -> Box<RawValue>;
}

impl<T: Serialize + Send + Sync + ?Sized> ToJson for Arc<T> {
    fn to_json(&self) -> Box<RawValue> {
        let v: &T = self;
        serde_json::value::to_raw_value(v).unwrap_or_else(|e| {
            // The marker an eager capture records (`captured::to_value`).
            let marker =
                serde_json::json!({"__graphmindUnserializable": true, "error": e.to_string()});
            serde_json::value::to_raw_value(&marker).expect("a JSON value serializes")
        })
    }
}

/// A captured value serialized on first read (see the module docs).
pub struct Lazy {
    value: Box<dyn ToJson>,
    len: usize,
    text: OnceLock<Box<RawValue>>,
}

impl std::fmt::Debug for Lazy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy")
            .field("len", &self.len)
            .field("read", &self.text.get().is_some())
            .finish()
    }
}

impl Lazy {
    /// Captures `value` (shared with whoever else holds it; it is never changed);
    /// `Err(value)` when its serialization fails (the caller captures it the eager way,
    /// which records the unserializable marker).
    pub(crate) fn new<T: Serialize + Send + Sync + ?Sized + 'static>(
        value: Arc<T>,
    ) -> Result<Self, Arc<T>> {
        match json_len(&*value) {
            Some(len) => Ok(Self {
                value: Box::new(value),
                len,
                text: OnceLock::new(),
            }),
            None => Err(value),
        }
    }

    /// Captures `value` whose JSON text its caller bounds by `max_len` bytes (for a value
    /// whose `Serialize` does real work, which counting would do once more).
    pub(crate) fn within<T: Serialize + Send + Sync + ?Sized + 'static>(
        value: Arc<T>,
        max_len: usize,
    ) -> Self {
        Self {
            value: Box::new(value),
            len: max_len,
            text: OnceLock::new(),
        }
    }

    /// An upper bound of the length of its JSON text (exact when it holds no float).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Its JSON text, serialized on the first call. A text longer than its bound and than
    /// the part of the payload budget a compact record may carry (a caller's bound was
    /// wrong) is replaced by the truncation marker with its size.
    pub(crate) fn text(&self) -> &RawValue {
        self.text.get_or_init(|| render(&*self.value, self.len))
    }

    /// Its JSON text, taken: the text already serialized, else serialized now (as
    /// [`Lazy::text`] would), without copying it.
    pub(crate) fn into_text(self) -> Box<RawValue> {
        let Self { value, len, text } = self;
        text.into_inner().unwrap_or_else(|| render(&*value, len))
    }
}

/// `value`'s JSON text, or the truncation marker with its size when the text is longer than
/// `len` and than [`COMPACT_TEXT_MAX`] (see [`Lazy::text`]).
fn render(value: &dyn ToJson, len: usize) -> Box<RawValue> {
    let text = value.to_json();
    let n = text.get().len();
    if n > len && n > COMPACT_TEXT_MAX {
        return serde_json::value::to_raw_value(
            &serde_json::json!({"__graphmindTruncated": true, "bytes": n}),
        )
        .expect("a JSON value serializes");
    }
    text
}

/// The length of `v`'s compact JSON text as `serde_json` writes it (floats: an upper bound:
/// the longest text `serde_json` writes for one), counted without writing anything; `None`
/// when serializing it fails. For a bound to pass to
/// [`Node::finish_lazy_within`](crate::node::Node::finish_lazy_within).
#[must_use]
pub fn json_len<T: Serialize + ?Sized>(v: &T) -> Option<usize> {
    let mut n = Len {
        n: 0,
        was_str: false,
    };
    v.serialize(&mut n).ok()?;
    Some(n.n)
}

/// Why a length could not be counted: the value's `Serialize` failed.
#[derive(Debug)]
struct Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the value does not serialize")
    }
}

impl std::error::Error for Failed {}

impl ser::Error for Failed {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Self
    }
}

/// The length counter.
struct Len {
    n: usize,
    /// Whether the last scalar was a string (a map key that is not one gets quotes).
    was_str: bool,
}

/// The length of `s` as a JSON string (quotes and escapes included), exact: the text's
/// bytes, its quotes, and for each byte `serde_json` escapes the escape's extra bytes (one
/// for `\"`, `\\` and the short control escapes, five for `\u00XX`).
#[inline]
fn str_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    // Most strings escape nothing: one branch-free pass counts the bytes that need an
    // escape, and only a string with some is walked again for their lengths.
    let escaped: usize = bytes.iter().map(|&b| usize::from(needs_escape(b))).sum();
    if escaped == 0 {
        return bytes.len() + 2;
    }
    bytes.len()
        + 2
        + bytes
            .iter()
            .map(|&b| match b {
                b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 1,
                0..=0x1f => 5,
                _ => 0,
            })
            .sum::<usize>()
}

/// Whether `serde_json` escapes byte `b` in a string: a control character, `"` or `\`
/// (bytes of non-ASCII characters are written as they are).
#[inline(always)]
fn needs_escape(b: u8) -> bool {
    (b < 0x20) | (b == b'"') | (b == b'\\')
}

fn digits(n: u128) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

impl Len {
    fn add(&mut self, n: usize) -> Result<(), Failed> {
        self.n = self.n.saturating_add(n);
        self.was_str = false;
        Ok(())
    }

    fn signed(&mut self, v: i128) -> Result<(), Failed> {
        self.add(digits(v.unsigned_abs()) + usize::from(v < 0))
    }

    fn string(&mut self, s: &str) -> Result<(), Failed> {
        self.add(str_len(s))?;
        self.was_str = true;
        Ok(())
    }

    /// Opens a compound: `open` bytes now, `close` at its end.
    fn open(&mut self, open: usize, close: usize) -> Result<Compound<'_>, Failed> {
        self.add(open)?;
        Ok(Compound {
            len: self,
            first: true,
            close,
        })
    }
}

/// A sequence, map or struct being counted.
struct Compound<'a> {
    len: &'a mut Len,
    first: bool,
    /// Bytes written at its end (`]`, `}`, or `}}` for a variant's).
    close: usize,
}

impl Compound<'_> {
    fn comma(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.len.n = self.len.n.saturating_add(1);
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Failed> {
        self.comma();
        v.serialize(&mut *self.len)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Result<(), Failed> {
        self.comma();
        self.len.add(str_len(key) + 1)?;
        v.serialize(&mut *self.len)
    }

    fn finish(self) -> Result<(), Failed> {
        self.len.add(self.close)
    }
}

impl<'a> Serializer for &'a mut Len {
    type Ok = ();
    type Error = Failed;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Failed> {
        self.add(if v { 4 } else { 5 })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Failed> {
        self.signed(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Failed> {
        self.signed(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Failed> {
        self.signed(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Failed> {
        self.signed(v.into())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Failed> {
        self.signed(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Failed> {
        self.add(digits(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Failed> {
        self.add(digits(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<(), Failed> {
        self.add(digits(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<(), Failed> {
        self.add(digits(v.into()))
    }
    fn serialize_u128(self, v: u128) -> Result<(), Failed> {
        self.add(digits(v))
    }
    fn serialize_f32(self, _: f32) -> Result<(), Failed> {
        // The longest shortest-round-trip text of an f32 (`-1.1754944e-38`), or `null`.
        self.add(16)
    }
    fn serialize_f64(self, _: f64) -> Result<(), Failed> {
        // The longest of an f64 (`-2.2250738585072014e-308`), or `null`.
        self.add(24)
    }
    fn serialize_char(self, v: char) -> Result<(), Failed> {
        self.string(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Failed> {
        self.string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Failed> {
        // An array of numbers.
        let body: usize = v.iter().map(|b| digits((*b).into())).sum();
        self.add(2 + body + v.len().saturating_sub(1))
    }
    fn serialize_none(self) -> Result<(), Failed> {
        self.add(4)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Failed> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Failed> {
        self.add(4)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Failed> {
        self.add(4)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Failed> {
        self.string(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Failed> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Failed> {
        // `{"variant":value}`
        self.add(str_len(variant) + 3)?;
        v.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Failed> {
        self.open(1, 1)
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Failed> {
        self.open(1, 1)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Failed> {
        self.open(1, 1)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Failed> {
        // `{"variant":[…]}`
        self.open(str_len(variant) + 3, 2)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Failed> {
        self.open(1, 1)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Failed> {
        self.open(1, 1)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Failed> {
        // `{"variant":{…}}`
        self.open(str_len(variant) + 3, 2)
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = Failed;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Failed> {
        self.element(v)
    }
    fn end(self) -> Result<(), Failed> {
        self.finish()
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = Failed;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Failed> {
        self.element(v)
    }
    fn end(self) -> Result<(), Failed> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = Failed;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Failed> {
        self.element(v)
    }
    fn end(self) -> Result<(), Failed> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Failed;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Failed> {
        self.element(v)
    }
    fn end(self) -> Result<(), Failed> {
        self.finish()
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Failed;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Failed> {
        self.comma();
        key.serialize(&mut *self.len)?;
        if !self.len.was_str {
            // `serde_json` quotes a number or bool key.
            self.len.add(2)?;
        }
        // The colon.
        self.len.add(1)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Failed> {
        v.serialize(&mut *self.len)
    }
    fn end(self) -> Result<(), Failed> {
        self.finish()
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Failed;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Failed> {
        self.field(key, v)
    }
    fn end(self) -> Result<(), Failed> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Failed;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Failed> {
        self.field(key, v)
    }
    fn end(self) -> Result<(), Failed> {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn exact<T: Serialize>(v: &T) {
        let text = serde_json::to_string(v).unwrap();
        assert_eq!(json_len(v), Some(text.len()), "{text}");
    }

    #[derive(Serialize)]
    enum E {
        Unit,
        New(u8),
        Tuple(i32, String),
        Struct { a: Option<bool>, b: Vec<u16> },
    }

    #[derive(Serialize)]
    struct S<'a> {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        none: Option<u8>,
        nested: Vec<E>,
        map: BTreeMap<i64, &'a str>,
        bools: BTreeMap<bool, ()>,
        unit: (),
        tuple: (u64, i64, char),
        #[serde(with = "serde_bytes_like")]
        bytes: Vec<u8>,
        big: u128,
        neg: i128,
        #[serde(flatten)]
        flat: BTreeMap<&'a str, serde_json::Value>,
    }

    mod serde_bytes_like {
        pub(super) fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(b)
        }
    }

    #[test]
    fn the_counted_length_is_the_texts_for_values_without_floats() {
        exact(&json!(null));
        exact(&json!({"a": [1, -22, "x\"y\\z\n\t\u{1}\u{7f}é😀", true, false, null], "": {}}));
        exact(&"\u{0}\u{8}\u{c}\r\u{1f} ".to_owned());
        exact(&E::Unit);
        exact(&E::New(200));
        exact(&E::Tuple(-5, "t".into()));
        exact(&E::Struct {
            a: Some(true),
            b: vec![0, 9, 10, 65535],
        });
        exact(&S {
            text: "a \"quoted\" text",
            skipped: None,
            none: None,
            nested: vec![E::Unit, E::New(0), E::Struct { a: None, b: vec![] }],
            map: [(-1, "m"), (10, "n")].into_iter().collect(),
            bools: [(true, ()), (false, ())].into_iter().collect(),
            unit: (),
            tuple: (u64::MAX, i64::MIN, '"'),
            bytes: vec![0, 7, 255],
            big: u128::MAX,
            neg: i128::MIN,
            flat: [("extra", json!({"k": [1, 2]}))].into_iter().collect(),
        });
        exact(&Vec::<u8>::new());
    }

    #[test]
    fn a_strings_length_is_exact_with_and_without_escapes() {
        let long_plain = "lorem ipsum dolor sit amet ".repeat(100);
        let long_mixed = format!("{long_plain}\"{long_plain}\u{1}");
        let cases = [
            "",
            "plain ascii text",
            long_plain.as_str(),
            "\"",
            "\\",
            "say \"hi\" \\ bye",
            "\u{0}\u{1}\u{7}\u{8}\t\n\u{b}\u{c}\r\u{1b}\u{1f}",
            "tab\tand\u{1f}unit",
            "\u{7f} del is not escaped",
            "héllo wörld, 日本語, 😀",
            "é\"😀\\\n\u{2}",
            long_mixed.as_str(),
        ];
        for s in cases {
            let text = serde_json::to_string(s).unwrap();
            assert_eq!(str_len(s), text.len(), "{text}");
        }
    }

    #[test]
    fn floats_count_as_at_most_their_longest_text() {
        for f in [0.1f64, -2.2250738585072014e-308, 1e300, f64::NAN, 3.0] {
            let text = serde_json::to_string(&f).unwrap();
            assert!(json_len(&f).unwrap() >= text.len(), "{text}");
        }
        for f in [0.1f32, -1.1754944e-38, f32::MAX] {
            let text = serde_json::to_string(&f).unwrap();
            assert!(json_len(&f).unwrap() >= text.len(), "{text}");
        }
    }

    #[test]
    fn a_lazy_capture_is_serialized_once_on_first_read() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        #[derive(Debug)]
        struct Counted;
        impl Serialize for Counted {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                CALLS.fetch_add(1, Ordering::SeqCst);
                s.serialize_str("v")
            }
        }
        let lazy = Lazy::new(Arc::new(Counted)).unwrap();
        // Counted once for its length, not yet written.
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        assert_eq!(lazy.len(), 3);
        assert_eq!(lazy.text().get(), "\"v\"");
        assert_eq!(lazy.text().get(), "\"v\"");
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_text_beyond_a_wrong_bound_becomes_the_truncation_marker() {
        let big = Arc::new("x".repeat(COMPACT_TEXT_MAX + 1));
        let lazy = Lazy::within(Arc::clone(&big), 10);
        let v: serde_json::Value = serde_json::from_str(lazy.text().get()).unwrap();
        assert_eq!(v["__graphmindTruncated"], true);
        assert_eq!(v["bytes"], big.len() + 2);
        // Within its bound, or small: kept.
        let lazy = Lazy::within(Arc::new("small"), 1);
        assert_eq!(lazy.text().get(), "\"small\"");
    }

    #[test]
    fn a_taken_text_is_the_read_one() {
        let lazy = Lazy::new(Arc::new(json!({"a": [1, "b"]}))).unwrap();
        assert_eq!(lazy.into_text().get(), r#"{"a":[1,"b"]}"#);
        // Read first: the same text, not serialized again.
        let lazy = Lazy::new(Arc::new("v")).unwrap();
        let read: *const RawValue = lazy.text();
        let taken = lazy.into_text();
        assert_eq!(taken.get(), "\"v\"");
        assert!(std::ptr::eq(read, &*taken));
        // A wrong bound: the marker, as on a read.
        let big = Arc::new("x".repeat(COMPACT_TEXT_MAX + 1));
        let v: serde_json::Value =
            serde_json::from_str(Lazy::within(Arc::clone(&big), 10).into_text().get()).unwrap();
        assert_eq!(v["__graphmindTruncated"], true);
        assert_eq!(v["bytes"], big.len() + 2);
    }

    #[test]
    fn an_unserializable_value_is_refused() {
        struct Fails;
        impl Serialize for Fails {
            fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(ser::Error::custom("nope"))
            }
        }
        assert!(Lazy::new(Arc::new(Fails)).is_err());
    }
}
