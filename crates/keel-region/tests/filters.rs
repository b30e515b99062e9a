//! HBase's filters and filter language, case by case. Each expectation is derived from the
//! Apache HBase class named beside it (`hbase-client/.../filter/<Class>.java`, 2.x and master):
//! what its `filterRowKey` / `filterCell` / `filterRow` return and how the region scanner applies
//! that, not from Keel's scanner.

use bytes::Bytes;
use keel_cell::Cell;
use keel_region::filter::ColumnTest;
use keel_region::matcher::ReadQuery;
use keel_region::{
    Comparator, CompareOp, Durability, Engine, EngineOptions, FamilyOptions, Filter, FilterError,
    ListOp, Scan, Table,
};

/// A table `t` with families `cf` and `g` (3 versions each) holding `cells`
/// (row, "family:qualifier", timestamp, value).
fn table(cells: &[(&str, &str, i64, &str)]) -> (tempfile::TempDir, Engine, Table) {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Engine::open(dir.path(), EngineOptions::default()).expect("open");
    let families = ["cf", "g"]
        .into_iter()
        .map(|name| {
            let mut f = FamilyOptions::new(name);
            f.rules.max_versions = 3;
            f
        })
        .collect();
    let t = server.create_table("t", families).expect("create");
    let cells: Vec<Cell> = cells
        .iter()
        .map(|(row, column, ts, value)| {
            let (family, qualifier) = column.split_once(':').expect("family:qualifier");
            Cell::put(
                Bytes::copy_from_slice(row.as_bytes()),
                Bytes::copy_from_slice(family.as_bytes()),
                Bytes::copy_from_slice(qualifier.as_bytes()),
                *ts,
                Bytes::copy_from_slice(value.as_bytes()),
            )
            .expect("cell")
        })
        .collect();
    t.mutate(cells, Durability::SkipWal).expect("write");
    (dir, server, t)
}

/// Rows of `row family:qualifier=value` lines, as a scan with `filter` returns them.
fn scan_with(t: &Table, filter: &str, reversed: bool, versions: u32) -> Vec<String> {
    let filter = Filter::parse(filter.as_bytes()).expect("parses");
    let scan = Scan {
        filter: Some(filter),
        reversed,
        query: ReadQuery {
            max_versions: versions,
            ..ReadQuery::latest(0, i64::MAX / 2)
        },
        ..Scan::all(i64::MAX / 2)
    };
    t.scan(&scan)
        .expect("scan")
        .into_iter()
        .map(|row| {
            let mut line = String::from_utf8_lossy(row[0].row()).into_owned();
            for c in &row {
                line.push_str(&format!(
                    " {}:{}={}",
                    String::from_utf8_lossy(c.family()),
                    String::from_utf8_lossy(c.qualifier()),
                    String::from_utf8_lossy(c.value())
                ));
            }
            line
        })
        .collect()
}

fn scan(t: &Table, filter: &str) -> Vec<String> {
    scan_with(t, filter, false, 1)
}

fn rows(t: &Table, filter: &str) -> Vec<String> {
    scan(t, filter)
        .into_iter()
        .map(|line| line.split(' ').next().unwrap_or_default().to_string())
        .collect()
}

const WIDE: &[(&str, &str, i64, &str)] = &[
    ("r1", "cf:a", 1, "1"),
    ("r1", "cf:b", 1, "2"),
    ("r1", "cf:c", 1, "3"),
    ("r1", "cf:d", 1, "4"),
    ("r2", "cf:a", 1, "5"),
    ("r2", "cf:b", 1, "6"),
    ("r3", "cf:b", 1, "7"),
    ("r3", "g:a", 1, "8"),
];

#[test]
fn counting_rows_first_key_only_and_key_only() {
    // FirstKeyOnlyFilter: INCLUDE for the first cell, NEXT_ROW after; KeyOnlyFilter's
    // transformCell empties the value. The happybase idiom for counting rows.
    let (_d, _s, t) = table(WIDE);
    assert_eq!(
        scan(&t, "FirstKeyOnlyFilter() AND KeyOnlyFilter()"),
        ["r1 cf:a=", "r2 cf:a=", "r3 cf:b="]
    );
    // KeyOnlyFilter(true): the value's length as a 4-byte big-endian int.
    let rows = t
        .scan(&Scan {
            filter: Some(Filter::parse(b"KeyOnlyFilter(true)").expect("parses")),
            ..Scan::all(i64::MAX / 2)
        })
        .expect("scan");
    assert_eq!(rows[0][0].value(), &[0, 0, 0, 1]);
}

