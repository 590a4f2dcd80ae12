//! Whole calls as graphs. The JS layer (`js/graphs/`) records the ops a call (a model's
//! predict, a training step, a `tf.node.function`) ran eagerly, and once two calls with the
//! same inputs' signature ran the same ops on the same outside tensors, the call is compiled
//! here into one graph; later calls run it as one session call, with no per-op JS at all.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::compiled::{CompiledGraph, Feed};
use super::fusions;
use super::nodes::{check_ref, NodeOp, Ref};
use crate::error::{Error, Result};
use crate::executor::{Input, Job, Work};
use crate::op_plan::PreparedOp;
use crate::tensor_spec::{small_integers, TensorSpec};
use crate::tf::context::{AddedFunction, Context, SharedContext};
use crate::tf::handle::{copy_each_here, TensorHandle};
use crate::tf::op::Op;
use crate::tf::status::Status;

/// Call graphs alive at once; past it, compiling fails and calls stay eager.
const MAX_CALL_GRAPHS: usize = 4096;

/// Call graphs registered as TF functions so far in this process, which numbers their names.
static FUNCTIONS: AtomicU64 = AtomicU64::new(0);

/// A call graph compiled inside a device scope (`tf.node.withDevice`), which runs as one eager
/// call of its TF function on that device: on a remote worker, one request per call, where op
/// by op each op was one.
struct Placed {
    function: AddedFunction,
    device: CString,
    outputs: usize,
    /// The device is another task's: outputs come back in the call, and a call waits for the
    /// network (`Executor::submit_apart`). A local device (a GPU) keeps its outputs.
    remote: bool,
    /// How many of the outputs, the first, a remote call brings here: the call's own (a loss, a
    /// predict's result). The rest are the values it assigns to variables (weights, optimizer
    /// slots), which stay on the device as remote handles: the variables take them, and the
    /// next call feeds them back, which TF does not send again (it keeps a handle's copy on the
    /// device), so a training step no longer brings every weight here and sends it back.
    returned: usize,
    context: SharedContext,
}

impl Placed {
    /// Calls the function on `inputs` (the fed tensors, then the fixed ones) and, from a remote
    /// device, brings its first `returned` outputs here (the others stay there). TF sends a
    /// call to a remote device without waiting for it; reading an output waits for its answer,
    /// then asks for the value: two round trips (measured: as many as op by op, which TF
    /// pipelines too, but one request instead of one per op, and none of them on the JS thread
    /// when the call is a job). Inputs already on the device (TF keeps its copy of a handle
    /// sent before, such as a weight's) are not sent again.
    fn call(&self, inputs: &[&TensorHandle], status: &Status) -> Result<Vec<TensorHandle>> {
        self.context
            .cleared_on_error(self.call_and_read(inputs, status))
    }

    fn call_and_read(
        &self,
        inputs: &[&TensorHandle],
        status: &Status,
    ) -> Result<Vec<TensorHandle>> {
        let mut op = Op::new(self.context, self.function.name(), status)?;
        op.set_device(&self.device, status)?;
        for handle in inputs {
            op.add_input(handle, status)?;
        }
        let mut outputs = Vec::with_capacity(self.outputs);
        op.execute(&mut outputs, self.outputs, status)?;
        if !self.remote {
            return Ok(outputs);
        }
        let kept = outputs.split_off(self.returned.min(outputs.len()));
        if let (true, Some(first)) = (outputs.is_empty(), kept.first()) {
            // Nothing read waits for the call: a shape does, so that its error is this call's.
            first.rank(status)?;
        }
        let mut here = copy_each_here(outputs, status)
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
        here.extend(kept);
        Ok(here)
    }
}

/// An op the call ran: the prepared op, where its flat inputs came from, and its outputs'
/// shapes as it ran (empty when not known).
pub struct RecordedOp {
    pub plan: u32,
    pub inputs: Vec<Ref>,
    pub shapes: Vec<Vec<i64>>,
}

