//! A graph of prepared ops in a session of its own: fed tensor handles, fetching node outputs.
//!
//! One session per graph, not one for all: a session extends and re-places its whole graph
//! whenever nodes are added, so with one shared graph each compile cost about 1 ms per graph
//! compiled before it (240 runs of 36 ops: 6 ms for the first, 240 ms for the last).

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::nodes::{self, NodeOp, Ref, Target};
use crate::error::{Error, Result};
use crate::executor::{Input, Work};
use crate::tensor_spec::TensorSpec;
use crate::tf::dtype::{index_of_tf_code, DTYPES};
use crate::tf::function::Function;
use crate::tf::graph::{node_name, NodeOutput};
use crate::tf::handle::TensorHandle;
use crate::tf::session::Session;
use crate::tf::status::Status;

/// What a graph takes from outside, as a node: fed on every run, or a constant of the graph.
pub enum Feed<'a> {
    /// Fed on each run a tensor of this dtype and shape (-1: a dim of any size).
    Placeholder(TensorSpec),
    /// Every run uses these values (small integers a shape may depend on: TF's shape inference
    /// reads a constant's values, never a placeholder's).
    Constant(&'a TensorHandle),
}

pub struct CompiledGraph {
    session: Session,
    placeholders: Vec<NodeOutput>,
    fetches: Vec<NodeOutput>,
    /// The placeholders' dtypes and dims, which fed tensors must have.
    feed_specs: Vec<TensorSpec>,
    /// Every fetch's dtype and dims as TF infers them from the feeds' shapes, when it infers
    /// them all: then the outputs are known before the graph runs (`crate::executor`).
    static_outputs: Option<Vec<TensorSpec>>,
    /// TF's shape inference knows every dim of every node output that a node takes or a run
    /// fetches.
    every_shape_static: bool,
    /// A run has set up the session's executors (see `has_run`).
    ran: AtomicBool,
}

// SAFETY: the session is Send and Sync; the node outputs are plain pointers into its graph,
// which is only read after `build`.
unsafe impl Send for CompiledGraph {}
// SAFETY: as above: shared use is only `run` and reads of fields set in `build`.
unsafe impl Sync for CompiledGraph {}

impl CompiledGraph {
    /// Builds a node per feed (`Ref::Feed(k)` is `feeds[k]`), node `i` from `steps[i]`
    /// (`None`: a node nothing fetched needs, left out), and the fetches.
    pub fn build<'a>(
        feeds: &[Feed<'_>],
        steps: impl Iterator<Item = Option<NodeOp<'a>>>,
        fetches: &[Ref],
        status: &Status,
    ) -> Result<CompiledGraph> {
        let session = Session::in_caller_thread(status)?;
        let graph = session.graph();
        let mut feed_nodes = Vec::with_capacity(feeds.len());
        let mut placeholders = Vec::with_capacity(feeds.len());
        let mut feed_specs = Vec::with_capacity(feeds.len());
        for (k, feed) in feeds.iter().enumerate() {
            let name = node_name("x", k)?;
            let node = match feed {
                Feed::Placeholder(spec) => {
                    let node = graph.placeholder(&name, DTYPES[spec.dtype], &spec.dims, status)?;
                    placeholders.push(node);
                    feed_specs.push(spec.clone());
                    node
                }
                Feed::Constant(handle) => {
                    let dtype = TensorSpec::of(handle, status)?.dtype;
                    let tensor = handle.resolve(status)?;
                    graph.constant(&name, DTYPES[dtype], &tensor, status)?
                }
            };
            feed_nodes.push(node);
        }
        let (built, mut used) = nodes::add_steps(graph, feed_nodes, steps, Target::Replay, status)?;
        used.extend(fetches.iter().copied());
        let mut every_shape_static = true;
        for &input in &used {
            if let Ref::Node { .. } = input {
                every_shape_static &= graph
                    .static_dims(built.output_of(input)?, status)?
                    .is_some();
            }
        }
        let fetches = fetches
            .iter()
            .map(|&fetch| built.output_of(fetch))
            .collect::<Result<Vec<_>>>()?;
        let static_outputs = fetches
            .iter()
            .map(|&fetch| {
                let dtype = index_of_tf_code(session.port_dtype(session.port_of(fetch)));
                let dims = graph.static_dims(fetch, status)?;
                Ok(dtype.zip(dims).map(|(dtype, dims)| TensorSpec {
                    dtype,
                    dims: dims.into(),
                }))
            })
            .collect::<Result<Option<Vec<_>>>>()?;
        Ok(CompiledGraph {
            session,
            placeholders,
            fetches,
            feed_specs,
            every_shape_static: every_shape_static && static_outputs.is_some(),
            static_outputs,
            ran: AtomicBool::new(false),
        })
    }