#[test]
fn first_key_only_leaves_the_row_early_only_where_the_row_would_end_anyway() {
    // The scanner leaves a row right after FirstKeyOnlyFilter's cell when the filter's answer to
    // the rest of the row is certain to be NEXT_ROW (`drops_rest_of_row`). That holds alone and
    // as an AND list's first filter; the answers below are HBase's either way.
    let (_d, _s, t) = table(WIDE);
    // Alone: the flag spans families (r3's g:a is dropped too).
    assert_eq!(
        scan(&t, "FirstKeyOnlyFilter()"),
        ["r1 cf:a=1", "r2 cf:a=5", "r3 cf:b=7"]
    );
    // OR: the other filter still sees the rest of the row and keeps what it passes.
    assert_eq!(
        scan(&t, "FirstKeyOnlyFilter() OR ColumnPrefixFilter('c')"),
        ["r1 cf:a=1 cf:c=3", "r2 cf:a=5", "r3 cf:b=7"]
    );
    // AND with FirstKeyOnlyFilter second: its first cell is the first the other passes.
    assert_eq!(
        scan(&t, "ValueFilter(!=, 'binary:1') AND FirstKeyOnlyFilter()"),
        ["r1 cf:b=2", "r2 cf:a=5", "r3 cf:b=7"]
    );
    // Reversed, a row at a time from its end: the same first cells.
    assert_eq!(
        scan_with(&t, "FirstKeyOnlyFilter() AND KeyOnlyFilter()", true, 1),
        ["r3 cf:b=", "r2 cf:a=", "r1 cf:a="]
    );
}

#[test]
fn prefix_filter_seeks_to_its_rows_and_ends_the_scan_after_them() {
    // PrefixFilter: rows starting with the prefix; past them filterAllRemaining is true.
    let mut cells = Vec::new();
    let names: Vec<String> = (0..300).map(|i| format!("k{i:03}")).collect();
    for name in &names {
        cells.push((name.as_str(), "cf:a", 1, "v"));
    }
    let (_d, _s, t) = table(&cells);
    assert_eq!(
        rows(&t, "PrefixFilter ('k15')"),
        (150..160).map(|i| format!("k{i:03}")).collect::<Vec<_>>()
    );
    // Reversed, the same rows newest-last-first.
    let reversed: Vec<String> = scan_with(&t, "PrefixFilter('k15')", true, 1)
        .into_iter()
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        reversed,
        (150..160)
            .rev()
            .map(|i| format!("k{i:03}"))
            .collect::<Vec<_>>()
    );
    // It seeks: the scan reads the first row, the ten rows and the one after them — not the
    // 150 rows before.
    let mut scanner = t
        .region()
        .scanner(&Scan {
            filter: Some(Filter::Prefix(Bytes::from_static(b"k15"))),
            ..Scan::all(i64::MAX / 2)
        })
        .expect("scanner");
    assert_eq!(scanner.by_ref().count(), 10);
    assert!(scanner.cells_read() <= 12, "{}", scanner.cells_read());

    // A row with the prefix skips the per-cell filter calls (`passes_rest_of_row`), alone and
    // in a list whose every filter passes the row; a list with one that does not still decides
    // each cell.
    let (_d, _s, t) = table(WIDE);
    assert_eq!(scan(&t, "PrefixFilter('r2')"), ["r2 cf:a=5 cf:b=6"]);
    assert_eq!(
        scan(&t, "PrefixFilter('r') AND PrefixFilter('r2')"),
        ["r2 cf:a=5 cf:b=6"]
    );
    assert_eq!(
        scan(&t, "PrefixFilter('r2') AND ValueFilter(=, 'binary:6')"),
        ["r2 cf:b=6"]
    );
    assert_eq!(
        scan(&t, "PrefixFilter('r2') OR ValueFilter(=, 'binary:1')"),
        ["r1 cf:a=1", "r2 cf:a=5 cf:b=6"]
    );
    assert_eq!(
        scan(&t, "PrefixFilter('r1') OR PrefixFilter('r2')"),
        ["r1 cf:a=1 cf:b=2 cf:c=3 cf:d=4", "r2 cf:a=5 cf:b=6"]
    );
}

