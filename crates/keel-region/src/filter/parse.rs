//! HBase's filter language (`ParseFilter`), read into a [`Filter`].
//!
//! ```text
//! expression := or
//! or         := and ( "OR" and )*            a run of ORs is one MUST_PASS_ONE list
//! and        := unary ( "AND" unary )*       a run of ANDs is one MUST_PASS_ALL list
//! unary      := "SKIP" unary | "WHILE" unary | "(" expression ")" | simple
//! simple     := Name "(" arguments ")"
//! ```
//! Keywords are upper case; `AND` and `OR` stand between spaces or parentheses, `SKIP` and
//! `WHILE` before a space or parenthesis. Arguments are separated by commas or spaces: quoted
//! strings (`'it''s'`: a doubled quote is a quote), integers, `true`/`false` (any case) and the
//! operators `<`, `<=`, `=`, `!=`, `>=`, `>`. A comparator is a quoted `'type:operand'` with
//! type `binary`, `binaryprefix`, `regexstring` or `substring` (the last two only with `=` and
//! `!=`). Errors give the byte where the string went wrong and HBase's wording.

use bytes::Bytes;

use super::{ColumnTest, Comparator, CompareOp, Filter, FilterError, ListOp};

/// How deep parentheses and SKIP/WHILE may nest (a string is a client's: no stack overflow).
const MAX_DEPTH: usize = 64;

pub(super) fn parse(text: &[u8]) -> Result<Filter, FilterError> {
    let mut parser = Parser {
        text,
        pos: 0,
        depth: 0,
    };
    parser.skip_space();
    if parser.pos == text.len() {
        return Err(parser.error("Incorrect Filter String: the filter string is empty"));
    }
    let filter = parser.or()?;
    parser.skip_space();
    match parser.peek() {
        None => Ok(filter),
        Some(b')') => Err(parser.error("Mismatched parenthesis")),
        Some(_) => Err(parser.error("Incorrect Filter String: expected AND, OR or the end")),
    }
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
    depth: usize,
}

/// One argument as written, and where.
#[derive(Debug)]
struct Placed {
    arg: Arg,
    at: usize,
}

/// One argument as written.
#[derive(Debug)]
enum Arg {
    /// `'…'`, unquoted.
    Quoted(Bytes),
    /// Anything else, as written.
    Bare(String),
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> FilterError {
        self.error_at(self.pos, message)
    }

    fn error_at(&self, position: usize, message: impl Into<String>) -> FilterError {
        FilterError::Syntax {
            position,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.pos += 1;
        }
    }

