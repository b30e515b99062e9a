//! HBase's formulas for how many queues and handlers each class gets (`RpcExecutor`,
//! `RWQueueRpcExecutor`), as a pure function so they can be checked against HBase's numbers.

use crate::call::CallClass;
use crate::options::{ExecutorKind, RpcOptions};

/// One handler pool and its queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolLayout {
    /// Pool name: `general`, `write`, `read`, `scan` or `priority` (also in thread names).
    pub name: &'static str,
    /// Number of call queues.
    pub queues: usize,
    /// Number of handler threads; handler i serves queue i mod `queues`.
    pub handlers: usize,
    /// Per-queue soft length limit (HBase default (handlers / queues) × 10 of the executor).
    pub queue_limit: usize,
    /// Whether idle handlers wait on a stack for hand-offs.
    pub fast_path: bool,
}

/// Every pool an executor will run, and which pool serves each [`CallClass`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The pools, general ones first, the priority pool (if any) last.
    pub pools: Vec<PoolLayout>,
    /// `route[class as usize]` is the index in `pools` of the pool serving that class.
    pub route: [usize; 4],
}

impl Layout {
    /// The pool that serves `class`.
    pub fn pool_for(&self, class: CallClass) -> &PoolLayout {
        &self.pools[self.route[class.index()]]
    }
}

/// The physical capacity of a queue whose soft limit is `soft` (HBase: max(soft, 250)); the soft
/// limit can later be lowered or raised up to this, never beyond.
pub fn hard_limit(soft: usize) -> usize {
    soft.max(250)
}

/// Number of queues for `handlers` handlers: max(1, round(handlers × factor)), factor clamped
/// to 0..=1 (HBase's `RpcExecutor.computeNumCallQueues`).
pub fn queue_count(handlers: usize, factor: f64) -> usize {
    let factor = if factor.is_nan() {
        0.0
    } else {
        factor.clamp(0.0, 1.0)
    };
    ((handlers as f64 * factor).round() as usize).max(1)
}

/// HBase's `RWQueueRpcExecutor.calcNumWriters`: max(1, n − max(1, round(n × read_share))).
pub fn writers(n: usize, read_share: f64) -> usize {
    let readers = ((n as f64 * read_share).round() as usize).max(1);
    n.saturating_sub(readers).max(1)
}

/// HBase's `calcNumReaders`: whatever the writers leave.
pub fn readers(n: usize, read_share: f64) -> usize {
    n - writers(n, read_share)
}

/// Computes the pools for `options` and `kind` (HBase's split, including HBASE-27676's scan
/// pairing): queues = max(1 or 2, round(handlers × factor)); write = writers(queues) queues and
/// max(those, writers(handlers)) handlers; the read side the rest; scans take
/// floor(read handlers × scan ratio) handlers and max(1, floor(read queues × scan ratio)) queues.
pub fn layout(options: &RpcOptions, kind: ExecutorKind) -> Layout {
    let handlers = options.handler_count;
    let fast_path = kind.is_fast_path();
    let read_ratio = options.read_ratio.clamp(0.0, 1.0);
    let scan_ratio = options.scan_ratio.clamp(0.0, 1.0);
    let mut pools = Vec::new();
    let mut route = [0usize; 4];
    let total_queues;
    if kind.is_rw() {
        let queues = queue_count(handlers, options.handler_factor).max(2);
        total_queues = queues;
        let write_queues = writers(queues, read_ratio);
        let write_handlers = write_queues.max(writers(handlers, read_ratio));
        let mut read_queues = readers(queues, read_ratio);
        let mut read_handlers = read_queues.max(readers(handlers, read_ratio));
        let scan_handlers = (read_handlers as f64 * scan_ratio).floor() as usize;
        let scan_queues = if scan_handlers > 0 {
            ((read_queues as f64 * scan_ratio).floor() as usize).max(1)
        } else {
            0
        };
        if scan_queues > 0 {
            read_queues = read_queues.saturating_sub(scan_queues).max(1);
            read_handlers -= scan_handlers;
        }
        pools.push(pool("write", write_queues, write_handlers, fast_path));
        pools.push(pool("read", read_queues, read_handlers, fast_path));
        route[CallClass::Write.index()] = 0;
        route[CallClass::Read.index()] = 1;
        route[CallClass::Scan.index()] = 1;
        route[CallClass::Priority.index()] = 1;
        if scan_queues > 0 {
            pools.push(pool("scan", scan_queues, scan_handlers, fast_path));
            route[CallClass::Scan.index()] = 2;
        }
    } else {
        let queues = queue_count(handlers, options.handler_factor);
        total_queues = queues;
        pools.push(pool("general", queues, handlers.max(queues), fast_path));
    }
    let soft = options
        .max_queue_length
        .unwrap_or((handlers / total_queues) * 10);
    for p in &mut pools {
        p.queue_limit = soft;
    }
    if options.priority_handler_count > 0 {
        let count = options.priority_handler_count;
        let queues = queue_count(count, options.handler_factor);
        let mut priority = pool("priority", queues, count.max(queues), true);
        priority.queue_limit = options.max_queue_length.unwrap_or((count / queues) * 10);
        route[CallClass::Priority.index()] = pools.len();
        pools.push(priority);
    }
    Layout { pools, route }
}

