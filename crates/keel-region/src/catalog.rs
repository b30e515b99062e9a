//! The server's table catalog: every table's name, region id and families with their options,
//! and whether it is enabled. Persisted like the region manifest (temporary file, sync, rename,
//! directory sync, CRC-checked), so a crash leaves the old catalog or the new one.
//!
//! Text: `keel-catalog 1`, `next-region <id>`, then per table `table <name> <region id>
//! <enabled 0|1>` followed by its `family <name hex> <versions> <min versions> <ttl ms or ->
//! <block size> <encoding> <compression> <bloom> <in-memory 0|1>` lines, then `crc <crc32 hex>`.

use std::path::Path;

use bytes::Bytes;
use keel_fs::FileSystem;
use keel_storefile::{BloomType, Compression, Encoding, WriterOptions};

use crate::error::{RegionError, io};
use crate::manifest::{hex, unhex};
use crate::matcher::FamilyRules;
use crate::region::FamilyOptions;

const HEADER: &str = "keel-catalog 1";

/// One table's persisted description.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TableEntry {
    pub(crate) name: String,
    pub(crate) region_id: u64,
    pub(crate) enabled: bool,
    pub(crate) families: Vec<FamilyOptions>,
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
        let path = dir.join("CATALOG");
        if !fs.exists(&path).map_err(|e| io("stat", &path, e))? {
            return Ok(Catalog {
                next_region: 1,
                tables: Vec::new(),
            });
        }
        let file = fs.open(&path).map_err(|e| io("open", &path, e))?;
        let len = file.len().map_err(|e| io("stat", &path, e))?;
        let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX).min(64 << 20)];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| io("read", &path, e))?;
        let corrupt = |what: &str| RegionError::CorruptManifest {
            path: path.clone(),
            what: what.to_string(),
        };
        let text = std::str::from_utf8(&bytes).map_err(|_| corrupt("not UTF-8"))?;
        let body_end = text
            .rfind("crc ")
            .ok_or_else(|| corrupt("no checksum line"))?;
        let stored = u32::from_str_radix(text[body_end + 4..].trim(), 16)
            .map_err(|_| corrupt("bad checksum"))?;
        if stored != crc32fast::hash(&bytes[..body_end]) {
            return Err(corrupt("checksum mismatch"));
        }
        let mut lines = text[..body_end].lines();
        if lines.next() != Some(HEADER) {
            return Err(corrupt("unknown header"));
        }
        let mut catalog = Catalog::default();
        for line in lines {
            let parts: Vec<&str> = line.split(' ').collect();
            match parts.as_slice() {
                ["next-region", n] => catalog.next_region = n.parse().map_err(|_| corrupt(line))?,
                ["table", name, id, enabled] => catalog.tables.push(TableEntry {
                    name: (*name).to_string(),
                    region_id: id.parse().map_err(|_| corrupt(line))?,
                    enabled: *enabled == "1",
                    families: Vec::new(),
                }),
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
        Ok(catalog)
    }

    pub(crate) fn store(&self, fs: &dyn FileSystem, dir: &Path) -> Result<(), RegionError> {
        let mut text = format!("{HEADER}\nnext-region {}\n", self.next_region);
        for t in &self.tables {
            text.push_str(&format!(
                "table {} {} {}\n",
                t.name,
                t.region_id,
                u8::from(t.enabled)
            ));
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
        let crc = crc32fast::hash(text.as_bytes());
        text.push_str(&format!("crc {crc:08x}\n"));
        let path = dir.join("CATALOG");
        let tmp = dir.join("CATALOG.tmp");
        let file = fs.create(&tmp).map_err(|e| io("create", &tmp, e))?;
        file.append(text.as_bytes())
            .map_err(|e| io("write", &tmp, e))?;
        file.sync_data().map_err(|e| io("sync", &tmp, e))?;
        fs.rename(&tmp, &path).map_err(|e| io("rename", &tmp, e))?;
        fs.sync_dir(dir).map_err(|e| io("sync_dir", dir, e))?;
        Ok(())
    }
}
