//! The env's live tensors, by the integer ids JS holds.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::executor::{Claim, Input, Job};
use crate::tensor_spec::TensorSpec;
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;

/// Where an entry's tensor is.
enum Slot {
    Ready(TensorHandle),
    /// The output of a deferred op (`crate::ops::deferred`) not yet run.
    Deferred,
    /// Reserved for a tensor a call graph will compute, while the call's JS runs ahead of TF
    /// (`js/graphs/recording.js`): filled by `fill_from`, or deleted.
    Reserved,
    /// Output `output` of a job of the executor (`crate::executor`), of `spec`.
    Pending {
        job: Arc<Job>,
        output: usize,
        spec: TensorSpec,
    },
}

pub struct TensorEntry {
    slot: Slot,
    /// Bytes of element data, for `stats().liveBytes` (0 for strings and handles).
    pub bytes: u64,
}

impl TensorEntry {
    /// The tensor, or an error for one not computed yet (callers settle ids before they read).
    pub fn handle(&self) -> Result<&TensorHandle> {
        match &self.slot {
            Slot::Ready(handle) => Ok(handle),
            _ => Err(not_computed()),
        }
    }
}

fn not_computed() -> Error {
    Error::Invalid("the tensor has not been computed yet".into())
}

/// Ids count up from 1 and are never reused, so a stale id is an error rather than another
/// tensor.
#[derive(Default)]
pub struct TensorTable {
    entries: HashMap<u64, TensorEntry, BuildHasherDefault<IdHasher>>,
    next_id: u64,
    live_bytes: u64,
}

impl TensorTable {
    pub fn insert(&mut self, handle: TensorHandle, bytes: u64) -> u64 {
        self.insert_entry(Slot::Ready(handle), bytes)
    }

    /// An id for a deferred op's output, computed later by `fill`.
    pub fn insert_deferred(&mut self, bytes: u64) -> u64 {
        self.insert_entry(Slot::Deferred, bytes)
    }

    /// An id for output `output` of `job`, of `spec`, computed when someone settles it.
    pub fn insert_pending(&mut self, job: Arc<Job>, output: usize, spec: TensorSpec) -> u64 {
        let bytes = spec.byte_count();
        self.insert_entry(Slot::Pending { job, output, spec }, bytes)
    }

    /// `count` consecutive ids of `Slot::Reserved` entries; returns the first.
    pub fn reserve(&mut self, count: u64) -> u64 {
        let first = self.next_id + 1;
        for _ in 0..count {
            self.insert_entry(Slot::Reserved, 0);
        }
        first
    }

    /// Moves the tensor of `source` (computed or pending) into `target`, a reserved entry;
    /// `source` is gone.
    pub fn fill_from(&mut self, target: u64, source: u64) -> Result<()> {
        let entry = self.entries.get(&target).ok_or_else(|| missing(target))?;
        if !matches!(entry.slot, Slot::Reserved) || target == source {
            return Err(Error::Invalid(format!("tensor {target} is not reserved")));
        }
        let filled = self.remove(source)?;
        self.live_bytes += filled.bytes;
        self.entries.insert(target, filled);
        Ok(())
    }

    fn insert_entry(&mut self, slot: Slot, bytes: u64) -> u64 {
        self.next_id += 1;
        self.live_bytes += bytes;
        self.entries
            .insert(self.next_id, TensorEntry { slot, bytes });
        self.next_id
    }