    /// Consumes `word` if it stands here as a keyword: after a space, a parenthesis or the
    /// start (`binary`: AND and OR need something before them), before a space or `(`.
    fn keyword(&mut self, word: &[u8], binary: bool) -> bool {
        self.skip_space();
        let start = self.pos;
        if !self.text[start..].starts_with(word) {
            return false;
        }
        let before_ok = match start.checked_sub(1).map(|i| self.text[i]) {
            None => !binary,
            Some(b) => matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b')' | b'('),
        };
        let after_ok = matches!(
            self.text.get(start + word.len()),
            Some(b' ' | b'\t' | b'\r' | b'\n' | b'(')
        );
        if before_ok && after_ok {
            self.pos = start + word.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Filter, FilterError> {
        let mut items = vec![self.and()?];
        while self.keyword(b"OR", true) {
            items.push(self.and()?);
        }
        Ok(list(ListOp::One, items))
    }

    fn and(&mut self) -> Result<Filter, FilterError> {
        let mut items = vec![self.unary()?];
        while self.keyword(b"AND", true) {
            items.push(self.unary()?);
        }
        Ok(list(ListOp::All, items))
    }

    fn unary(&mut self) -> Result<Filter, FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(format!("nested deeper than {MAX_DEPTH}")));
        }
        let result = self.unary_inner();
        self.depth -= 1;
        result
    }

    fn unary_inner(&mut self) -> Result<Filter, FilterError> {
        self.skip_space();
        if self.keyword(b"SKIP", false) {
            return Ok(Filter::Skip(Box::new(self.unary()?)));
        }
        if self.keyword(b"WHILE", false) {
            return Ok(Filter::WhileMatch(Box::new(self.unary()?)));
        }
        match self.peek() {
            None => Err(self.error("Incorrect Filter String: a filter is missing at the end")),
            Some(b'(') => {
                let open = self.pos;
                self.pos += 1;
                let inner = self.or()?;
                self.skip_space();
                if self.peek() != Some(b')') {
                    return Err(self.error_at(open, "Mismatched parenthesis"));
                }
                self.pos += 1;
                Ok(inner)
            }
            Some(b')') => Err(self.error("Mismatched parenthesis")),
            Some(_) => self.simple(),
        }
    }

    /// `Name(arguments)`.
    fn simple(&mut self) -> Result<Filter, FilterError> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| !matches!(b, b'(' | b' ' | b'\t' | b'\r' | b'\n' | b')' | b'\''))
        {
            self.pos += 1;
        }
        let name = String::from_utf8_lossy(&self.text[start..self.pos]).into_owned();
        self.skip_space();
        if self.peek() != Some(b'(') {
            return Err(self.error(format!(
                "Incorrect Filter String: expected '(' after the filter name {name:?}"
            )));
        }
        self.pos += 1;
        let args = self.arguments()?;
        let mut a = Args {
            name: &name,
            args,
            next: 0,
            at: start,
        };
        // An argument's own error points at it; a wrong count or name at the filter's name.
        build(&mut a).map_err(|message| self.error_at(a.at, message))
    }

    /// Arguments up to and including the closing `)`.
    fn arguments(&mut self) -> Result<Vec<Placed>, FilterError> {
        let mut args = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                None => return Err(self.error("Mismatched parenthesis: the arguments never end")),
                Some(b')') => {
                    self.pos += 1;
                    return Ok(args);
                }
                Some(b',') if !args.is_empty() => {
                    self.pos += 1;
                    continue;
                }
                Some(b',') => return Err(self.error("Incorrect argument list: an empty argument")),
                Some(b'\'') => {
                    let at = self.pos;
                    args.push(Placed {
                        arg: Arg::Quoted(self.quoted()?),
                        at,
                    });
                }
                Some(_) => {
                    let start = self.pos;
                    while self.peek().is_some_and(|b| {
                        !matches!(b, b',' | b')' | b' ' | b'\t' | b'\r' | b'\n' | b'\'')
                    }) {
                        self.pos += 1;
                    }
                    args.push(Placed {
                        arg: Arg::Bare(
                            String::from_utf8_lossy(&self.text[start..self.pos]).into_owned(),
                        ),
                        at: start,
                    });
                }
            }
        }
    }

    /// `'…'` with `''` for a quote.
    fn quoted(&mut self) -> Result<Bytes, FilterError> {
        let open = self.pos;
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(self.error_at(open, "a quoted argument never ends")),
                Some(b'\'') if self.text.get(self.pos + 1) == Some(&b'\'') => {
                    out.push(b'\'');
                    self.pos += 2;
                }
                Some(b'\'') => {
                    self.pos += 1;
                    return Ok(Bytes::from(out));
                }
                Some(b) => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
    }
}

fn list(op: ListOp, mut items: Vec<Filter>) -> Filter {
    if items.len() == 1 {
        items.pop().expect("one item")
    } else {
        Filter::List(op, items)
    }
}

