//! What decoding can fail with. `Incomplete` is not damage: on a buffered (unframed) connection
//! it means "read more bytes and try again"; everything else is a malformed message.

/// A decoding error, with the byte offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThriftError {
    /// The buffer ends inside the message: at least `needed` more bytes are wanted.
    #[error("message incomplete at byte {offset}: {needed} more byte(s) needed")]
    Incomplete {
        /// Where the read stopped.
        offset: usize,
        /// How many more bytes the read needed (at least).
        needed: usize,
    },
    /// A message header that is not a strict binary or compact header of a known version.
    #[error("byte {offset}: bad message header {header:#x}")]
    BadHeader {
        /// Where.
        offset: usize,
        /// The header bits read.
        header: u32,
    },
    /// A type id the protocol does not define.
    #[error("byte {offset}: unknown type id {id}")]
    UnknownType {
        /// Where.
        offset: usize,
        /// The id.
        id: u8,
    },
    /// A negative or oversized length, or more container elements than bytes remain.
    #[error("byte {offset}: {what} of {size} exceeds the limit of {limit}")]
    TooLarge {
        /// Where.
        offset: usize,
        /// What was sized (string, list, map, message).
        what: &'static str,
        /// The size read.
        size: i64,
        /// The limit it broke.
        limit: usize,
    },
    /// Structs or containers nested deeper than the limit.
    #[error("byte {offset}: nested deeper than {limit}")]
    TooDeep {
        /// Where.
        offset: usize,
        /// The depth limit.
        limit: usize,
    },
    /// A string that is not UTF-8.
    #[error("byte {offset}: a string is not UTF-8")]
    NotUtf8 {
        /// Where the string starts.
        offset: usize,
    },
    /// A varint longer than its type allows.
    #[error("byte {offset}: varint too long")]
    BadVarint {
        /// Where.
        offset: usize,
    },
    /// A value that does not fit the field it was read for.
    #[error("byte {offset}: {what}")]
    Invalid {
        /// Where.
        offset: usize,
        /// What was wrong.
        what: String,
    },
}

impl ThriftError {
    /// Whether more bytes could complete the message (only on an unframed connection).
    pub fn is_incomplete(&self) -> bool {
        matches!(self, ThriftError::Incomplete { .. })
    }
}

/// Decoding's result.
pub type Result<T> = std::result::Result<T, ThriftError>;
