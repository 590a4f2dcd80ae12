//! Deferred execution. TF's eager dispatch costs 5–30 µs per op in a model and about 1 µs per
//! node of a graph run in the calling thread, and a model's predict or training step repeats
//! the same run of ops every call. So runs of pure ops are recorded, keyed by what determines
//! their outputs' shapes (op, attrs, input wiring, input dtypes and shapes, the values of small
//! integer inputs), in a trie of runs seen before:
//!
//! - an op the trie does not know runs eagerly at once, and its outputs' shapes are learned;
//! - an op it knows is deferred, if a run through it has ended long enough to be worth a graph
//!   (`MIN_COMPILED_LENGTH` ops): JS gets ids and shapes at once, the tensors come later. Other
//!   known ops run at once, as deferring a short run and replaying it only adds to its cost;
//! - a run ends when anything outside it uses one of its outputs (a read, an op that is not
//!   deferred). Its deferred ops then run one by one, timed, until those replays have cost
//!   about what setting up a graph of the run would (`SET_UP_PER_NODE`); then the run is
//!   compiled, and from its graph's first run on (set up on the executor for small ops, so
//!   that this thread never waits for TF's session set-up) it is one `TF_SessionRun`. A run
//!   that ends for an asynchronous read (`in_background`) is compiled from its second end, as
//!   its graph runs on the executor: replaying it here would hold the JS thread. Ops whose
//!   outputs nobody holds are not run at all.
//!
//! Deferring never changes what an op computes or whether it fails: only ops whose outcome
//! depends on nothing but the key are deferred (no integer tensors computed inside the run,
//! no stateful or value-checking ops), and a deferred op has run before with the same key.
//! `TFJS_NODE_RS_DEFER=0` turns deferring off.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::deferred_runs::{Compiled, DeferredOp, InputKey, Run, Source, StepKey, TrieNode, ROOT};
use super::runtime::{OpCall, Runtime};
use super::{eager, io};
use crate::error::{Error, Result};
use crate::executor::Input;
use crate::graphs::compiled::{CompiledGraph, Feed};
use crate::graphs::nodes::{NodeOp, Ref};
use crate::op_plan::PreparedOp;
use crate::tensor_spec::{small_integers, TensorSpec};
use crate::tensor_table::TensorTable;
use crate::tf::dtype::{Layout, DTYPES};
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;

/// A run stops growing at this many ops; later ops run at once until it ends.
const MAX_RUN_LENGTH: usize = 4096;
/// Past this many known ops the trie starts over (a program whose shapes never repeat).
const MAX_TRIE_NODES: usize = 1 << 16;
/// Runs compiled into graphs at most; past it, runs replay op by op.
const MAX_COMPILED_RUNS: u64 = 1024;
/// Shorter runs replay op by op: a session run costs about as much as a few eager ops.
const MIN_COMPILED_LENGTH: usize = 8;
/// What a compiled run's first run costs per node, about: TF sets its session up (placement,
/// graph passes, kernels). Measured here: 31 us per node for a recurrent predict's 269 nodes,
/// 57-68 us for the 661 small ops of a recurrent layer's orthogonal initializer, which replay
/// eagerly in 2.6 ms, so that its graph (38-45 ms to set up) pays only after 15 replays.
/// A run is compiled once its replays have taken as long as that set-up would (`end_run`):
/// a run that repeats a few times never pays for a graph, one that keeps repeating pays at
/// most twice what the graph would have cost it from the start.
const SET_UP_PER_NODE: Duration = Duration::from_micros(40);
/// A graph whose ops make at most this many elements per op, on average, has its first run
/// (the session set-up, `SET_UP_PER_NODE`) on the executor before it is needed, so that the JS
/// thread never waits for it: a compiled deferred run's while the run replays here
/// (`run_compiled`), a call graph's while the call's JS goes on (js/graphs/call_graphs.js,
/// which reads it as `binding.MAX_SET_UP_ELEMENTS_PER_OP`). Graphs of larger ops compute for
/// longer than their set-up takes, and setting them up would compute them once more, on the
/// cores their own ops use. Measured on call graphs: calls with up to 10k elements per op
/// (RNN and small dense training steps) set up ahead cut their second and third calls by a
/// quarter to a half; calls with 120k and more (convolutions of 32 filters, dense layers of
/// 4000 units) took longer.
pub const MAX_SET_UP_ELEMENTS_PER_OP: u32 = 1 << 15;

