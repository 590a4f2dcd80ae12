//! The state of deferred execution (`super::deferred`): the trie of runs seen before, with
//! their compiled graphs, and the run being recorded now.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Arc;
use std::time::Duration;

use crate::graphs::compiled::CompiledGraph;
use crate::graphs::nodes::Ref;
use crate::tensor_spec::TensorSpec;
use crate::tensor_table::IdHasher;
use crate::tf::handle::TensorHandle;

/// An input as the trie keys it: a tensor from outside the run is described at its first use.
#[derive(PartialEq, Eq, Hash)]
pub(super) enum InputKey {
    Seen(Ref),
    New {
        dtype: usize,
        dims: Vec<i64>,
        integers: Option<Vec<i64>>,
    },
}

#[derive(PartialEq, Eq, Hash)]
pub(super) struct StepKey {
    pub(super) parent: u32,
    pub(super) plan: u32,
    pub(super) inputs: Vec<InputKey>,
}

/// A run's graph nodes, for one set of outputs still held at its end.
pub(super) struct Compiled {
    pub(super) live: Vec<(u32, u32)>,
    /// `None`: building it failed, so the run replays op by op.
    pub(super) graph: Option<Arc<CompiledGraph>>,
    /// The graph's first run is queued on the executor, or done (`run_compiled`).
    pub(super) set_up_queued: bool,
}

/// An op of a run, the same every time the run is seen.
pub(super) struct TrieNode {
    pub(super) plan: u32,
    pub(super) inputs: Box<[Ref]>,
    pub(super) outputs: Box<[TensorSpec]>,
    /// Times a run ended here.
    pub(super) ends: u32,
    /// Time spent replaying whole runs that ended here op by op (`end_run`).
    pub(super) replayed: Duration,
    /// A run of at least `MIN_COMPILED_LENGTH` ops has passed through here, so deferring pays.
    pub(super) on_long_run: bool,
    pub(super) compiled: Vec<Compiled>,
}

pub(super) const ROOT: u32 = 0;

/// Where a deferred op's input tensor will come from when it runs.
pub(super) enum Source {
    External(u32),
    /// A tensor that had run already when the op was recorded.
    Ready(TensorHandle),
    /// Output `output` of the `index`th deferred op of the run.
    Deferred {
        index: u32,
        output: u32,
    },
}

pub(super) struct DeferredOp {
    pub(super) plan: u32,
    pub(super) sources: Vec<Source>,
    pub(super) output_ids: Vec<u64>,
}

/// The run being recorded.
pub(super) struct Run {
    /// Trie node of each op so far, by depth.
    pub(super) nodes: Vec<u32>,
    /// Ids of the run's outputs and of the outside tensors it uses.
    pub(super) by_id: HashMap<u64, Ref, BuildHasherDefault<IdHasher>>,
    pub(super) externals: Vec<TensorHandle>,
    /// Ops not run yet: the last `deferred.len()` of `nodes`.
    pub(super) deferred: Vec<DeferredOp>,
    /// No op of the run has run yet (so one graph can run all of it, and `deferred[i]` is the
    /// op at depth `i`).
    pub(super) all_deferred: bool,
}

impl Run {
    pub(super) fn new() -> Run {
        Run {
            nodes: Vec::new(),
            by_id: HashMap::default(),
            externals: Vec::new(),
            deferred: Vec::new(),
            all_deferred: true,
        }
    }

    pub(super) fn node(&self) -> u32 {
        self.nodes.last().copied().unwrap_or(ROOT)
    }

    pub(super) fn first_deferred_depth(&self) -> usize {
        self.nodes.len() - self.deferred.len()
    }
}

/// What deferring did, for `stats()`.
#[derive(Default)]
pub(super) struct DeferredCounters {
    pub(super) deferred_ops: u64,
    /// Runs turned into graph nodes.
    pub(super) compiled_runs: u64,
    /// Session runs of those nodes.
    pub(super) graph_runs: u64,
}

/// The env's deferred runs: the trie of runs seen before and the run being deferred now.
pub(super) struct DeferredRuns {
    pub(super) enabled: bool,
    /// Deferring is paused while a whole call is recorded (`js/graphs/`): the call becomes one
    /// graph from its third run, so a deferred run compiled on its second would be wasted.
    pub(super) paused: bool,
    pub(super) trie: Vec<TrieNode>,
    pub(super) children: HashMap<StepKey, u32>,
    pub(super) run: Option<Run>,
    pub(super) counters: DeferredCounters,
}

impl DeferredRuns {
    pub fn new() -> DeferredRuns {
        DeferredRuns {
            enabled: std::env::var("TFJS_NODE_RS_DEFER").map_or(true, |v| v != "0"),
            paused: false,
            trie: vec![root_node()],
            children: HashMap::new(),
            run: None,
            counters: DeferredCounters::default(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    pub fn pause(&mut self, paused: bool) {
        self.paused = paused;
    }

    /// Whether a whole call is being recorded (`pause`).
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Whether `id` is an output of the run being recorded (so using it elsewhere ends the run).
    pub fn produced(&self, id: u64) -> bool {
        self.run
            .as_ref()
            .is_some_and(|run| matches!(run.by_id.get(&id), Some(Ref::Node { .. })))
    }

    /// Forgets every learned run, with the sessions of the compiled ones.
    pub(super) fn start_over(&mut self) {
        self.trie = vec![root_node()];
        self.children.clear();
        self.run = None;
    }

    /// Drops the run without running it (env shutdown).
    pub fn clear(&mut self) {
        self.run = None;
    }
}

fn root_node() -> TrieNode {
    TrieNode {
        plan: u32::MAX,
        inputs: Box::new([]),
        outputs: Box::new([]),
        ends: 0,
        replayed: Duration::ZERO,
        on_long_run: false,
        compiled: Vec::new(),
    }
}
