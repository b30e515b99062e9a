//! Table and column family names, checked once against HBase's rules and carried as types.
//!
//! - A table name follows HBase's `TableName` qualifier rules: `[A-Za-z0-9_][A-Za-z0-9_.-]*`, at
//!   most [`MAX_TABLE_NAME_LEN`] bytes. It cannot start with `.` or `-`, so `.`, `..`, `.META.`
//!   and `-ROOT-` are impossible. Namespaces (`ns:table`) are not supported yet, and a `:` is
//!   refused with an error saying so. HBase 2 also admits non-ASCII letters; Keel keeps to
//!   ASCII.
//! - A family name follows `ColumnFamilyDescriptorBuilder.isLegalColumnFamilyName`: not empty,
//!   not starting with `.`, no ISO control character, `:`, `\` or `/`, not `recovered.edits`,
//!   and at most [`keel_cell::MAX_FAMILY_LEN`] (127) bytes, the cell format's limit.
//!
//! Neither ever becomes a path: a region's directory is named by its id and a family's
//! directory by the hex of its name, so even a name that passed these rules by mistake cannot
//! leave the store's directory.

use std::fmt;

use bytes::Bytes;
use keel_cell::escape_bytes;

/// The longest table name, in bytes (HBase's limit on a table qualifier).
pub const MAX_TABLE_NAME_LEN: usize = 255;

/// A family name HBase reserves (its directory of recovered edits inside a region).
const RESERVED_FAMILY: &[u8] = b"recovered.edits";

/// A name that breaks HBase's rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// An empty table name.
    #[error("a table name cannot be empty")]
    EmptyTable,
    /// A table name longer than [`MAX_TABLE_NAME_LEN`].
    #[error("table name {name:?} is {len} bytes long; the limit is {max}")]
    TableTooLong {
        /// The name (its first 64 characters).
        name: String,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// `namespace:table`.
    #[error(
        "table name {name:?}: namespaces ('ns:table') are not supported yet; use a name without ':'"
    )]
    Namespace {
        /// The name.
        name: String,
    },
    /// A table name starting with `.` or `-`.
    #[error(
        "illegal first character {first:?} in table name {name:?}: a table name starts with a letter, a digit or '_'"
    )]
    TableFirstCharacter {
        /// The name.
        name: String,
        /// Its first character.
        first: char,
    },
    /// Another character than `[A-Za-z0-9_.-]` in a table name.
    #[error(
        "illegal character '{character}' at byte {at} of table name {name}: use letters, digits, '_', '-' and '.'"
    )]
    TableCharacter {
        /// The name, escaped.
        name: String,
        /// The character (or byte) refused.
        character: String,
        /// Its byte offset.
        at: usize,
    },
    /// An empty family name.
    #[error("a column family name cannot be empty")]
    EmptyFamily,
    /// A family name longer than the cell format allows.
    #[error("column family {name} is {len} bytes long; the limit is {max}")]
    FamilyTooLong {
        /// The name, escaped (its first 64 bytes).
        name: String,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A family name starting with `.`.
    #[error("column family {name} starts with '.', which HBase does not allow")]
    FamilyFirstCharacter {
        /// The name, escaped.
        name: String,
    },
    /// A control character, `:`, `\` or `/` in a family name.
    #[error(
        "illegal byte {byte:#04x} at {at} of column family {name}: control characters, ':', '\\\\' and '/' are not allowed"
    )]
    FamilyCharacter {
        /// The name, escaped.
        name: String,
        /// The byte refused.
        byte: u8,
        /// Its offset.
        at: usize,
    },
    /// `recovered.edits`.
    #[error("column family name {name} is reserved")]
    FamilyReserved {
        /// The name.
        name: String,
    },
}

/// A table name that follows HBase's rules.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableName(String);

