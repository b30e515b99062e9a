//! YCSB's `CoreWorkload`: the properties of §11.1 with their defaults, key names
//! (`"user"` + FNV-1a-64 of the key number), values (`RandomByteIterator`'s printable bytes),
//! the key, field, scan-length and operation choosers, and the five operations.

use bytes::Bytes;
use rand::Rng;
use rand::rngs::StdRng;

use super::db::{Db, Record, Status};
use super::generators::{
    AcknowledgedCounter, Counter, Discrete, Exponential, Histogram, Hotspot, ScrambledZipfian,
    Sequential, SkewedLatest, WindowFull, Zipfian, fnv_hash64, uniform,
};
use super::props::{Props, PropsError};

/// A transaction's operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// `READ`.
    Read,
    /// `UPDATE`.
    Update,
    /// `INSERT`.
    Insert,
    /// `SCAN`.
    Scan,
    /// `READ-MODIFY-WRITE`.
    ReadModifyWrite,
}

impl Op {
    /// YCSB's measurement name.
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "READ",
            Op::Update => "UPDATE",
            Op::Insert => "INSERT",
            Op::Scan => "SCAN",
            Op::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }
}

#[derive(Debug)]
enum KeyChooser {
    Uniform(i64, i64),
    Zipfian(ScrambledZipfian),
    Latest(SkewedLatest),
    Hotspot(Hotspot),
    Exponential(Exponential),
    Sequential(Sequential),
}

#[derive(Debug)]
enum Lengths {
    Constant(i64),
    Uniform(i64, i64),
    Zipfian(Zipfian),
    Histogram(Histogram),
}

impl Lengths {
    fn next(&self, rng: &mut StdRng) -> i64 {
        match self {
            Lengths::Constant(n) => *n,
            Lengths::Uniform(min, max) => uniform(rng, *min, *max),
            Lengths::Zipfian(z) => z.next(rng),
            Lengths::Histogram(h) => h.next(rng),
        }
    }
}

/// A configured workload, shared by every client thread.
#[derive(Debug)]
pub struct CoreWorkload {
    /// `table` (usertable).
    pub table: String,
    /// `recordcount`.
    pub record_count: i64,
    /// `operationcount`.
    pub operation_count: i64,
    /// `insertstart`.
    pub insert_start: i64,
    /// `insertcount`.
    pub insert_count: i64,
    field_names: Vec<String>,
    field_lengths: Lengths,
    read_all_fields: bool,
    write_all_fields: bool,
    ordered_inserts: bool,
    zero_padding: usize,
    key_chooser: KeyChooser,
    scan_lengths: Lengths,
    ops: Discrete<Op>,
    load_keys: Counter,
    insert_keys: AcknowledgedCounter,
}

fn bad(name: &str, value: &str, expected: &'static str) -> PropsError {
    PropsError::BadValue {
        name: name.to_string(),
        value: value.to_string(),
        expected,
    }
}

fn lengths(kind: &str, name: &str, min: i64, max: i64) -> Result<Lengths, PropsError> {
    Ok(match kind {
        "constant" => Lengths::Constant(max),
        "uniform" => Lengths::Uniform(min, max),
        "zipfian" => Lengths::Zipfian(Zipfian::new(min, max)),
        other => return Err(bad(name, other, "constant, uniform or zipfian")),
    })
}

/// Reads `fieldlengthhistogram`'s file (relative to the working directory, as YCSB does).
fn histogram(path: &str) -> Result<Histogram, PropsError> {
    let text = std::fs::read_to_string(path).map_err(|e| PropsError::Read {
        path: path.to_string(),
        message: e.to_string(),
    })?;
    Histogram::parse(&text).map_err(|message| PropsError::Read {
        path: path.to_string(),
        message,
    })
}

