//! HBase's Thrift1 column specs: `fam:qual` is one column, `fam:` the empty qualifier, `fam`
//! (no colon) the whole family — for reads and deletes; a put needs the colon.

use bytes::Bytes;

/// A parsed column spec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    /// The family.
    pub family: Bytes,
    /// The qualifier; `None` for the whole family.
    pub qualifier: Option<Bytes>,
}

/// Parses `fam:qual`, `fam:` or `fam`.
pub fn parse(spec: &Bytes) -> ColumnSpec {
    match spec.iter().position(|&b| b == b':') {
        Some(colon) => ColumnSpec {
            family: spec.slice(..colon),
            qualifier: Some(spec.slice(colon + 1..)),
        },
        None => ColumnSpec {
            family: spec.clone(),
            qualifier: None,
        },
    }
}

/// `fam:qual`, as result maps key their cells.
pub fn name(family: &[u8], qualifier: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(family.len() + 1 + qualifier.len());
    out.extend_from_slice(family);
    out.push(b':');
    out.extend_from_slice(qualifier);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms() {
        let spec = |s: &'static str| parse(&Bytes::from_static(s.as_bytes()));
        assert_eq!(spec("cf:q").qualifier.as_deref(), Some(&b"q"[..]));
        assert_eq!(spec("cf:").qualifier.as_deref(), Some(&b""[..]));
        assert_eq!(spec("cf").qualifier, None);
        assert_eq!(&spec("cf:a:b").qualifier.expect("q")[..], b"a:b");
        assert_eq!(&name(b"cf", b"q")[..], b"cf:q");
    }
}
