//! Running op calls: the one path from the binding's fast path to TF. A prepared op
//! (`eager::PreparedOp`: name, attrs, checked signature) called on tensor ids either
//! - becomes an executor job, when waiting for it would hold the JS thread (`background`);
//! - is deferred into the run being recorded, to run later as one graph (`deferred`);
//! - or runs now, eagerly (`eager`).
//!
//! Its outputs reach JS in the io format (`io`). `attrs` and `validate` check the op's attrs
//! and inputs against its definition once, when it is prepared.

pub mod attrs;
mod background;
pub mod deferred;
mod eager;
mod io;
pub mod validate;

pub use eager::{run_ids, PreparedOp};
pub use io::{adopt_output, output_room, too_small, write_output, write_outputs};
pub use validate::OpChecks;

use crate::env_state::EnvState;
use crate::error::Result;

/// Runs prepared op `plan` (of `plans`) on `ids`, writing its outputs into `io` as
/// `runPreparedOp` returns them. Returns the output count.
pub fn run_prepared(
    state: &mut EnvState,
    plans: &[PreparedOp],
    plan: u32,
    ids: &[u64],
    room: i64,
    io: &mut [f64],
) -> Result<u32> {
    if let Some(count) = background::run_in_background(state, plans, plan, ids, room, io)? {
        return Ok(count);
    }
    deferred::run_or_defer(state, plans, plan, ids, room, io)
}