impl RecordedOp {
    /// The recorded op as node `index` of a graph of `feeds` feeds, its inputs checked to come
    /// before it.
    pub fn step<'a>(
        &self,
        plans: &'a [PreparedOp],
        index: usize,
        feeds: usize,
    ) -> Result<NodeOp<'a>> {
        let prepared = plans
            .get(self.plan as usize)
            .ok_or_else(|| Error::Invalid(format!("prepared op {} does not exist", self.plan)))?;
        for &input in &self.inputs {
            check_ref(input, index, feeds)?;
        }
        Ok(NodeOp::new(prepared, self.inputs.clone()))
    }
}

/// A compiled call: the tensors JS feeds each call (its inputs, the current values of the
/// variables it reads) come first, then those it always uses (constants, a GraphModel's
/// weights), which the graph holds.
pub struct CallGraph {
    graph: Arc<CompiledGraph>,
    fixed: Vec<TensorHandle>,
    /// Whether the call's outputs are known before it runs, every fed dim is known and no node
    /// fails on values, so that it may run on the executor: an error of the call is then still
    /// TF's shape error at the call, never one found later.
    runs_in_background: bool,
    /// A run queued to set the session up before the call needs it (`warm_up`), which a run
    /// on the JS thread waits for: two first runs at once would each set the session up.
    warming: Option<Arc<Job>>,
    /// Nodes built as one op of several recorded ones (`fusions`).
    fused_nodes: usize,
    /// Where the call runs as a function, when compiled in a device scope; else in the graph's
    /// own session.
    placed: Option<Arc<Placed>>,
}

