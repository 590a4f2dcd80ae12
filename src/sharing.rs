//! Tensors and memory: where JS memory becomes TF memory and back, without copying when the
//! alignment allows (and, for reads, when the memory can return without the event loop), and
//! counted either way.

use std::rc::Rc;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::js::external::{self, TensorHold};
use crate::js::reference::{JsRef, WeakRef};
use crate::js::{Js, JsType, TypedArrayView, Value};
use crate::release::ReleaseQueue;
use crate::tensor_table::TensorTable;
use crate::tf::aligned::{is_tf_aligned, AlignedBuf};
use crate::tf::dtype::{ArrayKind, DType};
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;
use crate::tf::tensor::Tensor;

/// How often memory crossed between JS and TF with and without a copy (`stats()`).
#[derive(Default)]
pub struct Counters {
    pub shared_creates: u64,
    pub copied_creates: u64,
    pub shared_reads: u64,
    pub copied_reads: u64,
}

/// An env's memory lent across: JS memory TF holds (released through `releases` on the JS
/// thread), TF buffers JS reads as views, and the counts of both.
pub struct Sharing {
    pub counters: Counters,
    pub releases: Arc<ReleaseQueue>,
    read_views: ReadViews,
}

impl Sharing {
    pub fn new(js: Js) -> Result<Sharing> {
        Ok(Sharing {
            counters: Counters::default(),
            releases: ReleaseQueue::new(js)?,
            read_views: ReadViews::new(js)?,
        })
    }

    /// The most bytes read views may hold.
    pub fn view_budget(&self) -> usize {
        self.read_views.budget
    }

    /// A tensor over a typed array's memory: shared when TF accepts the address (64-byte
    /// aligned), else one copy. A strong reference keeps the array alive until TF releases the
    /// memory.
    pub fn tensor_from_typed_array(
        &mut self,
        js: Js,
        dtype: DType,
        dims: &[i64],
        array: Value,
        view: &TypedArrayView,
    ) -> Result<Tensor> {
        let counters = &mut self.counters;
        if view.byte_length == 0 || !is_tf_aligned(view.data) {
            counters.copied_creates += 1;
            return Tensor::copy_of(dtype, dims, view.bytes());
        }
        let reference = JsRef::new(js, array)?;
        let releases = self.releases.clone();
        // SAFETY: the reference keeps the typed array, and so its ArrayBuffer's memory, alive
        // until TF runs the release; a detached buffer was refused by the caller.
        let (tensor, shared) = unsafe {
            Tensor::lend(
                dtype,
                dims,
                view.data,
                view.byte_length,
                Box::new(move || releases.release(reference)),
            )
        }?;
        if shared {
            counters.shared_creates += 1;
        } else {
            counters.copied_creates += 1;
        }
        Ok(tensor)
    }

    /// The values of tensor `id` (of `tensors`) as a typed array: a view of TF's buffer (no
    /// copy) when no other tensor can see it (`aliased`: JS knows of other owners of `id`), the
    /// read is large enough and fits the budget; else a copy on V8's memory. So writing into a
    /// read never changes another tensor.
    pub fn read_typed_array(
        &mut self,
        js: Js,
        tensors: &mut TensorTable,
        status: &Status,
        id: u64,
        kind: ArrayKind,
        aliased: bool,
    ) -> Result<Value> {
        let tensor = tensors.handle(id)?.resolve(status)?;
        let (_, byte_length) = tensor.bytes();
        let length = byte_length / kind.element_bytes();
        let buffer = if byte_length == 0 {
            js.empty_array_buffer()?
        } else if !aliased
            && byte_length >= VIEW_MIN_BYTES
            && self.read_views.has_room(js, byte_length)?
            && alone_after_read(tensors, status, id, &tensor)?
        {
            self.counters.shared_reads += 1;
            let (buffer, hold) = external::from_tensor(js, tensor)?;
            self.read_views.add(js, hold, buffer)?;
            buffer
        } else {
            self.counters.copied_reads += 1;
            js.array_buffer_copy(tensor.byte_slice())?
        };
        js.typed_array_value(kind, length, buffer)
    }
}

/// Reads smaller than this are copies into V8's memory: making an external ArrayBuffer costs
/// more than copying a few KB, and V8 frees its own memory in a collection, while an external
/// buffer's finalizer waits for the event loop (a synchronous loop of a million small reads held
/// 300k of them and grew RSS by 1.4 GB).
const VIEW_MIN_BYTES: usize = 64 << 10;

/// Read views may hold this many bytes of TF buffers (process-wide) that JS might still reach;
/// past it, reads are copies into V8's memory, which collections free without the event loop.
/// A synchronous loop of 4 MB reads of a tensor disposed each time grew RSS to 4.5 GB before.
/// Views proven dead by a weak reference are released early and do not count. 256 MiB made
/// the last reads of the micro-benchmarks' 6 x 40 MB readback copy (median 0.7 -> 2.0 ms);
/// 512 MiB fits them, and the 4 MB loop peaks at start + ~300 MB.
const VIEW_BUDGET_BYTES: usize = 512 << 20;

