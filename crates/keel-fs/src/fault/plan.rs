//! What to break and when: [`Fault`]s armed on a [`super::FaultFs`].

use std::path::Path;

/// The kinds of fault `FaultFs` can inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A write (append or write_at) fails with `io::ErrorKind::Other` and writes nothing.
    FailWrite,
    /// A write stores the first half of its bytes, then fails (a torn write).
    ShortWrite,
    /// A write fails with `io::ErrorKind::StorageFull` (ENOSPC) and writes nothing.
    NoSpace,
    /// A sync (`sync_data`, `sync_all` or `sync_dir`) fails; nothing becomes durable.
    FailSync,
    /// A read fails with `io::ErrorKind::Other`.
    FailRead,
    /// The machine stops: the matching write or sync and every write and sync after it fail
    /// and store nothing, so a crash image taken at any later moment is the one a power cut at
    /// that instant would leave, whatever the program does after its error.
    Crash,
}

/// The operations faults count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OpClass {
    Write,
    Sync,
    Read,
}

impl FaultKind {
    /// Whether operations of `class` count towards (and suffer) this kind of fault.
    pub(super) fn counts(self, class: OpClass) -> bool {
        match self {
            FaultKind::FailWrite | FaultKind::ShortWrite | FaultKind::NoSpace => {
                class == OpClass::Write
            }
            FaultKind::FailSync => class == OpClass::Sync,
            FaultKind::FailRead => class == OpClass::Read,
            FaultKind::Crash => class != OpClass::Read,
        }
    }
}

/// One fault: a kind, which matching operation triggers it, and an optional path filter.
///
/// ```
/// use keel_fs::Fault;
/// // The third sync of any file whose path contains "wal" fails, and so does every later one.
/// let fault = Fault::fail_sync(3).on_path("wal").sticky();
/// # let _ = fault;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    kind: FaultKind,
    nth: u64,
    path_contains: Option<String>,
    sticky: bool,
}

impl Fault {
    /// The `nth` (1-based, counted from when it is armed) write fails.
    pub fn fail_write(nth: u64) -> Fault {
        Fault::new(FaultKind::FailWrite, nth)
    }

    /// The `nth` write stores only the first half of its bytes, then fails.
    pub fn short_write(nth: u64) -> Fault {
        Fault::new(FaultKind::ShortWrite, nth)
    }

    /// The `nth` write fails with ENOSPC (`io::ErrorKind::StorageFull`).
    pub fn no_space(nth: u64) -> Fault {
        Fault::new(FaultKind::NoSpace, nth)
    }

    /// The `nth` sync fails and makes nothing durable.
    pub fn fail_sync(nth: u64) -> Fault {
        Fault::new(FaultKind::FailSync, nth)
    }

    /// The `nth` read fails.
    pub fn fail_read(nth: u64) -> Fault {
        Fault::new(FaultKind::FailRead, nth)
    }

    /// The machine stops at the `nth` write or sync (both counted together, 1-based): it and
    /// every write and sync after it fail. Sweeping `nth` over every write and sync of an
    /// operation crashes it at every step.
    pub fn crash_at(nth: u64) -> Fault {
        Fault {
            sticky: true,
            ..Fault::new(FaultKind::Crash, nth)
        }
    }

    fn new(kind: FaultKind, nth: u64) -> Fault {
        Fault {
            kind,
            nth: nth.max(1),
            path_contains: None,
            sticky: false,
        }
    }

    /// Counts only operations on paths containing `needle`.
    pub fn on_path(mut self, needle: impl Into<String>) -> Fault {
        self.path_contains = Some(needle.into());
        self
    }

    /// Once triggered, every later matching operation fails too (a disk that died).
    pub fn sticky(mut self) -> Fault {
        self.sticky = true;
        self
    }

    /// The kind of fault.
    pub fn kind(&self) -> FaultKind {
        self.kind
    }

    fn matches(&self, class: OpClass, path: &Path) -> bool {
        self.kind.counts(class)
            && self
                .path_contains
                .as_deref()
                .is_none_or(|needle| path.to_string_lossy().contains(needle))
    }
}

/// An armed fault with its countdown.
#[derive(Debug)]
pub(super) struct Armed {
    fault: Fault,
    seen: u64,
    fired: bool,
}

impl Armed {
    pub(super) fn new(fault: Fault) -> Armed {
        Armed {
            fault,
            seen: 0,
            fired: false,
        }
    }

    /// Counts one operation; returns the fault's kind if it fires on this operation.
    pub(super) fn observe(&mut self, class: OpClass, path: &Path) -> Option<FaultKind> {
        if !self.fault.matches(class, path) {
            return None;
        }
        if self.fired {
            return self.fault.sticky.then_some(self.fault.kind);
        }
        self.seen += 1;
        if self.seen == self.fault.nth {
            self.fired = true;
            return Some(self.fault.kind);
        }
        None
    }
}