impl Runtime {
    /// Makes `id` hold its tensor: if a deferred run produced it, the run ends and runs; if
    /// the executor computes it, its job runs here or is waited for.
    pub fn settle(&mut self, plans: &[PreparedOp], id: u64) -> Result<()> {
        settle(self, plans, id, false)?;
        self.tensors.settle_pending(id, &self.status)
    }

    /// Makes sure `id` will hold its tensor without waiting for it: if a deferred run
    /// produced it, the run ends, as an executor job when it is one graph run.
    pub fn settle_in_background(&mut self, plans: &[PreparedOp], id: u64) -> Result<()> {
        let in_background = self.executor.enabled;
        settle(self, plans, id, in_background)
    }

    /// Runs the deferred run in progress, where its ops were issued (jobs queued go on).
    pub fn end_deferred_run(&mut self, plans: &[PreparedOp]) -> Result<()> {
        end_run(self, plans, false)
    }

    /// Runs every deferred op and executor job now, so that each tensor is computed and no
    /// job is left running (before the context is reconfigured under them).
    pub fn finish_all_work(&mut self, plans: &[PreparedOp]) -> Result<()> {
        end_run(self, plans, false)?;
        self.executor.wait_idle();
        self.tensors.settle_all_pending(&self.status)
    }
}

/// What an op call becomes.
enum Step {
    /// Runs eagerly outside any run.
    Eager,
    /// Known, on a long run: deferred, reaching trie node `child`.
    Defer { child: u32, new: Vec<u64> },
    /// Runs eagerly now, as part of the run, at `at` in the trie.
    Now { at: TrieStep, new: Vec<u64> },
}

/// Runs `call`, deferring it when it can (never on a pending input, an executor job's output;
/// never in a device scope, whose ops must run where it says, not in this process's sessions),
/// writing its outputs into `io`. Returns the output count.
pub fn run_or_defer(state: &mut Runtime, call: &OpCall, io: &mut [f64]) -> Result<u32> {
    let step = if state.deferred.enabled
        && !state.deferred.paused
        && state.context.device_scope().is_none()
        && call.prepared().node.is_some_and(|kind| kind.deferrable)
        && !call.pending
    {
        classify(state, call.plan, call.ids)?
    } else {
        Step::Eager
    };
    match step {
        Step::Eager => {
            for &id in call.ids {
                state.settle(call.plans, id)?;
            }
            eager::run_ids(state, call.prepared(), call.ids, call.room)?;
            io::write_outputs(state, io)
        }
        Step::Defer { child, new } => defer(state, call, child, new, io),
        Step::Now { at, new } => run_now(state, call, at, new, io),
    }
}

/// Ends the current run if `id` is one of its outputs, so that `id` holds its tensor, or (`in_background`,
/// when the run is one graph run) is an output of the executor's job running it.
pub fn settle(
    state: &mut Runtime,
    plans: &[PreparedOp],
    id: u64,
    in_background: bool,
) -> Result<()> {
    if state.deferred.produced(id) {
        end_run(state, plans, in_background)?;
    }
    Ok(())
}