#[test]
fn page_filter_and_while_and_skip() {
    let (_d, _s, t) = table(WIDE);
    // PageFilter: filterRow counts the rows reaching it; past the page size, filterAllRemaining.
    assert_eq!(rows(&t, "PageFilter(2)"), ["r1", "r2"]);
    assert!(rows(&t, "PageFilter(0)").is_empty());
    // WhileMatchFilter: the first cell its filter does not INCLUDE ends the scan.
    assert_eq!(rows(&t, "WHILE RowFilter(!=, 'binary:r2')"), ["r1"]);
    // SkipFilter: a row is dropped if any cell was not INCLUDEd by its filter.
    assert_eq!(rows(&t, "SKIP ValueFilter(!=, 'binary:3')"), ["r2", "r3"]);
}

#[test]
fn compare_filters_read_cell_op_operand() {
    // CompareFilter.compareRow: the comparator's compareTo(cell) decides, so `<` keeps cells
    // sorting before the operand (the example in the reference: a, lzz, l\xff pass; m, ma, n
    // do not).
    let cells: Vec<(&str, &str, i64, &str)> = ["a", "lzz", "m", "ma", "n"]
        .into_iter()
        .map(|r| (r, "cf:a", 1, "v"))
        .collect();
    let (_d, _s, t) = table(&cells);
    assert_eq!(rows(&t, "RowFilter(<, 'binary:m')"), ["a", "lzz"]);
    assert_eq!(rows(&t, "RowFilter(<=, 'binary:m')"), ["a", "lzz", "m"]);
    assert_eq!(rows(&t, "RowFilter(>, 'binary:m')"), ["ma", "n"]);
    // BinaryPrefixComparator: compares the operand with the cell's first |operand| bytes.
    assert_eq!(rows(&t, "RowFilter(=, 'binaryprefix:m')"), ["m", "ma"]);
    // RegexStringComparator: find(), not matches(); DOTALL.
    assert_eq!(rows(&t, "RowFilter(=, 'regexstring:a$')"), ["a", "ma"]);
    assert_eq!(
        rows(&t, "RowFilter(!=, 'regexstring:z')"),
        ["a", "m", "ma", "n"]
    );
}

#[test]
fn substring_comparator_folds_case_on_both_sides() {
    // SubstringComparator: the operand is lower-cased when built, each value when compared.
    let (_d, _s, t) = table(&[
        ("r1", "cf:a", 1, "Hello World"),
        ("r2", "cf:a", 1, "goodbye"),
        ("r3", "cf:a", 1, "a, b"),
    ]);
    assert_eq!(rows(&t, "ValueFilter(=, 'substring:WORLD')"), ["r1"]);
    assert_eq!(rows(&t, "ValueFilter(!=, 'substring:WORLD')"), ["r2", "r3"]);
    // A comma inside a quoted operand is part of it (the old parser split on it).
    assert_eq!(
        rows(&t, "SingleColumnValueFilter('cf', 'a', =, 'binary:a, b')"),
        ["r3"]
    );
}

