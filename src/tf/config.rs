//! The TF configuration of the process: one serialized `ConfigProto` (built by
//! js/configure.js) that every context and SavedModel session is made with. It is fixed before
//! the first context: TF sizes its process-wide intra-op pool from the first device's options
//! (the pool is shared by every context and session after it), so a later change could not
//! take effect.

use std::sync::{Mutex, OnceLock, PoisonError};

use crate::error::{Error, Result};

/// What `configure` fixed.
#[derive(Clone, Default, PartialEq, Eq, Debug)]
pub struct RuntimeConfig {
    /// A serialized `ConfigProto`; empty: TF's defaults.
    pub proto: Vec<u8>,
    /// Threads of TF's intra-op pool (and of this package's kernel pool); 0: one per core.
    pub intra_op_threads: u32,
    /// Threads of TF's inter-op pools; 0: one per core.
    pub inter_op_threads: u32,
}

/// Set once: by `configure`, or with the defaults by the first context.
static FIXED: OnceLock<RuntimeConfig> = OnceLock::new();
/// Set before `FIXED`, until the first context fixes it.
static REQUESTED: Mutex<Option<RuntimeConfig>> = Mutex::new(None);

/// Requests `config` for the contexts and sessions to come. Once the first context exists,
/// only the configuration in force is accepted.
pub fn configure(config: RuntimeConfig) -> Result<()> {
    if let Some(fixed) = FIXED.get() {
        if *fixed != config {
            return Err(Error::Invalid(format!(
                "TensorFlow's runtime already started with {}: threads and GPU options are \
                 fixed when the first context is made",
                describe(fixed)
            )));
        }
        return Ok(());
    }
    *REQUESTED.lock().unwrap_or_else(PoisonError::into_inner) = Some(config);
    Ok(())
}

/// The configuration in force, fixed by this call if no context fixed it before.
pub fn fixed() -> &'static RuntimeConfig {
    FIXED.get_or_init(|| {
        REQUESTED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default()
    })
}

fn describe(config: &RuntimeConfig) -> String {
    let threads = |n: u32| {
        if n == 0 {
            "one per core".to_string()
        } else {
            n.to_string()
        }
    };
    format!(
        "intra-op threads {}, inter-op threads {}",
        threads(config.intra_op_threads),
        threads(config.inter_op_threads)
    )
}