/// Builds the trie key of the call, or `Step::Eager` when an input rules deferring out.
fn classify(state: &Runtime, plan: u32, ids: &[u64]) -> Result<Step> {
    let deferred = &state.deferred;
    if deferred.trie.len() >= MAX_TRIE_NODES
        || deferred
            .run
            .as_ref()
            .is_some_and(|r| r.nodes.len() >= MAX_RUN_LENGTH)
    {
        return Ok(Step::Eager);
    }
    let run = deferred.run.as_ref();
    let mut inputs = Vec::with_capacity(ids.len());
    let mut new: Vec<u64> = Vec::new();
    let known_externals = run.map_or(0, |r| r.externals.len());
    for &id in ids {
        let seen = run.and_then(|r| r.by_id.get(&id).copied());
        match seen {
            Some(Ref::Node {
                index: depth,
                output,
            }) => {
                let node = &deferred.trie[run.map_or(ROOT, |r| r.nodes[depth as usize]) as usize];
                if DTYPES[node.outputs[output as usize].dtype].is_integer() {
                    return Ok(Step::Eager);
                }
                inputs.push(InputKey::Seen(Ref::Node {
                    index: depth,
                    output,
                }));
            }
            Some(external) => inputs.push(InputKey::Seen(external)),
            None => {
                if let Some(k) = new.iter().position(|&n| n == id) {
                    let ordinal = (known_externals + k) as u32;
                    inputs.push(InputKey::Seen(Ref::Feed(ordinal)));
                    continue;
                }
                match describe_external(state.tensors.handle(id)?, &state.status)? {
                    Some(key) => inputs.push(key),
                    None => return Ok(Step::Eager),
                }
                new.push(id);
            }
        }
    }
    let key = StepKey {
        parent: run.map_or(ROOT, Run::node),
        plan,
        inputs,
    };
    Ok(match deferred.children.get(&key) {
        Some(&child) if deferred.trie[child as usize].on_long_run => Step::Defer { child, new },
        Some(&child) => Step::Now {
            at: TrieStep::Follow(child),
            new,
        },
        None => Step::Now {
            at: TrieStep::Learn(key),
            new,
        },
    })
}

/// The key of an outside tensor at its first use; `None` when it keeps the op eager.
fn describe_external(handle: &TensorHandle, status: &Status) -> Result<Option<InputKey>> {
    let Ok(dtype) = handle.dtype_index() else {
        return Ok(None);
    };
    let mut dims = Vec::new();
    handle.dims_into(&mut dims, status)?;
    let integers = match DTYPES[dtype].layout {
        Layout::Strings | Layout::Opaque => return Ok(None),
        Layout::Numeric { .. } if DTYPES[dtype].is_integer() => {
            match small_integers(handle, dtype, &dims, status)? {
                Some(values) => Some(values),
                None => return Ok(None),
            }
        }
        Layout::Numeric { .. } => None,
    };
    Ok(Some(InputKey::New {
        dtype,
        dims,
        integers,
    }))
}

/// Registers the call's new outside tensors with the run (starting one if needed).
fn adopt_externals(state: &mut Runtime, new: &[u64]) -> Result<()> {
    let run = state.deferred.run.get_or_insert_with(Run::new);
    for &id in new {
        let handle = state.tensors.handle(id)?.share(&state.status)?;
        run.by_id.insert(id, Ref::Feed(run.externals.len() as u32));
        run.externals.push(handle);
    }
    Ok(())
}

/// The error for a run that `adopt_externals` should have started (never expected).
fn no_run() -> Error {
    Error::Invalid("no run is being recorded".into())
}

fn input_ref(run: &Run, id: u64) -> Result<Ref> {
    run.by_id
        .get(&id)
        .copied()
        .ok_or_else(|| Error::Invalid(format!("tensor id {id} is not part of the run")))
}

/// Defers a known op of a long run: its outputs get ids now and tensors when the run ends.
fn defer(
    state: &mut Runtime,
    call: &OpCall,
    child: u32,
    new: Vec<u64>,
    io: &mut [f64],
) -> Result<u32> {
    let OpCall { plan, ids, .. } = *call;
    io::check_room(&state.deferred.trie[child as usize].outputs, io)?;
    adopt_externals(state, &new)?;
    let deferred = &mut state.deferred;
    let run = deferred.run.as_mut().ok_or_else(no_run)?;
    let first_deferred = run.first_deferred_depth();
    let mut sources = Vec::with_capacity(ids.len());
    for &id in ids {
        sources.push(match input_ref(run, id)? {
            Ref::Feed(k) => Source::External(k),
            Ref::Node {
                index: depth,
                output,
            } if depth as usize >= first_deferred => Source::Deferred {
                index: depth - first_deferred as u32,
                output,
            },
            Ref::Node { .. } => Source::Ready(state.tensors.handle(id)?.share(&state.status)?),
        });
    }
    let node = &deferred.trie[child as usize];
    let depth = run.nodes.len() as u32;
    let mut output_ids = Vec::with_capacity(node.outputs.len());
    let mut at = 0;
    for (j, meta) in node.outputs.iter().enumerate() {
        let id = state.tensors.insert_deferred(meta.byte_count());
        run.by_id.insert(
            id,
            Ref::Node {
                index: depth,
                output: j as u32,
            },
        );
        output_ids.push(id);
        at += io::write_output(&mut io[at..], id, Some(meta.dtype), &meta.dims);
    }
    run.deferred.push(DeferredOp {
        plan,
        sources,
        output_ids,
    });
    run.nodes.push(child);
    deferred.counters.deferred_ops += 1;
    Ok(node.outputs.len() as u32)
}

