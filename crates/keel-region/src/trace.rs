//! Tracing that costs nothing when it is off. With the `tracing` feature (on by default) region
//! operations, row-lock waits, WAL appends and syncs, flushes and compactions are spans and
//! block-cache lookups are events; with it off every macro here expands to `()` and no field
//! expression is even compiled, so the overhead can be measured against nothing
//! (`cargo xtask bench tracing`). Compiled in but with no subscriber, each site is one check of
//! its callsite's cached interest. Byte fields go through [`Printable`], formatted only if a
//! subscriber records them.

/// Enters a span for the rest of the scope: `let _span = span!(INFO, "name", field = value);`
#[cfg(feature = "tracing")]
macro_rules! span {
    ($level:ident, $name:literal $(, $($fields:tt)*)?) => {
        tracing::span!(tracing::Level::$level, $name $(, $($fields)*)?).entered()
    };
}

#[cfg(not(feature = "tracing"))]
macro_rules! span {
    ($($anything:tt)*) => {
        ()
    };
}

/// Emits an event: `event!(TRACE, file = id, "block cache hit");`
#[cfg(feature = "tracing")]
macro_rules! event {
    ($level:ident, $($rest:tt)*) => {
        tracing::event!(tracing::Level::$level, $($rest)*)
    };
}

#[cfg(not(feature = "tracing"))]
macro_rules! event {
    ($($anything:tt)*) => {
        ()
    };
}

pub(crate) use {event, span};

/// Bytes shown escaped (`keel_cell::escape_bytes`), only when a subscriber formats the field.
#[cfg(feature = "tracing")]
pub(crate) struct Printable<'a>(pub(crate) &'a [u8]);

#[cfg(feature = "tracing")]
impl std::fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&keel_cell::escape_bytes(self.0))
    }
}

/// The span a flush was asked for in (a refused write), so the flusher thread's flush span can
/// follow from it.
#[derive(Debug, Default)]
pub(crate) struct Cause {
    #[cfg(feature = "tracing")]
    span: keel_sync::Mutex<Option<tracing::Span>>,
}

impl Cause {
    /// Remembers the current span (the latest asker wins).
    pub(crate) fn note(&self) {
        #[cfg(feature = "tracing")]
        {
            let current = tracing::Span::current();
            if !current.is_none() {
                *self.span.lock() = Some(current);
            }
        }
    }

    /// Links the current span to the remembered one, and forgets it.
    pub(crate) fn follow(&self) {
        #[cfg(feature = "tracing")]
        if let Some(cause) = self.span.lock().take() {
            tracing::Span::current().follows_from(&cause);
        }
    }
}