impl TableName {
    /// Checks `name` against HBase's `TableName` qualifier rules.
    pub fn new(name: &str) -> Result<TableName, NameError> {
        let shown = || name.chars().take(64).collect::<String>();
        let Some(first) = name.chars().next() else {
            return Err(NameError::EmptyTable);
        };
        if name.len() > MAX_TABLE_NAME_LEN {
            return Err(NameError::TableTooLong {
                name: shown(),
                len: name.len(),
                max: MAX_TABLE_NAME_LEN,
            });
        }
        if name.contains(':') {
            return Err(NameError::Namespace { name: shown() });
        }
        if first == '.' || first == '-' {
            return Err(NameError::TableFirstCharacter {
                name: shown(),
                first,
            });
        }
        let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if let Some((at, c)) = name.char_indices().find(|&(_, c)| !legal(c)) {
            return Err(NameError::TableCharacter {
                name: escape_bytes(name.as_bytes()),
                character: c.escape_default().to_string(),
                at,
            });
        }
        Ok(TableName(name.to_string()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for TableName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Checks a column family name against HBase's rules (`isLegalColumnFamilyName`) and the cell
/// format's length limit.
pub fn check_family_name(name: &[u8]) -> Result<(), NameError> {
    let shown = || escape_bytes(&name[..name.len().min(64)]);
    let Some(&first) = name.first() else {
        return Err(NameError::EmptyFamily);
    };
    if name.len() > keel_cell::MAX_FAMILY_LEN {
        return Err(NameError::FamilyTooLong {
            name: shown(),
            len: name.len(),
            max: keel_cell::MAX_FAMILY_LEN,
        });
    }
    if first == b'.' {
        return Err(NameError::FamilyFirstCharacter { name: shown() });
    }
    if let Some((at, &byte)) = name
        .iter()
        .enumerate()
        .find(|&(_, &b)| b.is_ascii_control() || b == 0x7f || matches!(b, b':' | b'\\' | b'/'))
    {
        return Err(NameError::FamilyCharacter {
            name: shown(),
            byte,
            at,
        });
    }
    if name == RESERVED_FAMILY {
        return Err(NameError::FamilyReserved { name: shown() });
    }
    Ok(())
}

/// A family name that follows HBase's rules.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FamilyName(Bytes);

impl FamilyName {
    /// Checks `name` (see [`check_family_name`]).
    pub fn new(name: impl Into<Bytes>) -> Result<FamilyName, NameError> {
        let name = name.into();
        check_family_name(&name)?;
        Ok(FamilyName(name))
    }

    /// The name's bytes.
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_follow_hbases_rules() {
        for good in ["t", "T_1", "a.b-c", "_x", "9", &"a".repeat(255)] {
            assert_eq!(
                TableName::new(good).map(|t| t.to_string()),
                Ok(good.to_string())
            );
        }
        let refused = [
            ("", "cannot be empty"),
            (".", "first character '.'"),
            ("..", "first character '.'"),
            ("-ROOT-", "first character '-'"),
            (".META.", "first character '.'"),
            ("ns:t", "namespaces"),
            ("../x", "first character '.'"),
            ("a/b", "'/'"),
            ("a b", "' '"),
            ("tab\u{e9}", "'\\u{e9}'"),
            ("a\0", "'\\u{0}'"),
        ];
        for (name, says) in refused {
            let err = TableName::new(name).expect_err(name).to_string();
            assert!(err.contains(says), "{name:?}: {err}");
        }
        let long = "a".repeat(256);
        assert!(matches!(
            TableName::new(&long),
            Err(NameError::TableTooLong {
                len: 256,
                max: 255,
                ..
            })
        ));
    }

    #[test]
    fn family_names_follow_hbases_rules() {
        for good in [&b"cf"[..], b"a.b", b"x-y_z", b"\xff\xfe", &[b'f'; 127]] {
            assert!(
                FamilyName::new(Bytes::copy_from_slice(good)).is_ok(),
                "{good:?}"
            );
        }
        let refused: [(&[u8], &str); 8] = [
            (b"", "cannot be empty"),
            (b".", "starts with '.'"),
            (b"..", "starts with '.'"),
            (b"a/b", "0x2f"),
            (b"a:b", "0x3a"),
            (b"a\\b", "0x5c"),
            (b"a\nb", "0x0a"),
            (b"recovered.edits", "reserved"),
        ];
        for (name, says) in refused {
            let err = check_family_name(name).expect_err("refused").to_string();
            assert!(err.contains(says), "{name:?}: {err}");
        }
        assert!(matches!(
            check_family_name(&[b'f'; 128]),
            Err(NameError::FamilyTooLong {
                len: 128,
                max: 127,
                ..
            })
        ));
    }
}