/// Where an op that runs at once goes in the trie.
enum TrieStep {
    /// Known, on no long run yet: follows to this node.
    Follow(u32),
    /// Unknown: learned under this key.
    Learn(StepKey),
}

/// Runs an op at once (after the run's deferred ops) and adds it to the run, learning its
/// outputs' shapes when the trie does not know it yet.
fn run_now(
    state: &mut Runtime,
    call: &OpCall,
    at: TrieStep,
    new: Vec<u64>,
    io: &mut [f64],
) -> Result<u32> {
    let OpCall {
        plans, ids, room, ..
    } = *call;
    adopt_externals(state, &new)?;
    run_deferred(state, plans)?;
    let plan = match &at {
        TrieStep::Follow(child) => state.deferred.trie[*child as usize].plan,
        TrieStep::Learn(key) => key.plan,
    };
    eager::run_ids(state, &plans[plan as usize], ids, room)?;
    let child = match at {
        TrieStep::Follow(child) => child,
        TrieStep::Learn(key) => match learn(state, ids, key)? {
            Some(child) => child,
            None => {
                // Not a dtype the binding knows: leave the op out of the run.
                state.deferred.run = None;
                return io::write_outputs(state, io);
            }
        },
    };
    let count = io::write_outputs(state, io)?;
    extend_run(state, child, count)?;
    Ok(count)
}

/// Adds the op that just ran (its outputs still in `state.scratch.outputs`) to the trie under
/// `key`; `None` when an output has a dtype the binding does not know.
fn learn(state: &mut Runtime, ids: &[u64], key: StepKey) -> Result<Option<u32>> {
    let mut outputs = Vec::with_capacity(state.scratch.outputs.len());
    let mut dims = Vec::new();
    for handle in &state.scratch.outputs {
        dims.clear();
        handle.dims_into(&mut dims, &state.status)?;
        let Ok(dtype) = handle.dtype_index() else {
            return Ok(None);
        };
        outputs.push(TensorSpec {
            dtype,
            dims: dims.as_slice().into(),
        });
    }
    let deferred = &mut state.deferred;
    let run = deferred.run.as_ref().ok_or_else(no_run)?;
    let inputs = ids
        .iter()
        .map(|&id| input_ref(run, id))
        .collect::<Result<Vec<_>>>()?;
    let child = deferred.trie.len() as u32;
    deferred.trie.push(TrieNode {
        plan: key.plan,
        inputs: inputs.into(),
        outputs: outputs.into(),
        ends: 0,
        replayed: Duration::ZERO,
        on_long_run: false,
        compiled: Vec::new(),
    });
    deferred.children.insert(key, child);
    Ok(Some(child))
}

/// Adds trie node `child` to the run, its outputs being the `count` tensors made last.
fn extend_run(state: &mut Runtime, child: u32, count: u32) -> Result<()> {
    let run = state.deferred.run.as_mut().ok_or_else(no_run)?;
    let depth = run.nodes.len() as u32;
    let last = state.tensors.last_id();
    for j in 0..count as u64 {
        run.by_id.insert(
            last + 1 - count as u64 + j,
            Ref::Node {
                index: depth,
                output: j as u32,
            },
        );
    }
    run.nodes.push(child);
    Ok(())
}

