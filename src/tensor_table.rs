//! The env's live tensors, by the integer ids JS holds.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::error::{Error, Result};
use crate::tf::handle::TensorHandle;

pub struct TensorEntry {
    /// `None` while the tensor is the output of a deferred op (`crate::trace`) not yet run.
    handle: Option<TensorHandle>,
    /// Bytes of element data, for `stats().liveBytes` (0 for strings and handles).
    pub bytes: u64,
}

impl TensorEntry {
    /// The tensor, or an error for a deferred output (callers settle ids before they read them).
    pub fn handle(&self) -> Result<&TensorHandle> {
        self.handle.as_ref().ok_or_else(not_computed)
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
        self.insert_entry(Some(handle), bytes)
    }

    /// An id for a deferred op's output, computed later by `fill`.
    pub fn insert_deferred(&mut self, bytes: u64) -> u64 {
        self.insert_entry(None, bytes)
    }

    fn insert_entry(&mut self, handle: Option<TensorHandle>, bytes: u64) -> u64 {
        self.next_id += 1;
        self.live_bytes += bytes;
        self.entries
            .insert(self.next_id, TensorEntry { handle, bytes });
        self.next_id
    }

    /// Gives a deferred output its tensor (dropped at once when JS has deleted the id).
    pub fn fill(&mut self, id: u64, handle: TensorHandle) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.handle = Some(handle);
        }
    }

    /// Takes the tensor out of its entry, for the caller to `fill` it again.
    pub fn take_handle(&mut self, id: u64) -> Result<TensorHandle> {
        let entry = self.entries.get_mut(&id).ok_or_else(|| missing(id))?;
        entry.handle.take().ok_or_else(not_computed)
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
