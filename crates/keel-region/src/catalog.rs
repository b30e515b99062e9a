//! The server's table catalog: every table's name, durability, regions and families with
//! their options, and whether it is enabled. Persisted like the region manifest (temporary file,
//! sync, rename, directory sync, CRC-checked), so a crash leaves the old catalog or the new one:
//! it is the one commit point of every table operation (create, disable, enable, delete).
//!
//! Text: `keel-catalog 3`, `next-region <id>`, then per table `table <name> <enabled 0|1>
//! <durability>`, its regions in key order as `region <id> <start key hex or -> <end key hex
//! or ->` (contiguous: the first starts at the first row, each ends where the next starts, the
//! last at the end), and its `family <name hex> <versions> <min versions> <ttl ms or ->
//! <block size> <encoding> <compression> <bloom> <in-memory 0|1>` lines, then `crc <crc32 hex>`.
//! Names are checked again on load (a hand-edited catalog cannot smuggle a bad one in), and so
//! is the regions' contiguity.
//!
//! Version 3 (this one) lists several regions per table. Version 2 had one region per table on
//! the `table` line, version 1 named region directories after tables (so a name like `..`
//! could reach outside); both are refused at open with an error naming them.

use std::path::Path;

use bytes::Bytes;
use keel_fs::FileSystem;
use keel_storefile::{BloomType, Compression, Encoding, WriterOptions};

use crate::checked_file;
use crate::error::RegionError;
use crate::manifest::{hex, unhex};
use crate::matcher::FamilyRules;
use crate::names::{TableName, check_family_name};
use crate::region::{Durability, FamilyOptions};

const HEADER: &str = "keel-catalog 3";
/// Catalogs this version refuses to open: one region per table (2), directories named after
/// tables (1).
const OLDER: &[&str] = &["keel-catalog 2", "keel-catalog 1"];

/// One region of a table: its id (its directory, its key in the WAL) and its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RegionEntry {
    pub(crate) id: u64,
    /// The region's first row (inclusive; empty = the first row of the table).
    pub(crate) start_key: Bytes,
    /// The row after the region (exclusive; empty = past the last row).
    pub(crate) end_key: Bytes,
}

/// One table's persisted description.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableEntry {
    pub(crate) name: String,
    pub(crate) enabled: bool,
    /// The table's durability (HBase's table `DURABILITY`; `UseDefault`: the server's).
    pub(crate) durability: Durability,
    /// Its regions in key order, contiguous, covering every row.
    pub(crate) regions: Vec<RegionEntry>,
    pub(crate) families: Vec<FamilyOptions>,
}

impl TableEntry {
    /// The regions' ids.
    pub(crate) fn region_ids(&self) -> impl Iterator<Item = u64> + '_ {
        self.regions.iter().map(|r| r.id)
    }
}

/// Whether `regions` are in key order, contiguous and cover every row.
pub(crate) fn contiguous(regions: &[RegionEntry]) -> bool {
    let (Some(first), Some(last)) = (regions.first(), regions.last()) else {
        return false;
    };
    first.start_key.is_empty()
        && last.end_key.is_empty()
        && regions.windows(2).all(|w| {
            !w[0].end_key.is_empty()
                && w[0].end_key == w[1].start_key
                && w[0].start_key < w[0].end_key
        })
}

fn key_text(key: &Bytes) -> String {
    if key.is_empty() {
        "-".to_string()
    } else {
        hex(key)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Catalog {
    pub(crate) next_region: u64,
    pub(crate) tables: Vec<TableEntry>,
}

fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::None => "NONE",
        Encoding::Diff => "DIFF",
    }
}

fn compression_name(c: Compression) -> &'static str {
    match c {
        Compression::None => "NONE",
        Compression::Lz4 => "LZ4",
    }
}

fn bloom_name(b: BloomType) -> &'static str {
    match b {
        BloomType::None => "NONE",
        BloomType::Row => "ROW",
        BloomType::RowCol => "ROWCOL",
    }
}