impl CoreWorkload {
    /// Reads every CoreWorkload property, with YCSB's defaults.
    pub fn new(p: &Props) -> Result<CoreWorkload, PropsError> {
        let record_count = match p.int("recordcount", 0)? {
            0 => i64::from(i32::MAX),
            n => n,
        };
        let operation_count = p.int("operationcount", 0)?;
        let insert_start = p.int("insertstart", 0)?;
        let insert_count = p.int("insertcount", record_count - insert_start)?;
        if insert_start + insert_count > record_count {
            return Err(bad(
                "insertcount",
                &insert_count.to_string(),
                "insertstart + insertcount ≤ recordcount",
            ));
        }
        let field_count = p.int("fieldcount", 10)?;
        let prefix = p.string("fieldnameprefix", "field");
        let field_length = p.int("fieldlength", 100)?;
        let min_field_length = p.int("minfieldlength", 1)?;
        let read_proportion = p.float("readproportion", 0.95)?;
        let update_proportion = p.float("updateproportion", 0.05)?;
        let insert_proportion = p.float("insertproportion", 0.0)?;
        let scan_proportion = p.float("scanproportion", 0.0)?;
        let rmw_proportion = p.float("readmodifywriteproportion", 0.0)?;
        let ops = Discrete::new([
            (read_proportion, Op::Read),
            (update_proportion, Op::Update),
            (insert_proportion, Op::Insert),
            (scan_proportion, Op::Scan),
            (rmw_proportion, Op::ReadModifyWrite),
        ]);
        let insert_keys = AcknowledgedCounter::new(record_count);
        let last_key = insert_start + insert_count - 1;
        let distribution = p.string("requestdistribution", "uniform");
        let key_chooser = match distribution.as_str() {
            "uniform" => KeyChooser::Uniform(insert_start, last_key),
            "zipfian" => {
                // YCSB's "fudge factor": room for twice the inserts the run expects.
                let expected_new = (operation_count as f64 * insert_proportion * 2.0) as i64;
                KeyChooser::Zipfian(ScrambledZipfian::new(
                    insert_start,
                    insert_start + insert_count + expected_new,
                ))
            }
            "latest" => KeyChooser::Latest(SkewedLatest::new(&insert_keys)),
            "hotspot" => KeyChooser::Hotspot(Hotspot::new(
                insert_start,
                last_key,
                p.float("hotspotdatafraction", 0.2)?,
                p.float("hotspotopnfraction", 0.8)?,
            )),
            "exponential" => KeyChooser::Exponential(Exponential::new(
                p.float("exponential.percentile", 95.0)?,
                record_count as f64 * p.float("exponential.frac", 0.857_142_857_1)?,
            )),
            "sequential" => KeyChooser::Sequential(Sequential::new(insert_start, last_key)),
            other => {
                return Err(bad(
                    "requestdistribution",
                    other,
                    "uniform, zipfian, latest, hotspot, exponential or sequential",
                ));
            }
        };
        let order = p.string("insertorder", "hashed");
        Ok(CoreWorkload {
            table: p.string("table", "usertable"),
            record_count,
            operation_count,
            insert_start,
            insert_count,
            field_names: (0..field_count).map(|i| format!("{prefix}{i}")).collect(),
            field_lengths: match p.string("fieldlengthdistribution", "constant").as_str() {
                "histogram" => {
                    Lengths::Histogram(histogram(&p.string("fieldlengthhistogram", "hist.txt"))?)
                }
                other => lengths(
                    other,
                    "fieldlengthdistribution",
                    min_field_length,
                    field_length,
                )
                .map_err(|_| {
                    bad(
                        "fieldlengthdistribution",
                        other,
                        "constant, uniform, zipfian or histogram",
                    )
                })?,
            },
            read_all_fields: p.bool("readallfields", true)?,
            write_all_fields: p.bool("writeallfields", false)?,
            ordered_inserts: match order.as_str() {
                "hashed" => false,
                "ordered" => true,
                other => return Err(bad("insertorder", other, "hashed or ordered")),
            },
            zero_padding: usize::try_from(p.int("zeropadding", 1)?).unwrap_or(1),
            key_chooser,
            scan_lengths: lengths(
                &p.string("scanlengthdistribution", "uniform"),
                "scanlengthdistribution",
                p.int("minscanlength", 1)?,
                p.int("maxscanlength", 1000)?,
            )?,
            ops,
            load_keys: Counter::new(insert_start),
            insert_keys,
        })
    }

    /// YCSB's `buildKeyName`: "user" + zero padding + the key number (hashed unless ordered).
    pub fn key_name(&self, keynum: i64) -> String {
        let keynum = if self.ordered_inserts {
            keynum
        } else {
            fnv_hash64(keynum)
        };
        let digits = keynum.to_string();
        let fill = self.zero_padding.saturating_sub(digits.len());
        format!("user{}{digits}", "0".repeat(fill))
    }

    /// The field names (`field0` …).
    pub fn field_names(&self) -> &[String] {
        &self.field_names
    }

    fn value(&self, rng: &mut StdRng) -> Bytes {
        let len = usize::try_from(self.field_lengths.next(rng)).unwrap_or(0);
        Bytes::from(random_bytes(rng, len))
    }

    /// Every field, with fresh values (an insert).
    pub fn all_values(&self, rng: &mut StdRng) -> Record {
        self.field_names
            .iter()
            .map(|f| (f.clone(), self.value(rng)))
            .collect()
    }