    /// The graph as a TF function named `name`, its placeholders the arguments and its
    /// fetches the results, for a call on another device.
    pub fn to_function(&self, name: &CStr, status: &Status) -> Result<Function> {
        Function::from_graph(
            self.session.graph(),
            name,
            &self.placeholders,
            &self.fetches,
            status,
        )
    }

    /// How many outputs a run fetches.
    pub fn fetch_count(&self) -> usize {
        self.fetches.len()
    }

    /// The fetches' dtypes and dims, when TF knows them all before running.
    pub fn static_outputs(&self) -> Option<&[TensorSpec]> {
        self.static_outputs.as_deref()
    }

    /// Whether TF knows the dims of every node output used before the graph runs.
    pub fn every_shape_static(&self) -> bool {
        self.every_shape_static
    }

    /// How many tensors a run is fed (one per placeholder).
    pub fn feed_count(&self) -> usize {
        self.placeholders.len()
    }

    /// Refuses a tensor for feed `k` of another dtype or shape than the placeholder's (any size
    /// where its dim is -1), as TF would when the graph runs.
    pub fn check_feed(&self, k: usize, handle: &TensorHandle, status: &Status) -> Result<()> {
        let want = self
            .feed_specs
            .get(k)
            .ok_or_else(|| Error::Invalid(format!("the graph has no feed {k}")))?;
        let got = TensorSpec::of(handle, status)?;
        if got.dtype == want.dtype && want.admits_dims(&got.dims) {
            return Ok(());
        }
        Err(Error::Invalid(format!(
            "feed {k} must be {} {:?}, got {} {:?}",
            DTYPES[want.dtype].name, want.dims, DTYPES[got.dtype].name, got.dims
        )))
    }

    /// Runs the graph on `feeds` (one per placeholder) and returns the fetched outputs.
    pub fn run(&self, feeds: &[&TensorHandle], status: &Status) -> Result<Vec<TensorHandle>> {
        if feeds.len() != self.placeholders.len() {
            return Err(Error::Invalid(format!(
                "the graph takes {} inputs, got {}",
                self.placeholders.len(),
                feeds.len()
            )));
        }
        let session = &self.session;
        let tensors = feeds
            .iter()
            .map(|handle| handle.resolve(status))
            .collect::<Result<Vec<_>>>()?;
        let feeds: Vec<_> = self
            .placeholders
            .iter()
            .zip(&tensors)
            .map(|(&feed, tensor)| (session.port_of(feed), tensor))
            .collect();
        let fetches: Vec<_> = self.fetches.iter().map(|&f| session.port_of(f)).collect();
        let outputs = session.run(&feeds, &fetches, status);
        self.ran.store(true, Ordering::Release);
        outputs?
            .iter()
            .map(|tensor| TensorHandle::from_tensor(tensor, status))
            .collect()
    }

    /// A job's work: a run of `graph` on `feeds` (one per placeholder), the pending ones waited
    /// for. Its first run sets the session up, which only the executor thread does.
    pub fn run_work(graph: Arc<CompiledGraph>, feeds: Vec<Input>) -> Work {
        let first = !graph.has_run();
        Work::new(move |status| {
            let feeds = Input::resolve_all(&feeds, status)?;
            let feeds: Vec<&TensorHandle> = feeds.iter().collect();
            graph.run(&feeds, status)
        })
        .on_executor_only(first)
    }

    /// Whether the graph has run. Its first run sets the session up (placement, TF's graph
    /// passes, kernels): milliseconds to hundreds of them, part of which TF caches per thread.
    pub fn has_run(&self) -> bool {
        self.ran.load(Ordering::Acquire)
    }
}
