//! A short string stored inline (run ids, agent node ids): copied instead of shared, so
//! passing one along costs no refcount traffic between threads. Longer strings are shared.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Inline capacity (generated run ids are 16 bytes, `agent:<name>` usually under 30).
const INLINE: usize = 30;

/// An immutable string: inline up to 30 bytes, shared behind an `Arc` beyond.
#[derive(Clone)]
pub(crate) enum SmallStr {
    /// The bytes of a `str`, copied whole (always UTF-8).
    Inline { len: u8, bytes: [u8; INLINE] },
    /// A longer string.
    Shared(Arc<str>),
}

impl SmallStr {
    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            // Copied whole from a str, so always UTF-8.
            Self::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or("")
            }
            Self::Shared(s) => s,
        }
    }

    /// Length in bytes (without looking at the text).
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::Inline { len, .. } => usize::from(*len),
            Self::Shared(s) => s.len(),
        }
    }
}

impl From<&str> for SmallStr {
    fn from(s: &str) -> Self {
        match u8::try_from(s.len()) {
            Ok(len) if s.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..s.len()].copy_from_slice(s.as_bytes());
                Self::Inline { len, bytes }
            }
            _ => Self::Shared(s.into()),
        }
    }
}

impl From<String> for SmallStr {
    fn from(s: String) -> Self {
        if s.len() <= INLINE {
            Self::from(s.as_str())
        } else {
            Self::Shared(s.into())
        }
    }
}

impl Deref for SmallStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for SmallStr {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for SmallStr {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for SmallStr {}

impl fmt::Debug for SmallStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SmallStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_inline_and_long_ones_shared() {
        for s in [
            "",
            "run_0123456789ab",
            "é".repeat(15).as_str(),
            &"x".repeat(30),
        ] {
            let small = SmallStr::from(s);
            assert!(matches!(small, SmallStr::Inline { .. }), "{s}");
            assert_eq!(&*small, s);
            assert_eq!(SmallStr::from(s.to_owned()), small);
        }
        let long = "y".repeat(31);
        let small = SmallStr::from(long.as_str());
        assert!(matches!(small, SmallStr::Shared(_)));
        assert_eq!(small.to_string(), long);
        assert_eq!(format!("{:?}", SmallStr::from("a\"b")), r#""a\"b""#);
        assert!(size_of::<SmallStr>() <= 32);
    }
}