impl CallGraph {
    /// Compiles `ops` (in the order they ran) over feeds like `fed` (their dtypes and shapes;
    /// `fed_dims`, when given, are the fed feeds' dims instead, -1 where calls differ) and the
    /// `fixed` tensors, fetching `fetches`. Refs to feeds count the fed ones first. With a
    /// `device` (the context's device scope), the graph is registered in `context` as a TF
    /// function that each run calls on that device; on another task's device, only the first
    /// `returned` fetches (all when `None`) come back here, the others staying there
    /// (`Placed::returned`).
    #[allow(clippy::too_many_arguments)]
    pub fn compile(
        plans: &[PreparedOp],
        ops: &[RecordedOp],
        fed: &[&TensorHandle],
        fed_dims: Option<&[Vec<i64>]>,
        fixed: Vec<TensorHandle>,
        fetches: &[Ref],
        returned: Option<usize>,
        context: &Context,
        device: Option<&CStr>,
        status: &Status,
    ) -> Result<CallGraph> {
        let returned = returned.unwrap_or(fetches.len());
        if returned > fetches.len() {
            return Err(Error::Invalid(format!(
                "{returned} of {} fetches cannot come back",
                fetches.len()
            )));
        }
        // The feeds' dtypes and dims: the fed ones, then the fixed ones.
        let mut specs = fed
            .iter()
            .copied()
            .chain(&fixed)
            .map(|handle| TensorSpec::of(handle, status))
            .collect::<Result<Vec<_>>>()?;
        if let Some(fed_dims) = fed_dims {
            generalize_dims(&mut specs[..fed.len()], fed_dims)?;
        }
        let mut feeds: Vec<Feed> = specs[..fed.len()]
            .iter()
            .map(|spec| Feed::Placeholder(spec.clone()))
            .collect();
        // Small integer tensors become constants of the graph (a slice's begin and size, a
        // reshape's shape, axes): shape inference reads a constant's values, not a feed's.
        let mut constant = Vec::with_capacity(fixed.len());
        for (handle, spec) in fixed.iter().zip(&specs[fed.len()..]) {
            let is_constant = small_integers(handle, spec.dtype, &spec.dims, status)?.is_some();
            feeds.push(if is_constant {
                Feed::Constant(handle)
            } else {
                Feed::Placeholder(spec.clone())
            });
            constant.push(is_constant);
        }
        let mut fails_on_values = false;
        let mut steps = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            let step = op.step(plans, index, feeds.len())?;
            fails_on_values |= step.prepared.node.is_some_and(|kind| kind.fails_on_values);
            steps.push(Some(step));
        }
        for &fetch in fetches {
            check_ref(fetch, ops.len(), feeds.len())?;
        }
        let mut fetches = fetches.to_vec();
        let recorded = fusions::Recorded {
            feeds: &specs,
            fixed: &fixed,
            shapes: ops.iter().map(|op| op.shapes.as_slice()).collect(),
        };
        // The fusions' own ops (`TfjsNodeRs>Elementwise`, ...) exist in this process only: a
        // function for another device is built of TF's ops as recorded.
        let fused_nodes = match device {
            None => fusions::fuse(&mut steps, &mut fetches, &recorded, status)?,
            Some(_) => 0,
        };
        let graph = CompiledGraph::build(&feeds, steps.into_iter(), &fetches, status)?;
        let placed = match device {
            None => None,
            Some(device) => {
                let number = FUNCTIONS.fetch_add(1, Ordering::Relaxed);
                let name = CString::new(format!("tfjs_node_rs_call_{number}"))
                    .map_err(|e| Error::Invalid(e.to_string()))?;
                let function = graph.to_function(&name, status)?;
                Some(Arc::new(Placed {
                    function: context.add_function(&function, name, status)?,
                    device: device.to_owned(),
                    outputs: graph.fetch_count(),
                    remote: !context.is_local(&device.to_string_lossy()),
                    returned,
                    context: context.shared(),
                }))
            }
        };
        // Fed dims of any size (-1) leave TF's shape errors to the run, which must be at the call.
        let fed_dims_known = specs[..fed.len()]
            .iter()
            .all(|spec| spec.dims.iter().all(|&d| d >= 0));
        let runs_in_background =
            !fails_on_values && fed_dims_known && graph.static_outputs().is_some();
        let fixed = fixed
            .into_iter()
            .zip(constant)
            .filter_map(|(handle, is_constant)| (!is_constant).then_some(handle))
            .collect();
        Ok(CallGraph {
            graph: Arc::new(graph),
            fixed,
            runs_in_background,
            warming: None,
            fused_nodes,
            placed,
        })
    }

    /// Whether the graph may compute a call whose ops JS recorded without running them: the
    /// shapes JS was given are the graph's.
    pub fn may_run_ahead(&self) -> bool {
        self.placed.is_none() && self.graph.every_shape_static()
    }

    /// Whether the call runs as a function on a device of a device scope (no session to set
    /// up here).
    pub fn is_placed(&self) -> bool {
        self.placed.is_some()
    }

    /// Whether the call runs on another task's device, waiting for the network.
    pub fn is_remote(&self) -> bool {
        self.placed.as_ref().is_some_and(|placed| placed.remote)
    }

    /// The outputs' dtypes and dims when the call may run on the executor (`background_work`).
    pub fn background_outputs(&self) -> Option<&[TensorSpec]> {
        self.graph
            .static_outputs()
            .filter(|_| self.runs_in_background)
    }

    /// The call as executor work on `fed` (a job's inputs, one per fed tensor). Any call may
    /// be work this way; only one whose outputs are known before it runs (`background_outputs`)
    /// may have its outputs read as pending tensors.
    pub fn background_work(&mut self, fed: Vec<Input>, status: &Status) -> Result<Work> {
        self.check_fed(fed.len())?;
        // The executor runs its jobs in order, so this one comes after any warm-up.
        self.warming = None;
        for (k, input) in fed.iter().enumerate() {
            if let Input::Ready(handle) = input {
                self.graph.check_feed(k, handle, status)?;
            }
        }
        let mut feeds = fed;
        for handle in &self.fixed {
            feeds.push(Input::Ready(handle.share(status)?));
        }
        let Some(placed) = self.placed.clone() else {
            return Ok(CompiledGraph::run_work(self.graph.clone(), feeds));
        };
        Ok(Work::new(move |status| {
            let inputs = Input::resolve_all(&feeds, status)?;
            let inputs: Vec<&TensorHandle> = inputs.iter().collect();
            placed.call(&inputs, status)
        }))
    }

    fn check_fed(&self, count: usize) -> Result<()> {
        if count == self.fed_count() {
            return Ok(());
        }
        Err(Error::Invalid(format!(
            "the call graph takes {} tensors, got {count}",
            self.fed_count()
        )))
    }

    /// How many tensors JS feeds per call.
    pub fn fed_count(&self) -> usize {
        self.graph.feed_count() - self.fixed.len()
    }

    /// Notes `job`, a run of the call whose outputs nobody reads, queued so that the session is
    /// set up before the call is needed.
    pub fn warm_up(&mut self, job: Arc<Job>) {
        self.warming = Some(job);
    }

    /// Runs the call on the `fed` tensors; returns the fetched outputs.
    pub fn run(&mut self, fed: &[&TensorHandle], status: &Status) -> Result<Vec<TensorHandle>> {
        self.check_fed(fed.len())?;
        if let Some(placed) = &self.placed {
            // The function's arguments are typed, not shaped: refuse what the graph would.
            for (k, handle) in fed.iter().enumerate() {
                self.graph.check_feed(k, handle, status)?;
            }
            let inputs: Vec<&TensorHandle> = fed.iter().copied().chain(&self.fixed).collect();
            return placed.call(&inputs, status);
        }
        if let Some(job) = self.warming.take() {
            // Only waited for: an error of the warm-up is this run's too, and this run reports
            // it on the call's own feeds.
            let _ = job.outputs(status);
        }
        let feeds: Vec<&TensorHandle> = fed.iter().copied().chain(&self.fixed).collect();
        self.graph.run(&feeds, status)
    }
}

