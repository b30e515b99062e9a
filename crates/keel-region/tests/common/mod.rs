//! Shared by the matcher and region tests: a strategy for cells of two rows of every type, and
//! the declarative oracle of HBase's read semantics (a put is returned iff every rule, stated
//! over whole sets of cells, holds).

use std::collections::BTreeMap;

use bytes::Bytes;
use keel_cell::{Cell, CellType};
use keel_region::matcher::{FamilyRules, ReadQuery};
use proptest::prelude::*;

/// Cells of rows r1 and r2, families f and g, qualifiers "", x and y, timestamps in `ts`, every
/// storable type (puts three times as likely), sequence ids 1–8; family markers carry the empty
/// qualifier, as HBase writes them. Values name the cell and a nonce, so equal keys can differ.
#[allow(dead_code, reason = "each test file uses the parts it needs")]
pub(crate) fn cell_strategy(ts: std::ops::Range<i64>) -> impl Strategy<Value = Cell> {
    (
        prop::sample::select(vec!["r1", "r2"]),
        prop::sample::select(vec!["f", "g"]),
        prop::sample::select(vec!["", "x", "y"]),
        ts,
        prop::sample::select(vec![
            CellType::Put,
            CellType::Put,
            CellType::Put,
            CellType::Delete,
            CellType::DeleteColumn,
            CellType::DeleteFamily,
            CellType::DeleteFamilyVersion,
        ]),
        1u64..9,
        0u32..1000,
    )
        .prop_map(|(row, family, qualifier, ts, ty, seq, n)| {
            let qualifier = match ty {
                CellType::DeleteFamily | CellType::DeleteFamilyVersion => "",
                _ => qualifier,
            };
            Cell::builder(row, family)
                .qualifier(qualifier)
                .timestamp(ts)
                .cell_type(ty)
                .sequence_id(seq)
                .value(format!("{row}/{family}:{qualifier}@{ts}#{seq}/{n}"))
                .build()
                .expect("cell")
        })
}

/// The oracle: a put is returned iff every rule, stated over sets, holds.
pub(crate) fn oracle(cells: &[Cell], q: &ReadQuery, rules: &FamilyRules) -> Vec<Cell> {
    let visible: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.sequence_id() <= q.read_point)
        .collect();
    let same_group = |a: &Cell, b: &Cell| a.row() == b.row() && a.family() == b.family();
    let masked = |p: &Cell| {
        visible.iter().any(|m| {
            same_group(m, p)
                && m.timestamp() >= q.time_range.min
                && match m.cell_type() {
                    CellType::DeleteFamily => p.timestamp() <= m.timestamp(),
                    CellType::DeleteFamilyVersion => p.timestamp() == m.timestamp(),
                    CellType::DeleteColumn => {
                        m.qualifier() == p.qualifier() && p.timestamp() <= m.timestamp()
                    }
                    CellType::Delete => {
                        m.qualifier() == p.qualifier() && p.timestamp() == m.timestamp()
                    }
                    _ => false,
                }
        })
    };
    let wanted = |p: &Cell| match &q.columns {
        None => true,
        Some(cols) => cols.iter().any(|(f, qual)| {
            f == p.family() && qual.as_ref().is_none_or(|qual| qual == p.qualifier())
        }),
    };
    // Candidate versions: visible, unmasked, in range puts; per column and timestamp, the one
    // with the highest sequence id.
    let mut winners: BTreeMap<(Bytes, Bytes, Bytes, i64), &Cell> = BTreeMap::new();
    for p in &visible {
        if p.cell_type() != CellType::Put || masked(p) || !q.time_range.contains(p.timestamp()) {
            continue;
        }
        let key = (
            p.row_bytes(),
            p.family_bytes(),
            p.qualifier_bytes(),
            p.timestamp(),
        );
        let better = winners
            .get(&key)
            .is_none_or(|w| p.sequence_id() > w.sequence_id());
        if better {
            winners.insert(key, p);
        }
    }
    let max = q.max_versions.min(rules.max_versions);
    let mut out: Vec<Cell> = winners
        .iter()
        .filter(|((row, family, qualifier, ts), p)| {
            let rank = winners
                .keys()
                .filter(|(r, f, ql, t)| r == row && f == family && ql == qualifier && t >= ts)
                .count() as u32;
            let expired = rules.ttl_ms.is_some_and(|ttl| *ts < q.now_ms - ttl);
            wanted(p) && rank <= max && (!expired || rank <= rules.min_versions)
        })
        .map(|(_, p)| (*p).clone())
        .collect();
    out.sort_by(|a, b| a.key().cmp(b.key()));
    out
}
