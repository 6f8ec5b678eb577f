//! Captured values: what an instrumented call's arguments and output become in the replay
//! ring. Scalars and strings are kept as themselves (no JSON tree built, 24 bytes instead of a
//! `serde_json::Value`'s 80); anything else is converted to a boxed [`Value`] once, or, where
//! the caller asks for it ([`Val::raw`]), serialized once into its JSON text (no tree built:
//! one allocation, its size known exactly, dropped with one free). A captured value
//! serializes to exactly the bytes its [`Value`] would (text captures: but for an `f32`,
//! written as itself where `to_value` widens it).

use serde::ser::{self, Impossible, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::lazy::Lazy;
use std::sync::Arc;

/// One captured JSON value.
#[derive(Debug, Clone)]
pub enum Val {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A non-negative integer.
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// A float (non-finite ones are written `null`, as `serde_json` does).
    F64(f64),
    /// A string.
    Str(Box<str>),
    /// Anything else, as JSON.
    Json(Box<Value>),
    /// Anything else, as its JSON text (serialized once, never parsed on the app's path).
    Raw(Box<RawValue>),
    /// Anything else, kept as itself and serialized on first read (a lazy capture).
    Lazy(Arc<Lazy>),
}

impl PartialEq for Val {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Null, Self::Null) => true,
            (Self::Bool(a), Self::Bool(b)) => a == b,
            (Self::U64(a), Self::U64(b)) => a == b,
            (Self::I64(a), Self::I64(b)) => a == b,
            (Self::F64(a), Self::F64(b)) => a == b,
            (Self::Str(a), Self::Str(b)) => a == b,
            (Self::Json(a), Self::Json(b)) => a == b,
            // The same text (a value captured as text is not compared as JSON).
            (Self::Raw(a), Self::Raw(b)) => a.get() == b.get(),
            (Self::Lazy(a), Self::Lazy(b)) => a.text().get() == b.text().get(),
            _ => false,
        }
    }
}

impl Val {
    /// Captures `v` as [`to_value`] would see it; a value that cannot be
    /// serialized becomes the same marker object.
    pub(crate) fn of<T: Serialize + ?Sized>(v: &T) -> Self {
        match v.serialize(Scalar) {
            Ok(val) => val,
            Err(NotScalar) => Self::from_value(to_value(v)),
        }
    }

    /// Captures `v` as its JSON text, serialized once: what [`Val::of`] would capture,
    /// without building a JSON tree (for large values: a model's request or response).
    pub(crate) fn raw<T: Serialize + ?Sized>(v: &T) -> Self {
        match serde_json::value::to_raw_value(v) {
            Ok(raw) => Self::Raw(raw),
            Err(_) => Self::from_value(to_value(v)),
        }
    }

    /// Captures `v` lazily ([`Lazy`]); as text ([`Val::raw`]) when its JSON text would be
    /// longer than `eager_over` bytes (it is then recorded the way large values are), or the
    /// marker when it does not serialize.
    pub(crate) fn lazy<T: Serialize + Send + Sync + ?Sized + 'static>(
        v: Arc<T>,
        eager_over: usize,
    ) -> Self {
        match Lazy::new(v) {
            Ok(l) if l.len() <= eager_over => Self::Lazy(Arc::new(l)),
            Ok(l) => Self::Raw(l.into_text()),
            Err(v) => Self::of(&*v),
        }
    }

    /// [`Val::lazy`] with the caller's bound of its JSON text's length.
    pub(crate) fn lazy_within<T: Serialize + Send + Sync + ?Sized + 'static>(
        v: Arc<T>,
        max_len: usize,
        eager_over: usize,
    ) -> Self {
        if max_len <= eager_over {
            Self::Lazy(Arc::new(Lazy::within(v, max_len)))
        } else {
            Self::raw(&*v)
        }
    }

    /// The length of its JSON text when it is held as text (for a lazy capture: an upper
    /// bound).
    pub(crate) fn raw_len(&self) -> Option<usize> {
        match self {
            Self::Raw(r) => Some(r.get().len()),
            Self::Lazy(l) => Some(l.len()),
            _ => None,
        }
    }

    /// A value already in JSON form (scalars unboxed).
    pub(crate) fn from_value(v: Value) -> Self {
        match v {
            Value::Null => Self::Null,
            Value::Bool(b) => Self::Bool(b),
            Value::String(s) => Self::Str(s.into_boxed_str()),
            Value::Number(n) if n.is_u64() => n.as_u64().map_or(Self::Null, Self::U64),
            Value::Number(n) if n.is_i64() => n.as_i64().map_or(Self::Null, Self::I64),
            Value::Number(n) => n.as_f64().map_or(Self::Null, Self::F64),
            other => Self::Json(Box::new(other)),
        }
    }

    /// The value as JSON.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(b),
            Self::U64(n) => n.into(),
            Self::I64(n) => n.into(),
            Self::F64(f) => f.into(),
            Self::Str(s) => Value::String(s.into()),
            Self::Json(v) => *v,
            Self::Raw(r) => serde_json::from_str(r.get()).unwrap_or(Value::Null),
            Self::Lazy(l) => serde_json::from_str(l.text().get()).unwrap_or(Value::Null),
        }
    }

    /// The string, if this is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            Self::Json(v) => v.as_str(),
            // Text: a string's would have to be unescaped; no caller needs it.
            _ => None,
        }
    }
}

