//! `startProfile`, `stopProfile`: what TF ran while a profile was taken (`crate::tf::trace`),
//! for `tf.node.profile` (js/node/profile.js).

use napi::bindgen_prelude::Env;

use super::js_call;
use crate::tf::trace;

/// A span of the profile; times in microseconds since the Unix epoch.
#[napi_derive::napi(object)]
pub struct ProfileSpan {
    /// `eager op`, `session run`, `graph node`, `executor job` or `wait`.
    pub kind: String,
    pub name: String,
    /// The op type, for eager ops and graph nodes.
    pub op: String,
    pub start_us: f64,
    pub duration_us: f64,
    pub thread: String,
    pub tid: u32,
}

/// What `stopProfile` returns.
#[napi_derive::napi(object)]
pub struct Profile {
    pub spans: Vec<ProfileSpan>,
    /// The OS id of the thread that stopped the profile (the JS thread).
    pub js_tid: u32,
}

/// Starts recording what TF runs; an error while a profile is being taken.
#[napi_derive::napi(js_name = "startProfile")]
pub fn start_profile(env: Env) -> napi::Result<()> {
    js_call(&env, |_| trace::start())
}

/// Stops recording; returns the spans recorded since `startProfile`.
#[napi_derive::napi(js_name = "stopProfile")]
pub fn stop_profile() -> Profile {
    let spans = trace::stop()
        .into_iter()
        .map(|span| ProfileSpan {
            kind: span.kind.name().to_owned(),
            name: span.name,
            op: span.op,
            start_us: span.start_us,
            duration_us: span.duration_us,
            thread: span.thread,
            tid: span.tid,
        })
        .collect();
    Profile {
        spans,
        js_tid: trace::thread_id(),
    }
}

/// Now, in microseconds since the Unix epoch: the profile's clock.
#[napi_derive::napi(js_name = "profileClockUs")]
pub fn profile_clock_us() -> f64 {
    trace::now_us()
}