#[test]
fn column_filters() {
    let (_d, _s, t) = table(WIDE);
    // ColumnPrefixFilter: qualifier before the prefix → hint; after → NEXT_ROW (this family).
    assert_eq!(
        scan(&t, "ColumnPrefixFilter('b')"),
        ["r1 cf:b=2", "r2 cf:b=6", "r3 cf:b=7"]
    );
    // MultipleColumnPrefixFilter: any prefix.
    assert_eq!(
        scan(&t, "MultipleColumnPrefixFilter('a', 'c')"),
        ["r1 cf:a=1 cf:c=3", "r2 cf:a=5", "r3 g:a=8"]
    );
    // ColumnRangeFilter: [b, d).
    assert_eq!(
        scan(&t, "ColumnRangeFilter('b', true, 'd', false)"),
        ["r1 cf:b=2 cf:c=3", "r2 cf:b=6", "r3 cf:b=7"]
    );
    // An empty bound is no bound; an exclusive lower bound skips the column itself.
    assert_eq!(
        scan(&t, "ColumnRangeFilter('c', false, '', true)"),
        ["r1 cf:d=4"]
    );
    // QualifierFilter and FamilyFilter.
    assert_eq!(
        scan(&t, "QualifierFilter(>=, 'binary:c')"),
        ["r1 cf:c=3 cf:d=4"]
    );
    assert_eq!(scan(&t, "FamilyFilter(=, 'binary:g')"), ["r3 g:a=8"]);
    // ColumnPaginationFilter(limit, offset): per row, columns offset..offset+limit.
    assert_eq!(
        scan(&t, "ColumnPaginationFilter(2, 1)"),
        ["r1 cf:b=2 cf:c=3", "r2 cf:b=6", "r3 g:a=8"]
    );
}

#[test]
fn column_count_get_ends_the_scan_at_the_first_wider_row() {
    // ColumnCountGetFilter: count > limit makes filterAllRemaining true: r1 has four columns,
    // so the scan returns r1's first two and ends.
    let (_d, _s, t) = table(WIDE);
    assert_eq!(scan(&t, "ColumnCountGetFilter(2)"), ["r1 cf:a=1 cf:b=2"]);
    // With a limit no row passes, every row is whole.
    assert_eq!(rows(&t, "ColumnCountGetFilter(4)"), ["r1", "r2", "r3"]);
}

#[test]
fn inclusive_stop_and_timestamps() {
    let (_d, _s, t) = table(&[
        ("r1", "cf:a", 5, "a5"),
        ("r1", "cf:a", 7, "a7"),
        ("r1", "cf:a", 9, "a9"),
        ("r2", "cf:a", 5, "b5"),
        ("r3", "cf:a", 1, "c1"),
    ]);
    // InclusiveStopFilter: rows up to and including the stop row; reversed, down to it.
    assert_eq!(rows(&t, "InclusiveStopFilter('r2')"), ["r1", "r2"]);
    let reversed: Vec<String> = scan_with(&t, "InclusiveStopFilter('r2')", true, 1)
        .into_iter()
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(reversed, ["r3", "r2"]);
    // TimestampsFilter sees only the versions the read counts: with one version, r1's newest
    // (9) is the one it sees, and it is not listed, so r1 has nothing.
    assert_eq!(scan(&t, "TimestampsFilter(5, 7)"), ["r2 cf:a=b5"]);
    assert_eq!(
        scan_with(&t, "TimestampsFilter(5, 7)", false, 3),
        ["r1 cf:a=a7 cf:a=a5", "r2 cf:a=b5"]
    );
}

#[test]
fn single_column_value_filters() {
    let (_d, _s, t) = table(&[
        ("r1", "cf:a", 2, "yes"),
        ("r1", "cf:a", 1, "no"),
        ("r1", "cf:b", 1, "x"),
        ("r2", "cf:a", 2, "no"),
        ("r2", "cf:a", 1, "yes"),
        ("r2", "cf:b", 1, "y"),
        ("r3", "cf:b", 1, "z"),
    ]);
    // SingleColumnValueFilter: by the latest version; a row without the column is kept unless
    // filterIfMissing.
    assert_eq!(
        rows(&t, "SingleColumnValueFilter('cf', 'a', =, 'binary:yes')"),
        ["r1", "r3"]
    );
    assert_eq!(
        rows(
            &t,
            "SingleColumnValueFilter('cf', 'a', =, 'binary:yes', true, true)"
        ),
        ["r1"]
    );
    // latestOnly false: any version that passes keeps the row (the read must return them).
    assert_eq!(
        scan_with(
            &t,
            "SingleColumnValueFilter('cf', 'a', =, 'binary:yes', true, false)",
            false,
            3
        )
        .into_iter()
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect::<Vec<_>>(),
        ["r1", "r2"]
    );
    // SingleColumnValueExcludeFilter: the same rows, without the tested column.
    assert_eq!(
        scan(
            &t,
            "SingleColumnValueExcludeFilter('cf', 'a', =, 'binary:yes')"
        ),
        ["r1 cf:b=x", "r3 cf:b=z"]
    );
    // ColumnValueFilter: only the matching cells of one column.
    assert_eq!(
        scan(&t, "ColumnValueFilter('cf', 'a', =, 'binary:yes')"),
        ["r1 cf:a=yes"]
    );
}