impl Catalog {
    pub(crate) fn load(fs: &dyn FileSystem, dir: &Path) -> Result<Catalog, RegionError> {
        let Some(lines) = checked_file::load(fs, dir, "CATALOG", HEADER, OLDER)? else {
            return Ok(Catalog {
                next_region: 1,
                tables: Vec::new(),
            });
        };
        let path = dir.join("CATALOG");
        let corrupt = |what: &str| checked_file::corrupt(&path, what);
        let mut catalog = Catalog::default();
        for line in &lines {
            let line = line.as_str();
            let parts: Vec<&str> = line.split(' ').collect();
            match parts.as_slice() {
                ["next-region", n] => catalog.next_region = n.parse().map_err(|_| corrupt(line))?,
                ["table", name, enabled, durability] => {
                    let name = TableName::new(name).map_err(|e| corrupt(&e.to_string()))?;
                    catalog.tables.push(TableEntry {
                        name: name.as_str().to_string(),
                        enabled: *enabled == "1",
                        durability: durability.parse().map_err(|_| corrupt(line))?,
                        regions: Vec::new(),
                        families: Vec::new(),
                    });
                }
                ["region", id, start, end] => {
                    let key = |text: &str| -> Option<Bytes> {
                        if text == "-" {
                            Some(Bytes::new())
                        } else {
                            unhex(text).map(Bytes::from)
                        }
                    };
                    let table = catalog
                        .tables
                        .last_mut()
                        .ok_or_else(|| corrupt("region before table"))?;
                    table.regions.push(RegionEntry {
                        id: id.parse().map_err(|_| corrupt(line))?,
                        start_key: key(start).ok_or_else(|| corrupt(line))?,
                        end_key: key(end).ok_or_else(|| corrupt(line))?,
                    });
                }
                [
                    "family",
                    name,
                    versions,
                    min_versions,
                    ttl,
                    block,
                    encoding,
                    compression,
                    bloom,
                    in_memory,
                ] => {
                    let table = catalog
                        .tables
                        .last_mut()
                        .ok_or_else(|| corrupt("family before table"))?;
                    let name = unhex(name).ok_or_else(|| corrupt(line))?;
                    check_family_name(&name).map_err(|e| corrupt(&e.to_string()))?;
                    let rules = FamilyRules {
                        max_versions: versions.parse().map_err(|_| corrupt(line))?,
                        min_versions: min_versions.parse().map_err(|_| corrupt(line))?,
                        ttl_ms: if *ttl == "-" {
                            None
                        } else {
                            Some(ttl.parse().map_err(|_| corrupt(line))?)
                        },
                    };
                    let files = WriterOptions {
                        block_size: block.parse().map_err(|_| corrupt(line))?,
                        encoding: match *encoding {
                            "NONE" => Encoding::None,
                            "DIFF" => Encoding::Diff,
                            _ => return Err(corrupt(line)),
                        },
                        compression: match *compression {
                            "NONE" => Compression::None,
                            "LZ4" => Compression::Lz4,
                            _ => return Err(corrupt(line)),
                        },
                        bloom: match *bloom {
                            "NONE" => BloomType::None,
                            "ROW" => BloomType::Row,
                            "ROWCOL" => BloomType::RowCol,
                            _ => return Err(corrupt(line)),
                        },
                        ..WriterOptions::default()
                    };
                    table.families.push(FamilyOptions {
                        name: Bytes::from(name),
                        rules,
                        files,
                        in_memory: *in_memory == "1",
                    });
                }
                _ => return Err(corrupt(line)),
            }
        }
        for table in &catalog.tables {
            if !contiguous(&table.regions) {
                return Err(corrupt(&format!(
                    "table {}: its regions do not cover every row exactly once",
                    table.name
                )));
            }
        }
        Ok(catalog)
    }

