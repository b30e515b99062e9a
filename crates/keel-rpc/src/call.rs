//! What the executor schedules: a [`Call`] (class, receive time, deadline, size) around a
//! [`Task`], the caller's code that runs once on a handler thread or is told why it will not.

use std::fmt;
use std::time::{Duration, Instant};

/// The traffic class of a call, which picks its queues and handlers (HBase's classification:
/// any mutation is a write, any scan request a scan, everything else a read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CallClass {
    /// Puts, deletes, increments, appends, check-and-mutate, and batches holding any of them.
    Write,
    /// Gets and multi-gets.
    Read,
    /// Scanner opens and `next` calls.
    Scan,
    /// Admin and system calls (HBase's priority > `QOS_THRESHOLD`): the priority handler pool,
    /// or the read side when there is none.
    Priority,
}

impl CallClass {
    /// Every class, in the order metrics list them.
    pub const ALL: [CallClass; 4] = [
        CallClass::Write,
        CallClass::Read,
        CallClass::Scan,
        CallClass::Priority,
    ];

    /// Lower-case name, as used in handler thread names and metrics.
    pub fn name(self) -> &'static str {
        match self {
            CallClass::Write => "write",
            CallClass::Read => "read",
            CallClass::Scan => "scan",
            CallClass::Priority => "priority",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Why an accepted call will not run; passed to [`Task::fail`] so the server can answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The call's deadline passed while it waited (HBase's "Dropping timed out call").
    TimedOut {
        /// How long it had waited when a handler reached it.
        waited: Duration,
    },
    /// A CoDel queue shed it under overload (HBase's `CallDroppedException`).
    Dropped {
        /// How long it had waited.
        waited: Duration,
    },
    /// The executor shut down with [`crate::ShutdownMode::FailQueued`] while it waited.
    ShuttingDown,
    /// [`Task::run`] panicked; the message of the panic, when it had one.
    Panicked(String),
    /// [`crate::Executor::dispatch`] refused it. The executor never sends this itself (the
    /// dispatcher gets the call back in [`crate::Rejected`]); a dispatcher whose task answers
    /// its own client passes it on with `rejected.call.fail(Failure::Refused(rejected.reason))`.
    Refused(crate::RejectReason),
}

/// Facts about a call at the moment a handler starts it.
#[derive(Debug, Clone)]
pub struct RunInfo {
    /// The class the call was dispatched as.
    pub class: CallClass,
    /// Receive time to handler start.
    pub queue_time: Duration,
    /// True if the call went straight to an idle handler (the fast path), never touching a queue.
    pub handed_off: bool,
    /// Index of the handler within its pool (`keel-rpc-write-3` has index 3).
    pub handler: usize,
}

/// The caller's side of a call: exactly one of `run` or `fail` is called, once, on some thread
/// (`fail` may also follow a `run` that panicked).
pub trait Task: Send + 'static {
    /// Executes the call on a handler thread.
    fn run(&mut self, info: &RunInfo);
    /// The call will not run (or its run panicked): answer the client with `failure`.
    fn fail(&mut self, failure: Failure);
}

/// A call waiting to be scheduled: its task plus what the executor needs to place and bound it.
pub struct Call {
    pub(crate) class: CallClass,
    pub(crate) received: Instant,
    pub(crate) deadline: Option<Instant>,
    pub(crate) size: u64,
    pub(crate) scan_vtime: u64,
    pub(crate) task: Box<dyn Task>,
}

impl Call {
    /// A call of `class` received now, of size 0, with no deadline.
    pub fn new(class: CallClass, task: impl Task) -> Call {
        Call {
            class,
            received: Instant::now(),
            deadline: None,
            size: 0,
            scan_vtime: 0,
            task: Box::new(task),
        }
    }

    /// Sets when the request was read off the wire (queue time is measured from here).
    pub fn received_at(mut self, at: Instant) -> Call {
        self.received = at;
        self
    }

    /// Sets the instant after which running the call is pointless (the client gave up).
    pub fn with_deadline(mut self, deadline: Instant) -> Call {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the request's size in bytes, charged against the queue byte limit while it waits
    /// and runs.
    pub fn with_size(mut self, bytes: u64) -> Call {
        self.size = bytes;
        self
    }

    /// Sets how many `next` calls this call's scanner has made: the deadline queue type pushes
    /// long scans back by sqrt(vtime × `hbase.ipc.server.scan.vtime.weight`) ms.
    pub fn with_scan_vtime(mut self, vtime: u64) -> Call {
        self.scan_vtime = vtime;
        self
    }

    /// The call's class.
    pub fn class(&self) -> CallClass {
        self.class
    }

    /// When the call was received.
    pub fn received(&self) -> Instant {
        self.received
    }

    /// The call's deadline, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The call's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Answers the call with `failure` without running it (used on rejected calls by callers
    /// that have no other reply path, and by the executor).
    pub fn fail(mut self, failure: Failure) {
        self.task.fail(failure);
    }
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Call")
            .field("class", &self.class)
            .field("received", &self.received)
            .field("deadline", &self.deadline)
            .field("size", &self.size)
            .field("scan_vtime", &self.scan_vtime)
            .finish_non_exhaustive()
    }
}