impl Serialize for Val {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Null => s.serialize_unit(),
            Self::Bool(b) => s.serialize_bool(*b),
            Self::U64(n) => s.serialize_u64(*n),
            Self::I64(n) => s.serialize_i64(*n),
            // `Value::from(f64)` is `null` when not finite; so is this.
            Self::F64(f) if f.is_finite() => s.serialize_f64(*f),
            Self::F64(_) => s.serialize_unit(),
            Self::Str(t) => s.serialize_str(t),
            Self::Json(v) => v.serialize(s),
            Self::Raw(r) => r.serialize(s),
            Self::Lazy(l) => l.text().serialize(s),
        }
    }
}

/// Not a scalar (or a scalar whose JSON form this module does not reproduce): capture it
/// through `serde_json::to_value` instead.
#[derive(Debug)]
pub(crate) struct NotScalar;

impl std::fmt::Display for NotScalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not a scalar")
    }
}

impl std::error::Error for NotScalar {}

impl ser::Error for NotScalar {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Self
    }
}

/// Serializes scalars and strings straight into a [`Val`]; refuses everything else.
struct Scalar;

impl Serializer for Scalar {
    type Ok = Val;
    type Error = NotScalar;
    type SerializeSeq = Impossible<Val, NotScalar>;
    type SerializeTuple = Impossible<Val, NotScalar>;
    type SerializeTupleStruct = Impossible<Val, NotScalar>;
    type SerializeTupleVariant = Impossible<Val, NotScalar>;
    type SerializeMap = Impossible<Val, NotScalar>;
    type SerializeStruct = Impossible<Val, NotScalar>;
    type SerializeStructVariant = Impossible<Val, NotScalar>;

