//! A [`Filter`] in HBase's filter language, readable back by [`Filter::parse`]: strings quoted
//! with `''` for a quote, lists in parentheses (so nesting survives), the full argument forms.
//!
//! Three things have no form in the language and cannot round-trip: a list of fewer than two
//! filters, `CompareOp::NoOp` (printed as `NO_OP`, which the parser refuses), and
//! `TimestampsFilter`'s `can_hint` (printed without it). An empty `ColumnRangeFilter` bound
//! prints as `''`, which reads back as no bound, as in HBase.

use super::{ColumnTest, Comparator, CompareOp, Filter, ListOp};

pub(super) fn print(filter: &Filter) -> Vec<u8> {
    let mut out = Vec::new();
    write(filter, &mut out);
    out
}

fn quote(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'\'');
    for &b in bytes {
        if b == b'\'' {
            out.push(b'\'');
        }
        out.push(b);
    }
    out.push(b'\'');
}

fn op(op: CompareOp, out: &mut Vec<u8>) {
    out.extend_from_slice(op.symbol().unwrap_or("NO_OP").as_bytes());
}

fn comparator(c: &Comparator, out: &mut Vec<u8>) {
    let mut text = c.type_name().as_bytes().to_vec();
    text.push(b':');
    text.extend_from_slice(c.operand());
    quote(&text, out);
}

fn boolean(b: bool, out: &mut Vec<u8>) {
    out.extend_from_slice(if b { b"true" } else { b"false" });
}

/// `Name (a, b, …)`, each argument written by `args`.
fn call(name: &str, out: &mut Vec<u8>, args: impl FnOnce(&mut Args<'_>)) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b" (");
    let mut a = Args { out, first: true };
    args(&mut a);
    out.push(b')');
}

struct Args<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl Args<'_> {
    fn next(&mut self) -> &mut Vec<u8> {
        if !self.first {
            self.out.extend_from_slice(b", ");
        }
        self.first = false;
        self.out
    }

    fn quoted(&mut self, bytes: &[u8]) {
        quote(bytes, self.next());
    }

    fn bare(&mut self, text: impl std::fmt::Display) {
        let text = text.to_string();
        self.next().extend_from_slice(text.as_bytes());
    }

    fn boolean(&mut self, b: bool) {
        boolean(b, self.next());
    }

    fn op(&mut self, o: CompareOp) {
        op(o, self.next());
    }

    fn comparator(&mut self, c: &Comparator) {
        comparator(c, self.next());
    }

    fn column_test(&mut self, t: &ColumnTest) {
        self.quoted(&t.family);
        self.quoted(&t.qualifier);
        self.op(t.op);
        self.comparator(&t.comparator);
        self.boolean(t.filter_if_missing);
        self.boolean(t.latest_only);
    }
}

fn write(filter: &Filter, out: &mut Vec<u8>) {
    match filter {
        Filter::KeyOnly { len_as_value } => call("KeyOnlyFilter", out, |a| {
            if *len_as_value {
                a.boolean(true);
            }
        }),
        Filter::FirstKeyOnly => call("FirstKeyOnlyFilter", out, |_| {}),
        Filter::Prefix(p) => call("PrefixFilter", out, |a| a.quoted(p)),
        Filter::ColumnPrefix(p) => call("ColumnPrefixFilter", out, |a| a.quoted(p)),
        Filter::MultipleColumnPrefix(ps) => call("MultipleColumnPrefixFilter", out, |a| {
            for p in ps {
                a.quoted(p);
            }
        }),
        Filter::ColumnCountGet(n) => call("ColumnCountGetFilter", out, |a| a.bare(n)),
        Filter::Page(n) => call("PageFilter", out, |a| a.bare(n)),
        Filter::ColumnPagination { limit, offset } => call("ColumnPaginationFilter", out, |a| {
            a.bare(limit);
            a.bare(offset);
        }),
        Filter::InclusiveStop(row) => call("InclusiveStopFilter", out, |a| a.quoted(row)),
        Filter::Timestamps { timestamps, .. } => call("TimestampsFilter", out, |a| {
            for ts in timestamps {
                a.bare(ts);
            }
        }),
        Filter::Row(o, c) => compare("RowFilter", *o, c, out),
        Filter::Family(o, c) => compare("FamilyFilter", *o, c, out),
        Filter::Qualifier(o, c) => compare("QualifierFilter", *o, c, out),
        Filter::Value(o, c) => compare("ValueFilter", *o, c, out),
        Filter::ColumnRange {
            min,
            min_inclusive,
            max,
            max_inclusive,
        } => call("ColumnRangeFilter", out, |a| {
            a.quoted(min.as_deref().unwrap_or_default());
            a.boolean(*min_inclusive);
            a.quoted(max.as_deref().unwrap_or_default());
            a.boolean(*max_inclusive);
        }),
        Filter::SingleColumnValue(t) => {
            call("SingleColumnValueFilter", out, |a| a.column_test(t));
        }
        Filter::SingleColumnValueExclude(t) => {
            call("SingleColumnValueExcludeFilter", out, |a| a.column_test(t));
        }
        Filter::DependentColumn {
            family,
            qualifier,
            drop,
            compare,
        } => call("DependentColumnFilter", out, |a| {
            a.quoted(family);
            a.quoted(qualifier);
            a.boolean(*drop);
            if let Some((o, c)) = compare {
                a.op(*o);
                a.comparator(c);
            }
        }),
        Filter::ColumnValue {
            family,
            qualifier,
            op,
            comparator,
        } => call("ColumnValueFilter", out, |a| {
            a.quoted(family);
            a.quoted(qualifier);
            a.op(*op);
            a.comparator(comparator);
        }),
        Filter::Skip(inner) => {
            out.extend_from_slice(b"SKIP ");
            write(inner, out);
        }
        Filter::WhileMatch(inner) => {
            out.extend_from_slice(b"WHILE ");
            write(inner, out);
        }
        Filter::List(list_op, filters) => {
            let joint: &[u8] = match list_op {
                ListOp::All => b" AND ",
                ListOp::One => b" OR ",
            };
            out.push(b'(');
            for (i, f) in filters.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(joint);
                }
                write(f, out);
            }
            out.push(b')');
        }
    }
}

fn compare(name: &str, o: CompareOp, c: &Comparator, out: &mut Vec<u8>) {
    call(name, out, |a| {
        a.op(o);
        a.comparator(c);
    });
}