/// The budget where views cannot be released early (Node 22+, see `release_early`): every
/// view then counts until its finalizer runs, so the 4 MB loop would reach start + the whole
/// budget (1060 MB peak from 439 MB with 512 MiB); 256 MiB keeps it near start + 300 MB.
const VIEW_BUDGET_BYTES_NO_EARLY_RELEASE: usize = 256 << 20;

/// Views V8 has collected are looked for (and released) each time the bytes views hold have
/// grown by this much, so that a loop whose reads die young stays well inside the budget.
const PRUNE_EVERY_BYTES: usize = 64 << 20;

/// The views this env handed out whose tensor is not yet released, with a weak reference to
/// each ArrayBuffer: once V8 has collected one, its tensor can go at once instead of when the
/// finalizer runs, after the event loop turns.
struct ReadViews {
    views: Vec<(Rc<TensorHold>, WeakRef)>,
    /// The list length at which released views are pruned next.
    prune_at: usize,
    /// `external::view_bytes()` at the last pruning.
    pruned_at_bytes: usize,
    /// Early release is sound only where no JS code can move an ArrayBuffer's memory to another
    /// ArrayBuffer: `ArrayBuffer.prototype.transfer` (V8 12+, Node 22) moves it, leaving the
    /// collected original behind while the memory lives on.
    release_early: bool,
    /// Bytes views may hold: VIEW_BUDGET_BYTES, or less without early release.
    budget: usize,
}

const PRUNE_MIN: usize = 64;

impl ReadViews {
    fn new(js: Js) -> Result<ReadViews> {
        let prototype = js.property(js.property(js.global()?, c"ArrayBuffer")?, c"prototype")?;
        let movable = [c"transfer", c"transferToFixedLength"]
            .iter()
            .map(|name| Ok(js.type_of(js.property(prototype, name)?)? != JsType::Undefined))
            .collect::<Result<Vec<bool>>>()?;
        let release_early = !movable.contains(&true);
        Ok(ReadViews {
            views: Vec::new(),
            prune_at: PRUNE_MIN,
            pruned_at_bytes: 0,
            release_early,
            budget: if release_early {
                VIEW_BUDGET_BYTES
            } else {
                VIEW_BUDGET_BYTES_NO_EARLY_RELEASE
            },
        })
    }

    /// Whether a view of `bytes` more fits the budget, after releasing views V8 has collected.
    fn has_room(&mut self, js: Js, bytes: usize) -> Result<bool> {
        let after = external::view_bytes() + bytes;
        if after > self.budget || after > self.pruned_at_bytes + PRUNE_EVERY_BYTES {
            self.prune(js)?;
        }
        Ok(external::view_bytes() + bytes <= self.budget)
    }

    fn add(&mut self, js: Js, hold: Rc<TensorHold>, buffer: Value) -> Result<()> {
        if !self.release_early {
            return Ok(());
        }
        if self.views.len() >= self.prune_at {
            self.prune(js)?;
            self.prune_at = PRUNE_MIN.max(2 * self.views.len());
        }
        self.views.push((hold, WeakRef::new(js, buffer)?));
        Ok(())
    }

    /// Drops the views whose tensor is released, releasing first those V8 has collected.
    fn prune(&mut self, js: Js) -> Result<()> {
        let mut kept = Vec::with_capacity(self.views.len());
        for (hold, weak) in self.views.drain(..) {
            if !hold.is_released() && !weak.is_alive(js)? {
                hold.release();
            }
            if hold.is_released() {
                weak.delete(js);
            } else {
                kept.push((hold, weak));
            }
        }
        self.views = kept;
        self.pruned_at_bytes = external::view_bytes();
        Ok(())
    }
}

/// Whether `tensor` (resolved from `id`) is the only holder of its buffer besides `id`'s own
/// handle: no other handle (TF's Identity, full slices and identity transposes return their
/// input's buffer), no earlier view, no JS memory lent to TF. TF tells only whether a buffer has
/// one reference, so `id`'s handle is remade from `tensor` (about 1 us, paid by large reads only).
fn alone_after_read(
    tensors: &mut TensorTable,
    status: &Status,
    id: u64,
    tensor: &Tensor,
) -> Result<bool> {
    drop(tensors.take_handle(id)?);
    let alone = tensor.is_sole_owner();
    tensors.fill(id, TensorHandle::from_tensor(tensor, status)?);
    Ok(alone)
}

/// A zero-filled typed array on aligned native memory, which `createTensor` shares with TF.
pub fn aligned_typed_array(js: Js, kind: ArrayKind, length: usize) -> Result<Value> {
    let bytes = length
        .checked_mul(kind.element_bytes())
        .ok_or_else(|| Error::Range(format!("cannot allocate {length} elements: too large")))?;
    let buffer = external::from_aligned(js, AlignedBuf::zeroed(bytes)?)?;
    js.typed_array_value(kind, length, buffer)
}
