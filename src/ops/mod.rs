//! The op runtime: the one path from `api/` to TF. `Runtime` owns the env's tensors, op
//! cache, deferred runs, call graphs, executor and TF context, all private, and offers the
//! operations the binding's calls need. A prepared op (`op_plan::PreparedOp`: name, attrs,
//! checked signature) called on tensor ids (`OpCall`) either
//! - becomes an executor job, in a model's first call while its JS goes on (`pipeline`), or when
//!   waiting for it would hold the JS thread (`background`);
//! - is deferred into the run being recorded, to run later as one graph (`deferred`);
//! - or runs now, eagerly (`eager`).
//!
//! Its outputs reach JS in the io format (`io`). The other operations: tensors (`tensors`),
//! whole calls as graphs (`calls`), SavedModel runs (`saved_models`), waiting for executor jobs
//! (`jobs`) and changing the context (`cluster`).

mod background;
mod calls;
mod cluster;
mod deferred;
mod deferred_runs;
mod eager;
mod io;
mod jobs;
mod pipeline;
mod run;
mod runtime;
mod saved_models;
mod tensors;

pub use deferred::MAX_SET_UP_ELEMENTS_PER_OP;
pub use runtime::Runtime;
pub use tensors::OutputInfo;
