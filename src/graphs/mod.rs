//! Graphs of prepared ops, run as one session call: what an op becomes as a node (`nodes`), a
//! built graph in its own session (`compiled`), and whole calls compiled from what the JS layer
//! recorded of them (`calls`), with chains of their ops fused into single nodes (`fusions`),
//! single ops as graphs the executor can run (`single_ops`), and a recorded call as a
//! SavedModel's graph (`export`).
//! `crate::ops::deferred` compiles deferred runs of ops the same way.

pub mod calls;
pub mod compiled;
pub mod export;
mod fusions;
pub mod nodes;
pub mod single_ops;