#[test]
fn dependent_column_filter() {
    // DependentColumnFilter: cells whose timestamp matches a version of the reference column.
    let (_d, _s, t) = table(&[
        ("r1", "cf:ref", 5, "on"),
        ("r1", "cf:x", 5, "kept"),
        ("r1", "cf:y", 6, "dropped"),
        ("r2", "cf:x", 5, "no reference"),
    ]);
    assert_eq!(
        scan(&t, "DependentColumnFilter('cf', 'ref')"),
        ["r1 cf:ref=on cf:x=kept"]
    );
    assert_eq!(
        scan(&t, "DependentColumnFilter('cf', 'ref', true)"),
        ["r1 cf:x=kept"]
    );
    assert!(
        scan(
            &t,
            "DependentColumnFilter('cf', 'ref', false, =, 'binary:off')"
        )
        .is_empty()
    );
}

#[test]
fn lists_combine_by_and_and_or() {
    let (_d, _s, t) = table(WIDE);
    // FilterListWithOR: a cell passes if any filter passes it.
    assert_eq!(
        rows(&t, "RowFilter(=, 'binary:r1') OR RowFilter(=, 'binary:r3')"),
        ["r1", "r3"]
    );
    // FilterListWithAND: every filter.
    assert_eq!(
        scan(&t, "ColumnPrefixFilter('b') AND ValueFilter(>, 'binary:5')"),
        ["r2 cf:b=6", "r3 cf:b=7"]
    );
    // OR with a hinting filter: ColumnPrefixFilter's hint merged with an include is an include.
    assert_eq!(
        scan(&t, "ColumnPrefixFilter('d') OR ValueFilter(=, 'binary:5')"),
        ["r1 cf:d=4", "r2 cf:a=5"]
    );
}

#[test]
fn the_language_parses_as_hbase_does() {
    let p = |s: &str| Filter::parse(s.as_bytes()).expect(s);
    let prefix = |s: &str| Filter::Prefix(Bytes::copy_from_slice(s.as_bytes()));
    // ParseFilter precedence: SKIP/WHILE, then AND, then OR; a run of one operator is one list.
    assert_eq!(
        p("PrefixFilter('a') AND PrefixFilter('b') OR PrefixFilter('c')"),
        Filter::List(
            ListOp::One,
            vec![
                Filter::List(ListOp::All, vec![prefix("a"), prefix("b")]),
                prefix("c")
            ]
        )
    );
    assert_eq!(
        p("SKIP PrefixFilter('a') AND (PrefixFilter('b') OR PrefixFilter('c'))"),
        Filter::List(
            ListOp::All,
            vec![
                Filter::Skip(Box::new(prefix("a"))),
                Filter::List(ListOp::One, vec![prefix("b"), prefix("c")])
            ]
        )
    );
    // A doubled quote is a quote; arguments may be separated by commas or spaces.
    assert_eq!(p("PrefixFilter('it''s')"), prefix("it's"));
    assert_eq!(
        p("ColumnPaginationFilter (2 1)"),
        Filter::ColumnPagination {
            limit: 2,
            offset: 1
        }
    );
    // Booleans in any case; the 4-argument SingleColumnValueFilter has HBase's defaults.
    assert_eq!(
        p("SingleColumnValueFilter('f', 'q', >=, 'binary:1', TRUE, False)"),
        Filter::SingleColumnValue(ColumnTest {
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::from_static(b"q"),
            op: CompareOp::GreaterOrEqual,
            comparator: Comparator::Binary(Bytes::from_static(b"1")),
            filter_if_missing: true,
            latest_only: false,
        })
    );
    assert_eq!(
        p("ColumnRangeFilter('', false, 'z', true)"),
        Filter::ColumnRange {
            min: None,
            min_inclusive: false,
            max: Some(Bytes::from_static(b"z")),
            max_inclusive: true
        }
    );
    // What Filter prints, the parser reads back.
    let f = p("WHILE (RowFilter(!=, 'regexstring:a.b') OR KeyOnlyFilter(true)) AND PageFilter(10)");
    assert_eq!(p(&f.to_string()), f);
}

