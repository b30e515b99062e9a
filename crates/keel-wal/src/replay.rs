//! Streaming replay: reads every segment in LSN order with constant memory, checks each record,
//! and applies the [`RecoveryMode`] to a damaged tail.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use keel_fs::{FileRef, FileSystem};

use crate::error::{Corruption, WalError};
use crate::format::{
    FORMAT_VERSION, HEADER_LEN, MAGIC, RECORD_HEADER_LEN, WalEntry, encode_header,
    parse_segment_name, record_crc,
};
use crate::segment::DEFAULT_MAX_ENTRY_SIZE;

/// Bytes read from a segment at a time: the reader's whole memory, whatever the log's size
/// (a record larger than this is read on its own).
const READ_AHEAD: usize = 1024 * 1024;

/// What replay does with damage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RecoveryMode {
    /// A partial or corrupt record at the very end of the last segment (a write torn by a
    /// crash) is cut off and reported ([`Replay::tail_cut`]); damage anywhere else is an error.
    #[default]
    TolerateTailCorruption,
    /// Any damage is an error.
    AbsoluteConsistency,
}

/// Replay settings.
#[derive(Clone, Debug, Default)]
pub struct ReplayOptions {
    /// What to do with damage.
    pub mode: RecoveryMode,
    /// Per region, the highest sequence id already safe in store files: entries at or below it
    /// are skipped (still checked). Regions not listed replay everything.
    pub flushed: HashMap<u64, u64>,
    /// Largest entry payload accepted; a longer record length is damage. `0` means the default,
    /// [`DEFAULT_MAX_ENTRY_SIZE`].
    pub max_entry_size: usize,
}

/// Where replay cut off a damaged tail, and why. The writer truncates the segment there and
/// continues from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TailCut {
    /// The last segment.
    pub path: PathBuf,
    /// Where the damaged record starts: the segment's valid length.
    pub offset: u64,
    /// Bytes dropped after it.
    pub dropped_bytes: u64,
    /// What was wrong.
    pub reason: Corruption,
    /// LSN the next record gets.
    pub next_lsn: u64,
}

/// An iterator over the WAL's entries, in LSN order. After it returns `None`, [`Replay::tail_cut`]
/// tells whether a damaged tail was cut and [`Replay::next_lsn`] where writing continues.
#[derive(Debug)]
pub struct Replay {
    fs: Arc<dyn FileSystem>,
    segments: Vec<(u64, PathBuf)>,
    next_segment: usize,
    reader: Option<SegmentReader>,
    options: ReplayOptions,
    last_seen: HashMap<u64, u64>,
    next_lsn: u64,
    tail_cut: Option<TailCut>,
    failed: bool,
}

