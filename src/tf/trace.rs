//! What TF ran while a profile is taken (`tf.node.profile`): eager ops, session runs with each
//! node's timing (TF's own step stats, asked for with `RunOptions.trace_level = FULL_TRACE`),
//! executor jobs and the JS thread's waits for them, as spans in microseconds since the Unix
//! epoch (the clock of TF's step stats). Process-wide, so that work on every thread lands in
//! one trace. Off, recording costs one relaxed atomic load where a span would begin.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use super::proto::{text, Reader, Value};
use crate::error::{Error, Result};

/// What a span is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SpanKind {
    /// One op run eagerly (`TFE_Execute`).
    EagerOp,
    /// One `TF_SessionRun` (a deferred run's graph, a call graph, a SavedModel, a one-op
    /// graph).
    SessionRun,
    /// A node of a session run, as TF's step stats time it.
    Node,
    /// An executor job, on its thread.
    Job,
    /// The JS thread waiting for an executor job's outputs.
    Wait,
}

impl SpanKind {
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::EagerOp => "eager op",
            SpanKind::SessionRun => "session run",
            SpanKind::Node => "graph node",
            SpanKind::Job => "executor job",
            SpanKind::Wait => "wait",
        }
    }
}

pub struct Span {
    pub kind: SpanKind,
    pub name: String,
    /// The op type, for nodes (from TF's timeline label) and eager ops.
    pub op: String,
    pub start_us: f64,
    pub duration_us: f64,
    /// The thread's name, where it has one.
    pub thread: String,
    /// The thread's id (the OS's; for graph nodes, TF's own).
    pub tid: u32,
}

static ACTIVE: AtomicBool = AtomicBool::new(false);
static SPANS: Mutex<Vec<Span>> = Mutex::new(Vec::new());
static TRACED_RUNS: Mutex<()> = Mutex::new(());

/// Held across a traced session run (`FULL_TRACE_RUN_OPTIONS`). Such a run starts TF's
/// profiler, of which a process has one at a time: a second traced run while the first lasts
/// failed with "Another profiling session active" (a GraphModel's ops on pending tensors, run by
/// the executor as one-op graphs, beside a deferred run's graph on the JS thread). Traced runs,
/// only while a profile is taken, take turns.
pub fn traced_run_turn() -> std::sync::MutexGuard<'static, ()> {
    TRACED_RUNS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Whether a profile is being taken.
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Starts recording; an error while a profile is being taken.
pub fn start() -> Result<()> {
    if ACTIVE.swap(true, Ordering::SeqCst) {
        return Err(Error::Invalid("a profile is being taken already".into()));
    }
    spans().clear();
    Ok(())
}

/// Stops recording and returns what was recorded.
pub fn stop() -> Vec<Span> {
    ACTIVE.store(false, Ordering::SeqCst);
    std::mem::take(&mut *spans())
}

fn spans() -> std::sync::MutexGuard<'static, Vec<Span>> {
    SPANS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Now, in microseconds since the Unix epoch.
pub fn now_us() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

/// A span begun on this thread, recorded when it ends (dropped); `None` when not profiling.
pub struct Timing {
    kind: SpanKind,
    name: String,
    op: String,
    start_us: f64,
}

impl Timing {
    pub fn begin(kind: SpanKind, name: impl FnOnce() -> (String, String)) -> Option<Timing> {
        if !active() {
            return None;
        }
        let (name, op) = name();
        Some(Timing {
            kind,
            name,
            op,
            start_us: now_us(),
        })
    }
}

impl Drop for Timing {
    fn drop(&mut self) {
        let end = now_us();
        let thread = std::thread::current().name().unwrap_or_default().to_owned();
        spans().push(Span {
            kind: self.kind,
            name: std::mem::take(&mut self.name),
            op: std::mem::take(&mut self.op),
            start_us: self.start_us,
            duration_us: end - self.start_us,
            thread,
            tid: thread_id(),
        });
    }
}

/// The calling thread's OS id.
#[cfg(windows)]
pub fn thread_id() -> u32 {
    crate::win32::thread_id()
}

/// The calling thread's OS id (0 if it does not fit a trace's u32).
#[cfg(all(unix, not(target_os = "macos")))]
pub fn thread_id() -> u32 {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    u32::try_from(tid).unwrap_or(0)
}