#[test]
fn errors_name_the_place_and_the_problem() {
    let err = |s: &str| match Filter::parse(s.as_bytes()) {
        Err(FilterError::Syntax { position, message }) => (position, message),
        other => panic!("{s}: {other:?}"),
    };
    let (at, message) = err("PrefixFilter('a') and KeyOnlyFilter()");
    assert_eq!(at, 18, "{message}"); // keywords are upper case
    let (at, message) = err("(PrefixFilter('a')");
    assert_eq!((at, message.as_str()), (0, "Mismatched parenthesis"));
    let (at, message) = err("NoSuchFilter('a')");
    assert_eq!(
        (at, message.as_str()),
        (0, "Filter Name NoSuchFilter not supported")
    );
    let (at, message) = err("KeyOnlyFilter() AND RowFilter(<, 'substring:a')");
    assert_eq!(at, 33, "{message}"); // substring takes only = and !=: at the comparator
    let (at, message) = err("RowFilter(=~, 'binary:a')");
    assert_eq!(at, 10, "{message}");
    assert!(message.contains("Invalid compare operator"), "{message}");
    let (at, message) = err("PageFilter('5')");
    assert_eq!(at, 11, "{message}");
    let (_, message) = err("PrefixFilter()");
    assert!(message.contains("expects 1"), "{message}");
    let (_, message) = err("ValueFilter(=, 'text:a')");
    assert!(message.contains("Incorrect comparatorType"), "{message}");
    let (_, message) = err("   ");
    assert!(message.contains("empty"), "{message}");
    // Nesting is bounded: a hostile string is an error, not a stack overflow.
    let deep = format!(
        "{}KeyOnlyFilter(){}",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    assert!(Filter::parse(deep.as_bytes()).is_err());
    // A pattern Rust's linear-time engine cannot run is refused with the engine's reason.
    assert!(matches!(
        Filter::parse(b"RowFilter(=, 'regexstring:(a)\\1')"),
        Err(FilterError::Syntax { .. })
    ));
}

#[test]
fn a_filter_step_never_skips_a_family_delete_marker() {
    // A family delete marker has the empty qualifier and sorts after that column's newer puts;
    // a filter that skips the rest of the empty-qualifier column (ColumnPrefixFilter's hint,
    // ColumnPaginationFilter's NEXT_COL) must not seek past it, or the cells it deletes in
    // later columns would come back.
    let (_d, _s, t) = table(&[("r", "cf:", 5, "kept"), ("r", "cf:x", 2, "deleted")]);
    t.mutate(
        vec![Cell::delete_family("r", "cf", 3).expect("marker")],
        Durability::SkipWal,
    )
    .expect("delete");
    for flush in [false, true] {
        if flush {
            t.flush().expect("flush");
        }
        assert!(scan(&t, "ColumnPrefixFilter('x')").is_empty());
        assert!(scan(&t, "ColumnPaginationFilter(1, 1)").is_empty());
        assert_eq!(scan(&t, "ColumnPaginationFilter(1, 0)"), ["r cf:=kept"]);
    }
}

#[test]
fn a_get_takes_a_filter_too() {
    // HBase's Get.setFilter: the same contract, on one row.
    let (_d, _s, t) = table(WIDE);
    let query = ReadQuery::latest(0, i64::MAX / 2);
    let got = t
        .region()
        .get_filtered(
            b"r1",
            &query,
            &Filter::parse(b"ColumnRangeFilter('b', true, 'c', true) AND KeyOnlyFilter()")
                .expect("parses"),
        )
        .expect("get");
    let shown: Vec<(Bytes, Bytes)> = got
        .iter()
        .map(|c| (c.qualifier_bytes(), c.value_bytes()))
        .collect();
    assert_eq!(
        shown,
        [
            (Bytes::from_static(b"b"), Bytes::new()),
            (Bytes::from_static(b"c"), Bytes::new())
        ]
    );
    // A row the filter drops is an empty get.
    assert!(
        t.region()
            .get_filtered(b"r1", &query, &Filter::Page(0))
            .expect("get")
            .is_empty()
    );
}