/// The filter `name` from its arguments (HBase's `createFilterFromArguments`), or HBase's
/// complaint about them.
fn build(a: &mut Args<'_>) -> Result<Filter, String> {
    let name = a.name;
    let filter = match name {
        "KeyOnlyFilter" => {
            a.arity(&[0, 1])?;
            Filter::KeyOnly {
                len_as_value: if a.len() == 1 { a.boolean()? } else { false },
            }
        }
        "FirstKeyOnlyFilter" => {
            a.arity(&[0])?;
            Filter::FirstKeyOnly
        }
        "PrefixFilter" => {
            a.arity(&[1])?;
            Filter::Prefix(a.quoted()?)
        }
        "ColumnPrefixFilter" => {
            a.arity(&[1])?;
            Filter::ColumnPrefix(a.quoted()?)
        }
        "MultipleColumnPrefixFilter" => {
            let mut prefixes = Vec::with_capacity(a.len());
            for _ in 0..a.len() {
                prefixes.push(a.quoted()?);
            }
            Filter::MultipleColumnPrefix(prefixes)
        }
        "ColumnCountGetFilter" => {
            a.arity(&[1])?;
            Filter::ColumnCountGet(a.non_negative_int("limit")?)
        }
        "PageFilter" => {
            a.arity(&[1])?;
            let size = a.long()?;
            Filter::Page(u64::try_from(size).map_err(|_| "page size must be positive".to_string())?)
        }
        "ColumnPaginationFilter" => {
            a.arity(&[2])?;
            Filter::ColumnPagination {
                limit: a.non_negative_int("limit")?,
                offset: a.non_negative_int("offset")?,
            }
        }
        "InclusiveStopFilter" => {
            a.arity(&[1])?;
            Filter::InclusiveStop(a.quoted()?)
        }
        "TimestampsFilter" => {
            let mut timestamps = Vec::with_capacity(a.len());
            for _ in 0..a.len() {
                let ts = a.long()?;
                if ts < 0 {
                    return Err(format!("Timestamps must not be negative: {ts}"));
                }
                timestamps.push(ts);
            }
            Filter::Timestamps {
                timestamps,
                can_hint: false,
            }
        }
        "RowFilter" | "FamilyFilter" | "QualifierFilter" | "ValueFilter" => {
            a.arity(&[2])?;
            let (op, comparator) = a.op_and_comparator(true)?;
            match name {
                "RowFilter" => Filter::Row(op, comparator),
                "FamilyFilter" => Filter::Family(op, comparator),
                "QualifierFilter" => Filter::Qualifier(op, comparator),
                _ => Filter::Value(op, comparator),
            }
        }
        "ColumnRangeFilter" => {
            a.arity(&[4])?;
            let min = a.quoted()?;
            let min_inclusive = a.boolean()?;
            let max = a.quoted()?;
            let max_inclusive = a.boolean()?;
            Filter::ColumnRange {
                min: (!min.is_empty()).then_some(min),
                min_inclusive,
                max: (!max.is_empty()).then_some(max),
                max_inclusive,
            }
        }
        "SingleColumnValueFilter" | "SingleColumnValueExcludeFilter" => {
            a.arity(&[4, 6])?;
            let family = a.quoted()?;
            let qualifier = a.quoted()?;
            let (op, comparator) = a.op_and_comparator(true)?;
            let (filter_if_missing, latest_only) = if a.len() == 6 {
                (a.boolean()?, a.boolean()?)
            } else {
                (false, true)
            };
            let test = ColumnTest {
                family,
                qualifier,
                op,
                comparator,
                filter_if_missing,
                latest_only,
            };
            if name == "SingleColumnValueFilter" {
                Filter::SingleColumnValue(test)
            } else {
                Filter::SingleColumnValueExclude(test)
            }
        }
        "DependentColumnFilter" => {
            a.arity(&[2, 3, 5])?;
            let family = a.quoted()?;
            let qualifier = a.quoted()?;
            let drop = if a.len() >= 3 { a.boolean()? } else { false };
            // HBase checks the regex/substring operators everywhere but here.
            let compare = if a.len() == 5 {
                Some(a.op_and_comparator(false)?)
            } else {
                None
            };
            Filter::DependentColumn {
                family,
                qualifier,
                drop,
                compare,
            }
        }
        "ColumnValueFilter" => {
            a.arity(&[4])?;
            let family = a.quoted()?;
            let qualifier = a.quoted()?;
            let (op, comparator) = a.op_and_comparator(true)?;
            Filter::ColumnValue {
                family,
                qualifier,
                op,
                comparator,
            }
        }
        other => return Err(format!("Filter Name {other} not supported")),
    };
    Ok(filter)
}

/// A filter's arguments, taken in order.
struct Args<'a> {
    name: &'a str,
    args: Vec<Placed>,
    next: usize,
    /// Where the argument last taken starts (at first, the filter's name).
    at: usize,
}