    fn serialize_bool(self, v: bool) -> Result<Val, NotScalar> {
        Ok(Val::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Val, NotScalar> {
        self.serialize_i64(v.into())
    }
    fn serialize_i16(self, v: i16) -> Result<Val, NotScalar> {
        self.serialize_i64(v.into())
    }
    fn serialize_i32(self, v: i32) -> Result<Val, NotScalar> {
        self.serialize_i64(v.into())
    }
    fn serialize_i64(self, v: i64) -> Result<Val, NotScalar> {
        // As `serde_json::Number`: non-negative integers are unsigned.
        Ok(u64::try_from(v).map_or(Val::I64(v), Val::U64))
    }
    fn serialize_u8(self, v: u8) -> Result<Val, NotScalar> {
        self.serialize_u64(v.into())
    }
    fn serialize_u16(self, v: u16) -> Result<Val, NotScalar> {
        self.serialize_u64(v.into())
    }
    fn serialize_u32(self, v: u32) -> Result<Val, NotScalar> {
        self.serialize_u64(v.into())
    }
    fn serialize_u64(self, v: u64) -> Result<Val, NotScalar> {
        Ok(Val::U64(v))
    }
    fn serialize_f32(self, _: f32) -> Result<Val, NotScalar> {
        // `serde_json` widens an f32 in its own way; let it.
        Err(NotScalar)
    }
    fn serialize_f64(self, v: f64) -> Result<Val, NotScalar> {
        Ok(if v.is_finite() {
            Val::F64(v)
        } else {
            Val::Null
        })
    }
    fn serialize_char(self, v: char) -> Result<Val, NotScalar> {
        let mut buf = [0; 4];
        Ok(Val::Str(v.encode_utf8(&mut buf).into()))
    }
    fn serialize_str(self, v: &str) -> Result<Val, NotScalar> {
        Ok(Val::Str(v.into()))
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<Val, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_none(self) -> Result<Val, NotScalar> {
        Ok(Val::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Val, NotScalar> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Val, NotScalar> {
        Ok(Val::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Val, NotScalar> {
        Ok(Val::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Val, NotScalar> {
        Ok(Val::Str(variant.into()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Val, NotScalar> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Val, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, NotScalar> {
        Err(NotScalar)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotScalar> {
        Err(NotScalar)
    }
    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<Val, NotScalar> {
        Ok(Val::Str(value.to_string().into()))
    }
}

/// Serializes a value for an event; a value that cannot be serialized becomes a marker.
pub(crate) fn to_value<T: Serialize + ?Sized>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(
        |e| serde_json::json!({"__graphmindUnserializable": true, "error": e.to_string()}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use std::collections::BTreeMap;

    fn same<T: Serialize>(v: &T) {
        let val = Val::of(v);
        let expected = serde_json::to_value(v).unwrap();
        assert_eq!(
            serde_json::to_string(&val).unwrap(),
            serde_json::to_string(&expected).unwrap(),
            "{val:?}"
        );
        assert_eq!(val.into_value(), expected);
    }

    #[derive(Serialize)]
    enum E {
        Unit,
        New(u8),
        Tuple(u8, i8),
        Struct { a: u8 },
    }

    #[derive(Serialize)]
    struct Meters(f64);

    #[derive(Serialize)]
    struct Unit;

    #[test]
    fn captured_values_serialize_like_their_json() {
        same(&0u8);
        same(&u64::MAX);
        same(&i64::MIN);
        same(&-1i32);
        same(&7i16);
        same(&1.5f64);
        same(&0.1f32);
        same(&f64::NAN);
        same(&f64::INFINITY);
        same(&-0.0f64);
        same(&1e300f64);
        same(&true);
        same(&'é');
        same(&"a \"quoted\"\n line");
        same(&String::new());
        same(&Option::<u8>::None);
        same(&Some("x"));
        same(&());
        same(&Unit);
        same(&Meters(2.25));
        same(&E::Unit);
        same(&E::New(1));
        same(&E::Tuple(1, -1));
        same(&E::Struct { a: 1 });
        same(&vec![1, 2, 3]);
        same(&(1, "two"));
        same(&BTreeMap::from([("k", vec![Some(1.5), None])]));
        same(&serde_json::json!({"nested": {"deep": [1, "x", null]}}));
        same(&u128::from(u64::MAX));
        same(&i128::from(i64::MIN));
        same(&serde_bytes_like());
    }

    fn serde_bytes_like() -> Vec<u8> {
        vec![0, 255]
    }

    #[test]
    fn raw_captures_serialize_like_their_json() {
        #[derive(Serialize)]
        struct Request<'a> {
            model: &'a str,
            messages: Vec<BTreeMap<&'a str, &'a str>>,
            temperature: f64,
        }
        let req = Request {
            model: "m",
            messages: vec![BTreeMap::from([("role", "user"), ("content", "a \"b\"\n")])],
            temperature: 0.1,
        };
        let val = Val::raw(&req);
        let expected = serde_json::to_value(&req).unwrap();
        assert!(matches!(val, Val::Raw(_)));
        assert_eq!(
            serde_json::to_string(&val).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        assert_eq!(
            val.raw_len(),
            Some(serde_json::to_string(&req).unwrap().len())
        );
        assert_eq!(serde_json::to_value(&val).unwrap(), expected);
        assert_eq!(val.into_value(), expected);
        // An f32 is written as itself, where `to_value` widens it first.
        assert_eq!(serde_json::to_string(&Val::raw(&0.1f32)).unwrap(), "0.1");
    }

    #[test]
    fn values_round_trip_through_from_value() {
        for v in [
            serde_json::json!(null),
            serde_json::json!(3),
            serde_json::json!(-3),
            serde_json::json!(2.5),
            serde_json::json!("s"),
            serde_json::json!([1]),
            serde_json::json!({"a": 1}),
        ] {
            assert_eq!(Val::from_value(v.clone()).into_value(), v);
        }
    }

    #[test]
    fn unserializable_values_become_the_marker() {
        struct Fails;
        impl Serialize for Fails {
            fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(ser::Error::custom("nope"))
            }
        }
        let v = Val::of(&Fails).into_value();
        assert_eq!(v["__graphmindUnserializable"], true);
        assert_eq!(v["error"], "nope");
    }

    #[test]
    fn a_captured_value_is_smaller_than_a_json_value() {
        assert!(size_of::<Val>() <= 24);
        assert!(size_of::<Option<Val>>() <= 24);
    }
}