/// Opens `dir` for replay; the directory must exist.
pub fn replay(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    mut options: ReplayOptions,
) -> Result<Replay, WalError> {
    if options.max_entry_size == 0 {
        options.max_entry_size = DEFAULT_MAX_ENTRY_SIZE;
    }
    let entries = fs.list(dir).map_err(|source| WalError::Io {
        op: "list",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut segments: Vec<(u64, PathBuf)> = entries
        .into_iter()
        .filter_map(|path| {
            let lsn = parse_segment_name(path.file_name()?.to_str()?)?;
            Some((lsn, path))
        })
        .collect();
    segments.sort();
    let next_lsn = segments.first().map_or(1, |(lsn, _)| *lsn);
    Ok(Replay {
        fs,
        segments,
        next_segment: 0,
        reader: None,
        options,
        last_seen: HashMap::new(),
        next_lsn,
        tail_cut: None,
        failed: false,
    })
}

impl Replay {
    /// The damaged tail that was cut off, if any (known once iteration has ended).
    pub fn tail_cut(&self) -> Option<&TailCut> {
        self.tail_cut.as_ref()
    }

    /// The LSN the next record written should get (known once iteration has ended).
    pub fn next_lsn(&self) -> u64 {
        self.next_lsn
    }

    /// The segment the entry last returned came from.
    pub fn current_segment(&self) -> Option<&Path> {
        self.reader.as_ref().map(|r| r.path.as_path())
    }

    /// The segments found, in order.
    pub fn segments(&self) -> impl Iterator<Item = &Path> {
        self.segments.iter().map(|(_, path)| path.as_path())
    }

    fn is_last_segment(&self) -> bool {
        self.next_segment == self.segments.len()
    }

    fn corrupt(&mut self, path: &Path, offset: u64, reason: Corruption) -> WalError {
        self.failed = true;
        WalError::Corrupt {
            path: path.to_path_buf(),
            offset,
            reason,
        }
    }

    /// Opens the next segment and checks its header and its place in the LSN order.
    fn open_next(&mut self) -> Result<bool, WalError> {
        let Some((lsn, path)) = self.segments.get(self.next_segment).cloned() else {
            return Ok(false);
        };
        self.next_segment += 1;
        if lsn != self.next_lsn {
            return Err(self.corrupt(
                &path,
                0,
                Corruption::LsnGap {
                    expected: self.next_lsn,
                    found: lsn,
                },
            ));
        }
        let file = self.fs.open(&path).map_err(|source| WalError::Io {
            op: "open",
            path: path.clone(),
            source,
        })?;
        let mut reader = SegmentReader::new(file, path.clone(), self.options.max_entry_size)?;
        match reader.check_header(lsn)? {
            Ok(()) => {
                self.reader = Some(reader);
                Ok(true)
            }
            Err(reason) => {
                // A header torn by a crash right after the segment was created: only the last
                // segment, and only when tolerating a damaged tail.
                let torn =
                    matches!(reason, Corruption::ShortHeader { .. }) || reader.is_zero_from(0)?;
                if torn && self.is_last_segment() && self.tolerant() {
                    self.tail_cut = Some(TailCut {
                        path,
                        offset: 0,
                        dropped_bytes: reader.len,
                        reason,
                        next_lsn: self.next_lsn,
                    });
                    return Ok(false);
                }
                Err(self.corrupt(&path, 0, reason))
            }
        }
    }

    fn tolerant(&self) -> bool {
        self.options.mode == RecoveryMode::TolerateTailCorruption
    }

    fn next_entry(&mut self) -> Result<Option<WalEntry>, WalError> {
        loop {
            if self.reader.is_none() && !self.open_next()? {
                return Ok(None);
            }
            let Some(reader) = self.reader.as_mut() else {
                return Ok(None);
            };
            let offset = reader.pos;
            match reader.next_record()? {
                Record::Payload(payload) => {
                    let path = reader.path.clone();
                    let entry = WalEntry::decode(&payload)
                        .map_err(|e| self.corrupt(&path, offset, Corruption::Entry(e)))?;
                    self.next_lsn += 1;
                    let previous = self.last_seen.insert(entry.region, entry.sequence_id);
                    if let Some(previous) = previous.filter(|p| *p >= entry.sequence_id) {
                        let reason = Corruption::OutOfOrder {
                            region: entry.region,
                            previous,
                            found: entry.sequence_id,
                        };
                        return Err(self.corrupt(&path, offset, reason));
                    }
                    let flushed = self
                        .options
                        .flushed
                        .get(&entry.region)
                        .copied()
                        .unwrap_or(0);
                    if entry.sequence_id > flushed {
                        return Ok(Some(entry));
                    }
                }
                Record::End => self.reader = None,
                Record::Damaged { reason, tail } => {
                    let path = reader.path.clone();
                    let len = reader.len;
                    if tail && self.is_last_segment() && self.tolerant() {
                        self.tail_cut = Some(TailCut {
                            path,
                            offset,
                            dropped_bytes: len - offset,
                            reason,
                            next_lsn: self.next_lsn,
                        });
                        self.reader = None;
                        self.next_segment = self.segments.len();
                        return Ok(None);
                    }
                    return Err(self.corrupt(&path, offset, reason));
                }
            }
        }
    }
}

impl Iterator for Replay {
    type Item = Result<WalEntry, WalError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_entry() {
            Ok(entry) => entry.map(Ok),
            Err(err) => {
                self.failed = true;
                Some(Err(err))
            }
        }
    }
}

/// One step of reading a segment.
enum Record {
    Payload(Bytes),
    /// The clean end: end of file, or a zero length followed only by zeros.
    End,
    /// A bad record; `tail` if it could be a write torn by a crash (it reaches the end of the
    /// file, or only zeros follow it).
    Damaged {
        reason: Corruption,
        tail: bool,
    },
}

/// Reads one segment through a read-ahead window, so memory stays constant.
#[derive(Debug)]
struct SegmentReader {
    file: FileRef,
    path: PathBuf,
    len: u64,
    pos: u64,
    window: Bytes,
    window_start: u64,
    max_entry_size: usize,
}

impl SegmentReader {
    fn new(file: FileRef, path: PathBuf, max_entry_size: usize) -> Result<SegmentReader, WalError> {
        let len = file.len().map_err(|source| WalError::Io {
            op: "stat",
            path: path.clone(),
            source,
        })?;
        Ok(SegmentReader {
            file,
            path,
            len,
            pos: 0,
            window: Bytes::new(),
            window_start: 0,
            max_entry_size,
        })
    }

    /// `n` bytes at `at`, or `None` if the file ends first.
    fn bytes_at(&mut self, at: u64, n: usize) -> Result<Option<Bytes>, WalError> {
        if at.saturating_add(n as u64) > self.len {
            return Ok(None);
        }
        let window_end = self.window_start + self.window.len() as u64;
        if at < self.window_start || at + n as u64 > window_end {
            let want = n.max(READ_AHEAD).min((self.len - at) as usize);
            let mut buf = vec![0u8; want];
            self.file
                .read_exact_at(&mut buf, at)
                .map_err(|source| WalError::Io {
                    op: "read",
                    path: self.path.clone(),
                    source,
                })?;
            self.window = Bytes::from(buf);
            self.window_start = at;
        }
        let from = (at - self.window_start) as usize;
        Ok(Some(self.window.slice(from..from + n)))
    }

    /// True if every byte from `at` to the end of the file is zero.
    fn is_zero_from(&mut self, mut at: u64) -> Result<bool, WalError> {
        while at < self.len {
            let n = ((self.len - at) as usize).min(READ_AHEAD);
            let Some(chunk) = self.bytes_at(at, n)? else {
                return Ok(false);
            };
            if chunk.iter().any(|b| *b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
        Ok(true)
    }

    fn check_header(&mut self, expected_lsn: u64) -> Result<Result<(), Corruption>, WalError> {
        let Some(header) = self.bytes_at(0, HEADER_LEN)? else {
            return Ok(Err(Corruption::ShortHeader {
                expected: HEADER_LEN,
                found: self.len,
            }));
        };
        let word = |at: usize| {
            let mut le = [0u8; 8];
            le.copy_from_slice(&header[at..at + 8]);
            u64::from_le_bytes(le)
        };
        let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        let crc = u32::from_le_bytes([header[20], header[21], header[22], header[23]]);
        let verdict = if header[..8] != MAGIC {
            Err(Corruption::BadMagic)
        } else if crc != crc32fast::hash(&header[..20]) {
            Err(Corruption::HeaderChecksum)
        } else if version != FORMAT_VERSION {
            Err(Corruption::UnsupportedVersion(version))
        } else if word(12) != expected_lsn {
            Err(Corruption::NameMismatch {
                expected: expected_lsn,
                found: word(12),
            })
        } else {
            debug_assert_eq!(header.as_ref(), encode_header(expected_lsn));
            self.pos = HEADER_LEN as u64;
            Ok(())
        };
        Ok(verdict)
    }

    fn next_record(&mut self) -> Result<Record, WalError> {
        let at = self.pos;
        if at == self.len {
            return Ok(Record::End);
        }
        let Some(frame) = self.bytes_at(at, RECORD_HEADER_LEN)? else {
            let available = self.len - at;
            if self.is_zero_from(at)? {
                return Ok(Record::End);
            }
            return Ok(Record::Damaged {
                reason: Corruption::TruncatedHeader { available },
                tail: true,
            });
        };
        let len_bytes = [frame[0], frame[1], frame[2], frame[3]];
        let len = u32::from_le_bytes(len_bytes);
        let crc = u32::from_le_bytes([frame[4], frame[5], frame[6], frame[7]]);
        if len == 0 {
            if self.is_zero_from(at)? {
                return Ok(Record::End);
            }
            let tail = self.is_zero_from(at + RECORD_HEADER_LEN as u64)?;
            let reason = if crc == 0 {
                Corruption::GarbageAfterEnd
            } else {
                Corruption::Checksum
            };
            return Ok(Record::Damaged { reason, tail });
        }
        if len as usize > self.max_entry_size {
            let reason = Corruption::BadLength {
                len: u64::from(len),
                max: self.max_entry_size,
            };
            // An append torn by a crash leaves a prefix of its length bytes, which reads as a
            // smaller number, never a larger one: a length above the limit is always damage.
            return Ok(Record::Damaged {
                reason,
                tail: false,
            });
        }
        let body_at = at + RECORD_HEADER_LEN as u64;
        let Some(payload) = self.bytes_at(body_at, len as usize)? else {
            let reason = Corruption::TruncatedRecord {
                needed: u64::from(len),
                available: self.len - body_at,
            };
            return Ok(Record::Damaged { reason, tail: true });
        };
        let end = body_at + u64::from(len);
        if record_crc(len_bytes, &payload) != crc {
            let tail = end == self.len || self.is_zero_from(end)?;
            return Ok(Record::Damaged {
                reason: Corruption::Checksum,
                tail,
            });
        }
        self.pos = end;
        Ok(Record::Payload(payload))
    }
}