    pub(crate) fn store(&self, fs: &dyn FileSystem, dir: &Path) -> Result<(), RegionError> {
        let mut text = format!("next-region {}\n", self.next_region);
        for t in &self.tables {
            text.push_str(&format!(
                "table {} {} {}\n",
                t.name,
                u8::from(t.enabled),
                t.durability,
            ));
            for r in &t.regions {
                text.push_str(&format!(
                    "region {} {} {}\n",
                    r.id,
                    key_text(&r.start_key),
                    key_text(&r.end_key)
                ));
            }
            for f in &t.families {
                text.push_str(&format!(
                    "family {} {} {} {} {} {} {} {} {}\n",
                    hex(&f.name),
                    f.rules.max_versions,
                    f.rules.min_versions,
                    f.rules.ttl_ms.map_or("-".to_string(), |t| t.to_string()),
                    f.files.block_size,
                    encoding_name(f.files.encoding),
                    compression_name(f.files.compression),
                    bloom_name(f.files.bloom),
                    u8::from(f.in_memory),
                ));
            }
        }
        checked_file::store(fs, dir, "CATALOG", HEADER, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_fs::StdFs;

    #[test]
    fn round_trips_every_field_and_detects_damage() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let mut family = FamilyOptions::new(Bytes::from_static(b"f\xfe\xff"));
        family.rules = FamilyRules {
            max_versions: 3,
            min_versions: 1,
            ttl_ms: Some(86_400_000),
        };
        family.files.encoding = Encoding::Diff;
        family.files.compression = Compression::Lz4;
        family.files.bloom = BloomType::RowCol;
        family.files.block_size = 4096;
        family.in_memory = true;
        let catalog = Catalog {
            next_region: 9,
            tables: vec![
                TableEntry {
                    name: "t1".to_string(),
                    enabled: false,
                    durability: Durability::FsyncWal,
                    regions: vec![RegionEntry {
                        id: 3,
                        start_key: Bytes::new(),
                        end_key: Bytes::new(),
                    }],
                    families: vec![family, FamilyOptions::new("g")],
                },
                TableEntry {
                    name: "t2".to_string(),
                    enabled: true,
                    durability: Durability::UseDefault,
                    regions: vec![
                        RegionEntry {
                            id: 8,
                            start_key: Bytes::new(),
                            end_key: Bytes::from_static(b"\x00z"),
                        },
                        RegionEntry {
                            id: 5,
                            start_key: Bytes::from_static(b"\x00z"),
                            end_key: Bytes::new(),
                        },
                    ],
                    families: vec![FamilyOptions::new("f")],
                },
            ],
        };
        catalog.store(&fs, dir.path()).unwrap();
        assert_eq!(Catalog::load(&fs, dir.path()).unwrap(), catalog);
        let path = dir.path().join("CATALOG");
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[20] ^= 0x04;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            Catalog::load(&fs, dir.path()),
            Err(RegionError::CorruptManifest { .. })
        ));
    }

    #[test]
    fn an_older_version_is_refused_by_name_and_bad_names_are_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        checked_file::store(
            &fs,
            dir.path(),
            "CATALOG",
            "keel-catalog 1",
            "next-region 2\n",
        )
        .unwrap();
        let err = Catalog::load(&fs, dir.path()).unwrap_err();
        assert!(
            matches!(&err, RegionError::UnsupportedFormat { found, .. } if found == "keel-catalog 1"),
            "{err}"
        );
        assert!(err.to_string().contains("keel-catalog 1"), "{err}");
        checked_file::store(
            &fs,
            dir.path(),
            "CATALOG",
            "keel-catalog 2",
            "next-region 2\n",
        )
        .unwrap();
        let err = Catalog::load(&fs, dir.path()).unwrap_err();
        assert!(err.to_string().contains("keel-catalog 2"), "{err}");
        let one = "region 1 - -\n";
        for bad in [
            format!("table .. 1 USE_DEFAULT\n{one}"),
            format!("table t 1 USE_DEFAULT\n{one}family 2f 1 0 - 65536 NONE NONE ROW 0\n"),
            format!("table t 1 SOMETIMES\n{one}"),
            // Regions with a gap, an overlap, none, and one not starting at the first row.
            "table t 1 USE_DEFAULT\nregion 1 - 6d\nregion 2 6e -\n".to_string(),
            "table t 1 USE_DEFAULT\nregion 1 - 6d\nregion 2 6c -\n".to_string(),
            "table t 1 USE_DEFAULT\n".to_string(),
            "table t 1 USE_DEFAULT\nregion 1 61 -\n".to_string(),
            "region 1 - -\n".to_string(),
        ] {
            let bad = bad.as_str();
            checked_file::store(&fs, dir.path(), "CATALOG", HEADER, bad).unwrap();
            let err = Catalog::load(&fs, dir.path()).unwrap_err();
            assert!(
                matches!(err, RegionError::CorruptManifest { .. }),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn a_catalog_too_large_to_read_back_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let fs = StdFs;
        let family = FamilyOptions::new("f");
        let catalog = Catalog {
            next_region: 2,
            tables: vec![TableEntry {
                name: "t".to_string(),
                enabled: true,
                durability: Durability::UseDefault,
                regions: vec![RegionEntry {
                    id: 1,
                    start_key: Bytes::new(),
                    end_key: Bytes::new(),
                }],
                families: vec![family; checked_file::MAX_BYTES / 20],
            }],
        };
        let err = catalog.store(&fs, dir.path()).unwrap_err();
        assert!(matches!(err, RegionError::FileTooLarge { .. }), "{err}");
        assert!(!dir.path().join("CATALOG").exists());
    }
}