    fn update_values(&self, rng: &mut StdRng) -> Record {
        if self.write_all_fields {
            self.all_values(rng)
        } else {
            let f = &self.field_names[uniform(rng, 0, self.field_names.len() as i64 - 1) as usize];
            vec![(f.clone(), self.value(rng))]
        }
    }

    fn read_fields(&self, rng: &mut StdRng) -> Option<Vec<String>> {
        if self.read_all_fields {
            None
        } else {
            let i = uniform(rng, 0, self.field_names.len() as i64 - 1) as usize;
            Some(vec![self.field_names[i].clone()])
        }
    }

    /// YCSB's `nextKeynum`: a key to operate on, never one whose insert is unacknowledged.
    pub fn next_keynum(&self, rng: &mut StdRng) -> i64 {
        loop {
            let keynum = match &self.key_chooser {
                KeyChooser::Exponential(e) => {
                    let k = self.insert_keys.last() - e.next(rng);
                    if k < 0 {
                        continue;
                    }
                    return k;
                }
                KeyChooser::Uniform(min, max) => uniform(rng, *min, *max),
                KeyChooser::Zipfian(z) => z.next(rng),
                KeyChooser::Latest(l) => l.next(rng, &self.insert_keys),
                KeyChooser::Hotspot(h) => h.next(rng),
                KeyChooser::Sequential(s) => s.next(),
            };
            if keynum <= self.insert_keys.last() {
                return keynum;
            }
        }
    }

    /// The load phase's next insert (`doInsert`).
    pub fn do_insert(&self, db: &mut dyn Db, rng: &mut StdRng) -> Status {
        let keynum = self.load_keys.next();
        let key = self.key_name(keynum);
        let values = self.all_values(rng);
        db.insert(&self.table, &key, &values)
    }

    /// The next transaction's operation.
    pub fn next_op(&self, rng: &mut StdRng) -> Option<Op> {
        self.ops.next(rng)
    }

    /// Runs one operation of the run phase (`doTransaction`). A read-modify-write runs its
    /// read and its update through `measure` (which records each) and returns both statuses.
    pub fn do_transaction(
        &self,
        op: Op,
        db: &mut dyn Db,
        rng: &mut StdRng,
        measure: &mut dyn FnMut(Op, &mut dyn FnMut() -> Status) -> Status,
    ) -> Result<Status, WindowFull> {
        Ok(match op {
            Op::Read => {
                let key = self.key_name(self.next_keynum(rng));
                let fields = self.read_fields(rng);
                measure(Op::Read, &mut || {
                    db.read(&self.table, &key, fields.as_deref())
                })
            }
            Op::Update => {
                let key = self.key_name(self.next_keynum(rng));
                let values = self.update_values(rng);
                measure(Op::Update, &mut || db.update(&self.table, &key, &values))
            }
            Op::Insert => {
                let keynum = self.insert_keys.next();
                let key = self.key_name(keynum);
                let values = self.all_values(rng);
                let status = measure(Op::Insert, &mut || db.insert(&self.table, &key, &values));
                self.insert_keys.acknowledge(keynum)?;
                status
            }
            Op::Scan => {
                let key = self.key_name(self.next_keynum(rng));
                let len = usize::try_from(self.scan_lengths.next(rng)).unwrap_or(1);
                let fields = self.read_fields(rng);
                measure(Op::Scan, &mut || {
                    db.scan(&self.table, &key, len, fields.as_deref())
                })
            }
            Op::ReadModifyWrite => {
                let key = self.key_name(self.next_keynum(rng));
                let fields = self.read_fields(rng);
                let values = self.update_values(rng);
                let read = measure(Op::Read, &mut || {
                    db.read(&self.table, &key, fields.as_deref())
                });
                let update = measure(Op::Update, &mut || db.update(&self.table, &key, &values));
                if read == Status::Ok { update } else { read }
            }
        })
    }

    /// The acknowledged-insert counter (for tests and the latest chooser).
    pub fn insert_keys(&self) -> &AcknowledgedCounter {
        &self.insert_keys
    }
}

/// `RandomByteIterator`: printable bytes, six per random 32-bit int through masks 31, 63
/// and 95 (so not uniform, and compressible, as YCSB's).
pub fn random_bytes(rng: &mut impl Rng, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    for chunk in out.chunks_mut(6) {
        let bytes: i32 = rng.random();
        let shifts_masks = [(0, 31), (5, 63), (10, 95), (15, 31), (20, 63), (25, 95)];
        for (b, (shift, mask)) in chunk.iter_mut().zip(shifts_masks) {
            *b = (((bytes >> shift) & mask) + i32::from(b' ')) as u8;
        }
    }
    out
}