/// Ends the run: counts it at its last op and computes what its held outputs need.
pub fn end_run(state: &mut Runtime, plans: &[PreparedOp], in_background: bool) -> Result<()> {
    let Some(mut run) = state.deferred.run.take() else {
        return Ok(());
    };
    let end = run.node();
    let trie = &mut state.deferred.trie;
    trie[end as usize].ends += 1;
    if run.nodes.len() >= MIN_COMPILED_LENGTH && !trie[end as usize].on_long_run {
        // Marking whole paths from the root keeps every ancestor of a marked node marked.
        for &node in &run.nodes {
            trie[node as usize].on_long_run = true;
        }
    }
    let node = &state.deferred.trie[end as usize];
    let result = if run.deferred.is_empty() {
        Ok(())
    } else if run.all_deferred
        && run.nodes.len() >= MIN_COMPILED_LENGTH
        && node.ends >= 2
        && (in_background
            || !node.compiled.is_empty()
            || node.replayed >= SET_UP_PER_NODE * run.nodes.len() as u32)
    {
        run_compiled(state, plans, &mut run, in_background)
    } else if run.all_deferred {
        let start = Instant::now();
        let replayed = replay(state, plans, &mut run);
        state.deferred.trie[end as usize].replayed += start.elapsed();
        replayed
    } else {
        replay(state, plans, &mut run)
    };
    if state.deferred.trie.len() >= MAX_TRIE_NODES {
        state.deferred.start_over();
    }
    result
}

/// Runs the run's deferred ops one by one, leaving the run open.
fn run_deferred(state: &mut Runtime, plans: &[PreparedOp]) -> Result<()> {
    let Some(mut run) = state.deferred.run.take() else {
        return Ok(());
    };
    let result = replay(state, plans, &mut run);
    state.deferred.run = Some(run);
    result
}

/// The deferred ops some held output depends on.
fn needed_ops(run: &Run, tensors: &TensorTable) -> Vec<bool> {
    let mut needed: Vec<bool> = run
        .deferred
        .iter()
        .map(|op| op.output_ids.iter().any(|&id| tensors.contains(id)))
        .collect();
    for i in (0..run.deferred.len()).rev() {
        if needed[i] {
            for source in &run.deferred[i].sources {
                if let Source::Deferred { index, .. } = source {
                    needed[*index as usize] = true;
                }
            }
        }
    }
    needed
}

/// Runs the deferred ops eagerly, in order, skipping those no held output needs.
fn replay(state: &mut Runtime, plans: &[PreparedOp], run: &mut Run) -> Result<()> {
    let needed = needed_ops(run, &state.tensors);
    let deferred = std::mem::take(&mut run.deferred);
    run.all_deferred = false;
    let mut produced: Vec<Vec<Option<TensorHandle>>> = Vec::with_capacity(deferred.len());
    for (op, &needed) in deferred.iter().zip(&needed) {
        if !needed {
            produced.push(Vec::new());
            continue;
        }
        let prepared = &plans[op.plan as usize];
        let inputs = op.sources.iter().map(|source| match source {
            Source::External(k) => Ok(&run.externals[*k as usize]),
            Source::Ready(handle) => Ok(handle),
            Source::Deferred { index, output } => produced[*index as usize]
                .get(*output as usize)
                .and_then(Option::as_ref)
                .ok_or_else(|| Error::Invalid("a deferred input was not computed".into())),
        });
        let mut outputs = Vec::with_capacity(op.output_ids.len());
        eager::run_handles(
            &mut state.ops,
            &state.context,
            &state.status,
            &mut outputs,
            prepared,
            inputs,
            op.output_ids.len() as i64,
        )?;
        produced.push(outputs.into_iter().map(Some).collect());
    }
    for (op, outputs) in deferred.iter().zip(produced.iter_mut()) {
        for (&id, handle) in op.output_ids.iter().zip(outputs.iter_mut()) {
            if let Some(handle) = handle.take() {
                state.tensors.fill(id, handle);
            }
        }
    }
    Ok(())
}