impl Args<'_> {
    fn len(&self) -> usize {
        self.args.len()
    }

    fn arity(&self, allowed: &[usize]) -> Result<(), String> {
        if allowed.contains(&self.args.len()) {
            Ok(())
        } else {
            let expected: Vec<String> = allowed.iter().map(usize::to_string).collect();
            Err(format!(
                "Incorrect argument list: {} expects {} argument(s) but got {}",
                self.name,
                expected.join(" or "),
                self.args.len()
            ))
        }
    }

    fn take(&mut self) -> Result<&Arg, String> {
        let placed = self.args.get(self.next).ok_or_else(|| {
            format!(
                "Incorrect argument list: {} needs more arguments",
                self.name
            )
        })?;
        self.next += 1;
        self.at = placed.at;
        Ok(&placed.arg)
    }

    fn quoted(&mut self) -> Result<Bytes, String> {
        let n = self.next + 1;
        let name = self.name;
        match self.take()? {
            Arg::Quoted(b) => Ok(b.clone()),
            Arg::Bare(s) => Err(format!(
                "{name}: argument {n} must be a quoted string, not {s}"
            )),
        }
    }

    fn bare(&mut self, what: &str) -> Result<String, String> {
        let n = self.next + 1;
        let name = self.name;
        match self.take()? {
            Arg::Bare(s) => Ok(s.clone()),
            Arg::Quoted(_) => Err(format!(
                "{name}: argument {n} must be {what}, not a quoted string"
            )),
        }
    }

    fn long(&mut self) -> Result<i64, String> {
        let s = self.bare("an integer")?;
        s.parse::<i64>()
            .map_err(|_| format!("{}: {s} is not a long integer", self.name))
    }

    fn non_negative_int(&mut self, what: &str) -> Result<u32, String> {
        let s = self.bare("an integer")?;
        let n: i32 = s
            .parse()
            .map_err(|_| format!("{}: {s} is not an integer", self.name))?;
        u32::try_from(n).map_err(|_| format!("{}: {what} must be positive: {n}", self.name))
    }

    fn boolean(&mut self) -> Result<bool, String> {
        let s = self.bare("true or false")?;
        match s.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("Incorrect Boolean Expression: {s}")),
        }
    }

    fn op(&mut self) -> Result<CompareOp, String> {
        let s = self.bare("a compare operator")?;
        Ok(match s.as_str() {
            "<" => CompareOp::Less,
            "<=" => CompareOp::LessOrEqual,
            "=" => CompareOp::Equal,
            "!=" => CompareOp::NotEqual,
            ">=" => CompareOp::GreaterOrEqual,
            ">" => CompareOp::Greater,
            _ => return Err(format!("Invalid compare operator {s:?}")),
        })
    }

    fn comparator(&mut self) -> Result<Comparator, String> {
        let text = self.quoted()?;
        let Some(colon) = text.iter().position(|&b| b == b':') else {
            return Err(format!(
                "Incorrect comparator: {:?} has no type (binary:, binaryprefix:, regexstring:, substring:)",
                String::from_utf8_lossy(&text)
            ));
        };
        let operand = text.slice(colon + 1..);
        match &text[..colon] {
            b"binary" => Ok(Comparator::Binary(operand)),
            b"binaryprefix" => Ok(Comparator::BinaryPrefix(operand)),
            b"regexstring" => {
                Comparator::regex(&String::from_utf8_lossy(&operand)).map_err(|e| e.to_string())
            }
            b"substring" => Ok(Comparator::substring(&String::from_utf8_lossy(&operand))),
            other => Err(format!(
                "Incorrect comparatorType {:?}",
                String::from_utf8_lossy(other)
            )),
        }
    }

    fn op_and_comparator(&mut self, check: bool) -> Result<(CompareOp, Comparator), String> {
        let op = self.op()?;
        let comparator = self.comparator()?;
        if check
            && comparator.is_equality_only()
            && !matches!(op, CompareOp::Equal | CompareOp::NotEqual)
        {
            return Err(format!(
                "{}: a {} comparator takes only = or !=",
                self.name,
                comparator.type_name()
            ));
        }
        Ok((op, comparator))
    }
}
