//! The store interface the workload drives, as YCSB's `DB`: one instance per client thread.

use bytes::Bytes;

/// An operation's outcome, as YCSB's `Status`: reported as `Return=<name>` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Done.
    Ok,
    /// The record was not there.
    NotFound,
    /// Failed.
    Error,
}

impl Status {
    /// YCSB's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::NotFound => "NOT_FOUND",
            Status::Error => "ERROR",
        }
    }
}

/// A record: field name → value.
pub type Record = Vec<(String, Bytes)>;

/// One client thread's connection to the store under test.
pub trait Db: Send {
    /// Reads one record (`fields`: `None` for all).
    fn read(&mut self, table: &str, key: &str, fields: Option<&[String]>) -> Status;
    /// Reads up to `count` records from `start_key` on.
    fn scan(
        &mut self,
        table: &str,
        start_key: &str,
        count: usize,
        fields: Option<&[String]>,
    ) -> Status;
    /// Writes some fields of a record.
    fn update(&mut self, table: &str, key: &str, values: &Record) -> Status;
    /// Writes a whole new record.
    fn insert(&mut self, table: &str, key: &str, values: &Record) -> Status;
}

/// Makes one [`Db`] per client thread.
pub trait Target: Sync {
    /// A connection for one thread.
    fn connect(&self) -> Result<Box<dyn Db>, String>;
    /// What it is, for the report's header.
    fn describe(&self) -> String;
}