/// Runs the whole run as one session run of its graph (built on first use), here or as an
/// executor job (`in_background`); replays it when it has no graph.
fn run_compiled(
    state: &mut Runtime,
    plans: &[PreparedOp],
    run: &mut Run,
    in_background: bool,
) -> Result<()> {
    let mut live = Vec::new();
    let mut live_ids = Vec::new();
    for (depth, op) in run.deferred.iter().enumerate() {
        for (j, &id) in op.output_ids.iter().enumerate() {
            if state.tensors.contains(id) {
                live.push((depth as u32, j as u32));
                live_ids.push(id);
            }
        }
    }
    if live.is_empty() {
        // Nothing the run computed is held any more.
        run.deferred.clear();
        return Ok(());
    }
    let end = run.node() as usize;
    let known = state.deferred.trie[end]
        .compiled
        .iter()
        .position(|c| c.live == live);
    let index = match known {
        Some(index) => index,
        None => {
            let graph = if state.deferred.counters.compiled_runs < MAX_COMPILED_RUNS {
                compile(state, plans, run, &live).ok().map(Arc::new)
            } else {
                None
            };
            let compiled = &mut state.deferred.trie[end].compiled;
            compiled.push(Compiled {
                live,
                graph,
                set_up_queued: false,
            });
            compiled.len() - 1
        }
    };
    let Some(graph) = state.deferred.trie[end].compiled[index].graph.clone() else {
        return replay(state, plans, run);
    };
    if !in_background
        && !graph.has_run()
        && state.executor.enabled
        && elements_per_op(&state.deferred.trie, run) <= u64::from(MAX_SET_UP_ELEMENTS_PER_OP)
    {
        // Its first run would cost this thread more than replaying the ops: it runs on the
        // executor (fed this run's inputs, its outputs dropped), and the run replays. Later
        // runs take the graph once that first run is done, and replay until then.
        let compiled = &mut state.deferred.trie[end].compiled[index];
        if !compiled.set_up_queued {
            compiled.set_up_queued = true;
            let feeds = job_feeds(run, &state.status)?;
            state
                .executor
                .submit(CompiledGraph::run_work(graph, feeds))?;
        }
        return replay(state, plans, run);
    }
    let compiled = &state.deferred.trie[end].compiled[index];
    if in_background {
        let feeds = job_feeds(run, &state.status)?;
        let job = state
            .executor
            .submit(CompiledGraph::run_work(graph, feeds))?;
        // The run is all deferred: depth `d` is the run's `d`th trie node, which knows the shapes.
        for (k, (&id, &(depth, output))) in live_ids.iter().zip(&compiled.live).enumerate() {
            let node = &state.deferred.trie[run.nodes[depth as usize] as usize];
            let spec = node.outputs[output as usize].clone();
            state.tensors.make_pending(id, job.clone(), k, spec);
        }
        run.deferred.clear();
        state.deferred.counters.graph_runs += 1;
        return Ok(());
    }
    let feeds: Vec<&TensorHandle> = run.externals.iter().collect();
    let computed = graph.run(&feeds, &state.status).ok();
    let Some(outputs) = computed.filter(|outputs| outputs.len() == live_ids.len()) else {
        return replay(state, plans, run);
    };
    for (&id, handle) in live_ids.iter().zip(outputs) {
        state.tensors.fill(id, handle);
    }
    run.deferred.clear();
    state.deferred.counters.graph_runs += 1;
    Ok(())
}

/// The run's inputs as an executor job's.
fn job_feeds(run: &Run, status: &Status) -> Result<Vec<Input>> {
    run.externals
        .iter()
        .map(|handle| Ok(Input::Ready(handle.share(status)?)))
        .collect()
}

/// The elements the run's ops make, per op.
fn elements_per_op(trie: &[TrieNode], run: &Run) -> u64 {
    let elements: u64 = run
        .nodes
        .iter()
        .flat_map(|&node| trie[node as usize].outputs.iter())
        .map(TensorSpec::elements)
        .sum();
    elements / run.nodes.len().max(1) as u64
}

/// Builds a graph of the run's ops that `live` needs, in a session of its own.
fn compile(
    state: &mut Runtime,
    plans: &[PreparedOp],
    run: &Run,
    live: &[(u32, u32)],
) -> Result<CompiledGraph> {
    let deferred = &state.deferred;
    let feeds = run
        .externals
        .iter()
        .map(|handle| Ok(Feed::Placeholder(TensorSpec::of(handle, &state.status)?)))
        .collect::<Result<Vec<_>>>()?;
    // The run is all deferred, so its deferred ops are its ops by depth.
    let needed = needed_ops(run, &state.tensors);
    let steps = run.nodes.iter().zip(&needed).map(|(&node, &needed)| {
        needed.then(|| {
            let trie_node = &deferred.trie[node as usize];
            NodeOp::new(&plans[trie_node.plan as usize], trie_node.inputs.to_vec())
        })
    });
    let fetches: Vec<Ref> = live
        .iter()
        .map(|&(depth, output)| Ref::Node {
            index: depth,
            output,
        })
        .collect();
    let graph = CompiledGraph::build(&feeds, steps, &fetches, &state.status)?;
    state.deferred.counters.compiled_runs += 1;
    Ok(graph)
}