    /// Gives a deferred output its tensor, or a tensor a new handle (a copy here of a remote
    /// one); dropped at once when JS has deleted the id.
    pub fn fill(&mut self, id: u64, handle: TensorHandle) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.slot = Slot::Ready(handle);
        }
    }

    /// Takes the tensor out of its entry, for the caller to `fill` it again.
    pub fn take_handle(&mut self, id: u64) -> Result<TensorHandle> {
        let entry = self.entries.get_mut(&id).ok_or_else(|| missing(id))?;
        match std::mem::replace(&mut entry.slot, Slot::Deferred) {
            Slot::Ready(handle) => Ok(handle),
            other => {
                entry.slot = other;
                Err(not_computed())
            }
        }
    }

    /// Makes the deferred output `id` output `output` of `job` (nothing when JS deleted it).
    pub fn make_pending(&mut self, id: u64, job: Arc<Job>, output: usize, spec: TensorSpec) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.slot = Slot::Pending { job, output, spec };
        }
    }

    /// Makes `id`, an output of the executor's job, hold its tensor: runs the job here unless
    /// it has started, waits for it, and fills the entry. Nothing for other entries.
    pub fn settle_pending(&mut self, id: u64, status: &Status) -> Result<()> {
        let Some(entry) = self.entries.get_mut(&id) else {
            return Ok(());
        };
        if let Slot::Pending { job, output, .. } = &entry.slot {
            entry.slot = Slot::Ready(job.take_output(*output, status)?);
        }
        Ok(())
    }

    /// Whether `id` is an output of an executor job (settled or not).
    pub fn is_pending(&self, id: u64) -> bool {
        self.entries
            .get(&id)
            .is_some_and(|entry| matches!(entry.slot, Slot::Pending { .. }))
    }

    /// Settles every pending entry (`settle_pending`), so that none refers to a job.
    pub fn settle_all_pending(&mut self, status: &Status) -> Result<()> {
        for entry in self.entries.values_mut() {
            if let Slot::Pending { job, output, .. } = &entry.slot {
                entry.slot = Slot::Ready(job.take_output(*output, status)?);
            }
        }
        Ok(())
    }

    /// The pending job `id` waits on; `None` when it is computed or unknown.
    pub fn pending_job(&self, id: u64) -> Option<Arc<Job>> {
        match &self.entries.get(&id)?.slot {
            Slot::Pending { job, .. } => Some(job.clone()),
            _ => None,
        }
    }

    /// What a job taking `id` is fed: its tensor, or the job computing it.
    pub fn job_input(&self, id: u64, status: &Status) -> Result<Input> {
        match &self.get(id)?.slot {
            Slot::Ready(handle) => Ok(Input::Ready(handle.share(status)?)),
            Slot::Pending { job, output, .. } => {
                Ok(Input::Pending(Claim::new(job.clone(), *output)))
            }
            Slot::Deferred | Slot::Reserved => Err(not_computed()),
        }
    }

    /// The dtype and dims of `id`'s tensor, computed or pending.
    pub fn spec(&self, id: u64, status: &Status) -> Result<TensorSpec> {
        match &self.get(id)?.slot {
            Slot::Ready(handle) => TensorSpec::of(handle, status),
            Slot::Pending { spec, .. } => Ok(spec.clone()),
            Slot::Deferred | Slot::Reserved => Err(not_computed()),
        }
    }

    pub fn contains(&self, id: u64) -> bool {
        self.entries.contains_key(&id)
    }

    /// The most recently inserted id.
    pub fn last_id(&self) -> u64 {
        self.next_id
    }

    pub fn get(&self, id: u64) -> Result<&TensorEntry> {
        self.entries.get(&id).ok_or_else(|| missing(id))
    }

    /// The tensor of `id` (an error for an unknown id or a deferred output not yet computed).
    pub fn handle(&self, id: u64) -> Result<&TensorHandle> {
        self.get(id)?.handle()
    }

    pub fn remove(&mut self, id: u64) -> Result<TensorEntry> {
        let entry = self.entries.remove(&id).ok_or_else(|| missing(id))?;
        self.live_bytes -= entry.bytes;
        Ok(entry)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Drops every tensor (env shutdown).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.live_bytes = 0;
    }
}

fn missing(id: u64) -> Error {
    Error::Invalid(format!("tensor id {id} is unknown or was deleted"))
}

/// A hasher for keys no attacker chooses (tensor ids, op names): one multiply spreads sequential
/// ids well enough, FNV-1a serves short names; both far cheaper than SipHash.
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