/// The calling thread's OS id (0 if it does not fit a trace's u32). macOS has no gettid: its
/// system-wide thread id is pthread_threadid_np's.
#[cfg(target_os = "macos")]
pub fn thread_id() -> u32 {
    let mut tid: u64 = 0;
    // SAFETY: thread 0 (a null pthread_t) means the calling one; `tid` is a u64 to write.
    let status = unsafe { libc::pthread_threadid_np(0, &mut tid) };
    if status != 0 {
        return 0;
    }
    u32::try_from(tid).unwrap_or(0)
}

/// `RunOptions { trace_level: FULL_TRACE }` (config.proto: field 1, enum value 3).
pub const FULL_TRACE_RUN_OPTIONS: &[u8] = &[0x08, 0x03];

/// Records the nodes of a session run's `RunMetadata` (its step stats).
pub fn record_run_metadata(metadata: &[u8]) -> Result<()> {
    let mut nodes = Vec::new();
    // RunMetadata.step_stats (1) -> StepStats.dev_stats (1) -> DeviceStepStats.node_stats (2).
    for step_stats in fields(metadata, 1)? {
        for device in fields(step_stats, 1)? {
            for node in fields(device, 2)? {
                nodes.push(node_span(node)?);
            }
        }
    }
    spans().extend(nodes);
    Ok(())
}

/// The values of every length-delimited field `number` of a message.
fn fields(message: &[u8], number: u64) -> Result<Vec<&[u8]>> {
    let mut found = Vec::new();
    let mut reader = Reader(message);
    while let Some((field, value)) = reader.next()? {
        if let (true, Value::Bytes(bytes)) = (field == number, value) {
            found.push(bytes);
        }
    }
    Ok(found)
}

/// A `NodeExecStats` (step_stats.proto) as a span: node_name (1), all_start_micros (2),
/// all_end_rel_micros (5), timeline_label (8: `name = Op(inputs)`), thread_id (10).
fn node_span(stats: &[u8]) -> Result<Span> {
    let mut span = Span {
        kind: SpanKind::Node,
        name: String::new(),
        op: String::new(),
        start_us: 0.0,
        duration_us: 0.0,
        thread: String::new(),
        tid: 0,
    };
    let mut reader = Reader(stats);
    while let Some((field, value)) = reader.next()? {
        match (field, value) {
            (1, Value::Bytes(b)) => span.name = text(b),
            (2, Value::Varint(v)) => span.start_us = v as f64,
            (5, Value::Varint(v)) => span.duration_us = v as f64,
            (8, Value::Bytes(b)) => span.op = op_of_label(&text(b)),
            (10, Value::Varint(v)) => span.tid = v as u32,
            _ => {}
        }
    }
    Ok(span)
}

/// The op type of a timeline label, `name = Op(inputs)`.
fn op_of_label(label: &str) -> String {
    let rhs = label.split_once(" = ").map_or(label, |(_, rhs)| rhs);
    rhs.split('(').next().unwrap_or(rhs).trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_stats_become_node_spans() {
        // NodeExecStats { node_name: "n", all_start_micros: 1000, all_end_rel_micros: 7,
        // timeline_label: "n = MatMul(a, b)", thread_id: 3 }, in DeviceStepStats.node_stats,
        // in StepStats.dev_stats, in RunMetadata.step_stats.
        let label = b"n = MatMul(a, b)";
        let mut node = vec![
            0x0a,
            0x01,
            b'n',
            0x10,
            0xe8,
            0x07,
            0x28,
            0x07,
            0x42,
            label.len() as u8,
        ];
        node.extend_from_slice(label);
        node.extend_from_slice(&[0x50, 0x03]);
        let mut device = vec![0x12, node.len() as u8];
        device.extend(node);
        let mut stats = vec![0x0a, device.len() as u8];
        stats.extend(device);
        let mut metadata = vec![0x0a, stats.len() as u8];
        metadata.extend(stats);
        ACTIVE.store(true, Ordering::SeqCst);
        record_run_metadata(&metadata).unwrap();
        let spans = stop();
        assert_eq!(spans.len(), 1);
        let span = &spans[0];
        assert_eq!((span.name.as_str(), span.op.as_str()), ("n", "MatMul"));
        assert_eq!((span.start_us, span.duration_us), (1000.0, 7.0));
        assert_eq!(span.tid, 3);
    }
}