fn pool(name: &'static str, queues: usize, handlers: usize, fast_path: bool) -> PoolLayout {
    PoolLayout {
        name,
        queues,
        handlers,
        queue_limit: 0,
        fast_path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(handlers: usize, factor: f64, read: f64, scan: f64) -> Vec<(&'static str, usize, usize)> {
        let options = RpcOptions {
            handler_count: handlers,
            handler_factor: factor,
            read_ratio: read,
            scan_ratio: scan,
            priority_handler_count: 0,
            ..RpcOptions::default()
        };
        layout(&options, ExecutorKind::RwQueue)
            .pools
            .iter()
            .map(|p| (p.name, p.queues, p.handlers))
            .collect()
    }

    #[test]
    fn hbase_worked_example() {
        // HBase's RWQueueRpcExecutor with 30 handlers, factor 0.1, read 0.5, scan 0.5.
        assert_eq!(
            rw(30, 0.1, 0.5, 0.5),
            [("write", 1, 15), ("read", 1, 8), ("scan", 1, 7)]
        );
    }

    #[test]
    fn split_table() {
        // Hand-computed from HBase's RWQueueRpcExecutor formulas.
        /// (handlers, factor, read ratio, scan ratio, expected (pool, queues, handlers)).
        type Row = (
            usize,
            f64,
            f64,
            f64,
            &'static [(&'static str, usize, usize)],
        );
        let table: &[Row] = &[
            // The seed experiment: 1000 handlers, factor 0.2, read 0.5, no scan split.
            (
                1000,
                0.2,
                0.5,
                0.0,
                &[("write", 100, 500), ("read", 100, 500)],
            ),
            // With a scan split of the read side.
            (
                1000,
                0.2,
                0.5,
                0.5,
                &[("write", 100, 500), ("read", 50, 250), ("scan", 50, 250)],
            ),
            // At least two queues, even with one handler's worth of factor.
            (30, 0.0, 0.5, 0.0, &[("write", 1, 15), ("read", 1, 15)]),
            // Read-heavy: 0.9 of 10 queues read, writers keep at least one.
            (100, 0.1, 0.9, 0.0, &[("write", 1, 10), ("read", 9, 90)]),
            // read ratio 1.0 still leaves one write queue and handler.
            (20, 0.1, 1.0, 0.0, &[("write", 1, 1), ("read", 1, 19)]),
            // A low scan ratio that gives scans no handler leaves them on the read side
            // (HBASE-16815 was a divide by zero here).
            (30, 0.1, 0.5, 0.01, &[("write", 1, 15), ("read", 2, 15)]),
            // A scan ratio giving handlers but floor(queues × ratio) = 0 still gets one queue.
            (
                30,
                0.1,
                0.5,
                0.2,
                &[("write", 1, 15), ("read", 1, 12), ("scan", 1, 3)],
            ),
            // The machine-sized bench configuration: 16 handlers, factor 0.2.
            (16, 0.2, 0.5, 0.0, &[("write", 1, 8), ("read", 2, 8)]),
        ];
        for &(h, f, r, s, expected) in table {
            assert_eq!(
                rw(h, f, r, s),
                expected,
                "H={h} factor={f} read={r} scan={s}"
            );
        }
    }

    #[test]
    fn balanced_queue_counts_and_limits() {
        let options = RpcOptions::default();
        let l = layout(&options, ExecutorKind::FastPathBalanced);
        // 30 handlers, factor 0.1: 3 queues, soft limit (30 / 3) × 10 = 100.
        assert_eq!(l.pools[0].queues, 3);
        assert_eq!(l.pools[0].handlers, 30);
        assert_eq!(l.pools[0].queue_limit, 100);
        assert!(l.pools[0].fast_path);
        // The priority pool: 20 handlers, 2 queues, limit 100, serving priority calls.
        assert_eq!(l.pool_for(CallClass::Priority).name, "priority");
        assert_eq!(l.pool_for(CallClass::Priority).queues, 2);
        assert_eq!(l.pool_for(CallClass::Scan).name, "general");
        assert_eq!(queue_count(30, 2.0), 30, "factors above 1 clamp to 1");
        assert_eq!(queue_count(30, -1.0), 1, "negative factors mean one queue");
        assert_eq!(hard_limit(100), 250);
        assert_eq!(hard_limit(1000), 1000);
    }

    #[test]
    fn rw_layout_limits_use_the_whole_executor() {
        let options = RpcOptions {
            handler_count: 30,
            read_ratio: 0.5,
            scan_ratio: 0.5,
            priority_handler_count: 0,
            ..RpcOptions::default()
        };
        let l = layout(&options, ExecutorKind::FastPathRwQueue);
        assert!(l.pools.iter().all(|p| p.queue_limit == 100 && p.fast_path));
        assert_eq!(l.pool_for(CallClass::Priority).name, "read");
        assert_eq!(l.pool_for(CallClass::Scan).name, "scan");
    }
}