/// Gives the fed feeds' `specs` the `dims` JS compiles them for: those of the tensors
/// recorded, with -1 where calls differ.
fn generalize_dims(specs: &mut [TensorSpec], dims: &[Vec<i64>]) -> Result<()> {
    if dims.len() != specs.len() {
        return Err(Error::Invalid(format!(
            "{} fed dims given for {} fed tensors",
            dims.len(),
            specs.len()
        )));
    }
    for (spec, dims) in specs.iter_mut().zip(dims) {
        let generalized = TensorSpec {
            dtype: spec.dtype,
            dims: dims.as_slice().into(),
        };
        if !generalized.admits_dims(&spec.dims) || dims.iter().any(|&d| d < -1) {
            return Err(Error::Invalid(format!(
                "fed dims {dims:?} do not fit the recorded tensor's {:?}",
                spec.dims
            )));
        }
        *spec = generalized;
    }
    Ok(())
}

fn unknown_call(id: u32) -> Error {
    Error::Invalid(format!("call graph {id} does not exist"))
}

/// The env's call graphs by id.
#[derive(Default)]
pub struct CallGraphs {
    graphs: HashMap<u32, CallGraph>,
    next_id: u32,
    /// Fused nodes of the graphs inserted so far (`fusions`).
    pub fused_nodes: u64,
}

impl CallGraphs {
    pub fn insert(&mut self, graph: CallGraph) -> Result<u32> {
        if self.graphs.len() >= MAX_CALL_GRAPHS {
            return Err(Error::Range(format!(
                "{MAX_CALL_GRAPHS} call graphs are alive: drop some first"
            )));
        }
        self.next_id = self.next_id.wrapping_add(1);
        self.fused_nodes += graph.fused_nodes as u64;
        self.graphs.insert(self.next_id, graph);
        Ok(self.next_id)
    }

    pub fn get(&self, id: u32) -> Result<&CallGraph> {
        self.graphs.get(&id).ok_or_else(|| unknown_call(id))
    }

    pub fn get_mut(&mut self, id: u32) -> Result<&mut CallGraph> {
        self.graphs.get_mut(&id).ok_or_else(|| unknown_call(id))
    }

    pub fn remove(&mut self, id: u32) -> bool {
        self.graphs.remove(&id).is_some()
    }

    pub fn len(&self) -> usize {
        self.graphs.len()
    }

    pub fn clear(&mut self) {
        self.graphs.clear();
    }
}
