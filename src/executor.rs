//! Work off the JS thread. Work whose outputs' shapes are known before it runs (a graph run of
//! a deferred run, a whole call's graph with static shapes) can be a `Job`: its outputs get ids
//! and shapes at once, as pending tensors, and one native thread per env runs the jobs in the
//! order they were made, while JS goes on. Whoever needs a value first gets it:
//!
//! - a synchronous read (or an op) of a pending tensor runs its job on the JS thread if the
//!   executor has not started it yet, else waits for it: synchronous code never waits behind a
//!   queue, and computes exactly what it computed before;
//! - an asynchronous read (`whenReady`) gets a promise that the JS thread resolves when the
//!   executor's wakeup reports the job done.
//!
//! The first run of a graph is the exception: only the executor thread runs it. It sets the
//! session up, and TF caches part of that per thread (oneDNN's graph pass looks each op's
//! kernels up once per thread; `tf::warm_up` fills that cache as the package loads), so a
//! dense model's second graph set up in 2-3 ms on the thread that had set up the first, and
//! in 10-12 ms on the other.
//!
//! Jobs wait for the jobs whose outputs they take, which always come before them, so nothing
//! waits on itself. One thread, not a pool: TF's kernels already spread one run over the
//! machine's cores (intra-op threads), and one queue keeps the order in which JS issued work.
//! Calls of whole calls on another machine's device are the exception (`submit_apart`): they
//! wait for the network, not for cores, so each runs on a thread of its own, up to
//! `MAX_APART` at once, and a server's calls overlap; their inputs' jobs still come first.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use crate::error::{Error, Result};
use crate::js::wakeup::{OnWake, Wakeup};
use crate::js::{Deferred, Js, Value};
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;
use crate::tf::trace::{SpanKind, Timing};

/// A tensor a job takes: one that exists, or an output of an earlier job.
pub enum Input {
    Ready(TensorHandle),
    Pending(Claim),
}

impl Input {
    /// The tensor, waiting for (or running) the job that computes it.
    pub fn resolve(&self, status: &Status) -> Result<TensorHandle> {
        match self {
            Input::Ready(handle) => handle.share(status),
            Input::Pending(claim) => claim.job.output(claim.output, status),
        }
    }

    /// Each of `inputs`' tensors, in order (`resolve`).
    pub fn resolve_all(inputs: &[Input], status: &Status) -> Result<Vec<TensorHandle>> {
        inputs.iter().map(|input| input.resolve(status)).collect()
    }
}

/// A later job's claim on output `output` of `job`: while one is held, the output stays with
/// the job, and the tensor settled from it shares it (`Job::take_output`).
pub struct Claim {
    job: Arc<Job>,
    output: usize,
}

impl Claim {
    pub fn new(job: Arc<Job>, output: usize) -> Claim {
        job.count_claim(output, true);
        Claim { job, output }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.job.count_claim(self.output, false);
    }
}

/// What a job computes: its outputs, from inputs it took when made.
pub struct Work {
    run: Box<dyn FnOnce(&Status) -> Outputs + Send>,
    /// Only the executor thread may run it (a graph's first run).
    on_executor: bool,
}

type Outputs = Result<Vec<TensorHandle>>;

impl Work {
    pub fn new(run: impl FnOnce(&Status) -> Outputs + Send + 'static) -> Work {
        Work {
            run: Box::new(run),
            on_executor: false,
        }
    }

    /// The same work, which only the executor thread may run when `only` (a graph's first run,
    /// see the module's comment).
    pub fn on_executor_only(mut self, only: bool) -> Work {
        self.on_executor = only;
        self
    }
}

thread_local! {
    /// This thread is an env's executor thread.
    static IS_EXECUTOR: Cell<bool> = const { Cell::new(false) };
}

enum JobState {
    Queued(Work),
    Running,
    /// The outputs; `None` for one taken by the tensor settled from it.
    Done(Result<Vec<Option<TensorHandle>>>),
}

pub struct Job {
    state: Mutex<JobState>,
    /// `Work::on_executor`.
    on_executor: bool,
    finished: Condvar,
    /// Told when the job is done, wherever it ran.
    completions: Arc<Completions>,
    /// Per output, the `Claim`s held on it.
    claims: Mutex<Vec<usize>>,
}

/// Output `output` of a finished job's `outputs`, still there.
fn output_of(outputs: &[Option<TensorHandle>], output: usize) -> Result<&TensorHandle> {
    match outputs.get(output) {
        Some(Some(handle)) => Ok(handle),
        Some(None) => Err(Error::Invalid(format!(
            "output {output} of the job was taken by its tensor"
        ))),
        None => Err(Error::Invalid(format!("the job has no output {output}"))),
    }
}

impl Job {
    fn lock(&self) -> MutexGuard<'_, JobState> {
        // A panic while holding the lock leaves only plain data behind; keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs the job in this thread unless a thread has started it, or it is the executor's.
    fn run_if_queued(&self, status: &Status) {
        if self.on_executor && !IS_EXECUTOR.get() {
            return;
        }
        let work = {
            let mut state = self.lock();
            match std::mem::replace(&mut *state, JobState::Running) {
                JobState::Queued(work) => work,
                other => {
                    *state = other;
                    return;
                }
            }
        };
        let timing = Timing::begin(SpanKind::Job, || ("job".into(), String::new()));
        let result = (work.run)(status).map(|outputs| outputs.into_iter().map(Some).collect());
        drop(timing);
        *self.lock() = JobState::Done(result);
        self.finished.notify_all();
        self.completions.job_done();
    }

    /// A new handle to output `output`, running the job here first when no thread has started
    /// it, else waiting for it. The job's error when it failed.
    pub fn output(&self, output: usize, status: &Status) -> Result<TensorHandle> {
        self.finished(status, |outputs| output_of(outputs, output)?.share(status))
    }

    /// Output `output` for the one tensor that holds it, as `output` gives it. The job hands it
    /// over unless a later job claims it, so that the tensor alone holds its buffer and a read
    /// of it is a view, not a copy (`sharing::Sharing::read_typed_array`).
    pub fn take_output(&self, output: usize, status: &Status) -> Result<TensorHandle> {
        let claimed = self.claims_on(output) > 0;
        self.finished(status, |outputs| {
            if claimed {
                return output_of(outputs, output)?.share(status);
            }
            output_of(outputs, output)?;
            outputs[output]
                .take()
                .ok_or_else(|| Error::Invalid(format!("output {output} was taken")))
        })
    }

    /// New handles to all outputs, as `output` gives one.
    pub fn outputs(&self, status: &Status) -> Result<Vec<TensorHandle>> {
        self.finished(status, |outputs| {
            (0..outputs.len())
                .map(|k| output_of(outputs, k)?.share(status))
                .collect()
        })
    }

    /// Waits for the job (running it here when no thread has started it); its error when it
    /// failed.
    pub fn wait(&self, status: &Status) -> Result<()> {
        self.finished(status, |_| Ok(()))
    }

    /// `take` applied to the outputs once the job is done (run here if nobody started it).
    fn finished<T>(
        &self,
        status: &Status,
        take: impl FnOnce(&mut [Option<TensorHandle>]) -> Result<T>,
    ) -> Result<T> {
        self.run_if_queued(status);
        let mut state = self.lock();
        if !matches!(&*state, JobState::Done(_)) {
            let _waiting = Timing::begin(SpanKind::Wait, || ("job".into(), String::new()));
            state = self
                .finished
                .wait_while(state, |state| !matches!(state, JobState::Done(_)))
                .unwrap_or_else(|p| p.into_inner());
        }
        match &mut *state {
            JobState::Done(Ok(outputs)) => take(outputs),
            JobState::Done(Err(err)) => Err(err.clone()),
            _ => Err(Error::Invalid("the job did not finish".into())),
        }
    }

    fn claims_on(&self, output: usize) -> usize {
        let claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        claims.get(output).copied().unwrap_or(0)
    }

    fn count_claim(&self, output: usize, added: bool) {
        let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        if claims.len() <= output {
            claims.resize(output + 1, 0);
        }
        claims[output] = if added {
            claims[output] + 1
        } else {
            claims[output].saturating_sub(1)
        };
    }

    fn is_queued(&self) -> bool {
        matches!(*self.lock(), JobState::Queued(_))
    }

    pub fn is_done(&self) -> bool {
        matches!(*self.lock(), JobState::Done(_))
    }
}

/// Work that computes no tensor and that nothing waits for (`Executor::set_up`).
type SetUp = Box<dyn FnOnce(&Status) + Send>;

/// The jobs not started yet, in order, and the set-ups, which run when no job waits and only
/// until the program starts its work.
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Arc<Job>>,
    set_ups: VecDeque<SetUp>,
    set_up_counts: SetUpCounts,
    stopping: bool,
    /// The thread is running a job or a set-up.
    running: bool,
    /// Jobs running on threads of their own (`submit_apart`).
    apart: usize,
}

/// Jobs on threads of their own at once at most (`Executor::submit_apart`); past it, they queue.
/// Each is one call in flight on a remote device: 16 keep a worker a round trip away busy
/// (measured: a call is two round trips plus its compute) without a thread per request.
const MAX_APART: usize = 16;

impl Queue {
    /// Drops the set-ups not started (the program started its work, or the env stops).
    fn drop_set_ups(&mut self) {
        self.set_up_counts.dropped += self.set_ups.len() as u32;
        self.set_ups.clear();
    }
}

/// What became of the set-ups queued (`stats()`): each is run or dropped, or still queued.
#[derive(Default, Clone, Copy)]
pub struct SetUpCounts {
    pub queued: u32,
    pub run: u32,
    pub dropped: u32,
}

/// The queue, the condvar that wakes the thread for it (and `wait_idle` when a job is done), and
/// whether the program has called an op or queued a job: from then on, set-ups not started are
/// dropped, so that none takes a core from the program's work or holds up a job.
#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
    working: AtomicBool,
}

/// The env's executor: its queue, its thread (started with the first job) and the promises
/// waiting on jobs.
pub struct Executor {
    /// `TFJS_NODE_RS_BACKGROUND=0` turns jobs off: everything runs on the JS thread, as reads
    /// need it.
    pub enabled: bool,
    queue: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    completions: Arc<Completions>,
    /// Jobs made; `stats().backgroundRuns`.
    pub jobs_made: u64,
    /// Jobs JS refers to by number (`hold`) until it takes their outputs.
    held: HashMap<u32, Arc<Job>>,
    next_ticket: u32,
}

impl Executor {
    pub fn new(js: Js) -> Result<Executor> {
        let completions = Arc::new(Completions::default());
        let wakeup = Wakeup::new(js, completions.clone())?;
        *completions.lock_wakeup() = Some(wakeup);
        Ok(Executor {
            enabled: std::env::var("TFJS_NODE_RS_BACKGROUND").map_or(true, |v| v != "0"),
            queue: Arc::default(),
            thread: None,
            completions,
            jobs_made: 0,
            held: HashMap::new(),
            next_ticket: 0,
        })
    }

    /// Queues `work`; returns its job, whose outputs the caller registers as pending tensors.
    pub fn submit(&mut self, work: Work) -> Result<Arc<Job>> {
        let job = self.queue(work)?;
        self.jobs_made += 1;
        Ok(job)
    }

    /// Queues `set_up`, work that computes no tensor and that nothing waits for
    /// (`tf::warm_up`'s one-time set-ups), so none of `stats()`'s background runs. Only the
    /// executor thread runs it, while the program has not started its work (`note_work`): the
    /// first job waits at most for the set-up in progress. Set-ups not started by then, or by
    /// `wait_idle` or `shut_down`, are dropped.
    pub fn set_up(&mut self, set_up: impl FnOnce(&Status) + Send + 'static) -> Result<()> {
        self.start_thread()?;
        let Shared { queue, changed, .. } = &*self.queue;
        let mut guard = queue.lock().unwrap_or_else(|p| p.into_inner());
        guard.set_ups.push_back(Box::new(set_up));
        guard.set_up_counts.queued += 1;
        drop(guard);
        changed.notify_one();
        Ok(())
    }

    fn start_thread(&mut self) -> Result<()> {
        if self.thread.is_none() {
            let queue = self.queue.clone();
            let thread = std::thread::Builder::new()
                .name("tfjs-node-rs executor".into())
                .spawn(move || work_through(&queue))
                .map_err(|e| Error::Invalid(format!("cannot start the executor thread: {e}")))?;
            self.thread = Some(thread);
        }
        Ok(())
    }

    /// Runs `work` on a thread of its own, or queues it when `MAX_APART` jobs run so (work
    /// that waits for another machine: see the module's comment); returns its job.
    pub fn submit_apart(&mut self, work: Work) -> Result<Arc<Job>> {
        {
            let mut queue = self.queue.queue.lock().unwrap_or_else(|p| p.into_inner());
            if queue.apart >= MAX_APART || queue.stopping {
                drop(queue);
                return self.submit(work);
            }
            queue.apart += 1;
        }
        self.note_work();
        let job = self.new_job(work);
        let running = job.clone();
        let shared = self.queue.clone();
        let finished = move |shared: &Shared| {
            shared.queue.lock().unwrap_or_else(|p| p.into_inner()).apart -= 1;
            shared.changed.notify_all();
        };
        let spawned = std::thread::Builder::new()
            .name("tfjs-node-rs call".into())
            .spawn(move || {
                running.run_if_queued(&Status::new());
                finished(&shared);
            });
        if let Err(e) = spawned {
            // The closure (and its count) went with the failed spawn: count it back here.
            let mut queue = self.queue.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.apart -= 1;
            return Err(Error::Invalid(format!("cannot start a call's thread: {e}")));
        }
        self.jobs_made += 1;
        Ok(job)
    }

    fn new_job(&self, work: Work) -> Arc<Job> {
        Arc::new(Job {
            on_executor: work.on_executor,
            state: Mutex::new(JobState::Queued(work)),
            finished: Condvar::new(),
            completions: self.completions.clone(),
            claims: Mutex::default(),
        })
    }

    /// The program calls an op: set-ups not started yet are dropped (`set_up`).
    pub fn note_work(&self) {
        let working = &self.queue.working;
        if !working.load(Ordering::Relaxed) {
            working.store(true, Ordering::Relaxed);
        }
    }

    /// What became of the set-ups queued so far.
    pub fn set_up_counts(&self) -> SetUpCounts {
        self.queue
            .queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .set_up_counts
    }

    fn queue(&mut self, work: Work) -> Result<Arc<Job>> {
        self.start_thread()?;
        self.note_work();
        let on_executor = work.on_executor;
        let job = self.new_job(work);
        let Shared { queue, changed, .. } = &*self.queue;
        let waiting = {
            let mut queue = queue.lock().unwrap_or_else(|p| p.into_inner());
            // Jobs a reader ran itself leave the queue here.
            queue.jobs.retain(|queued| queued.is_queued());
            queue.jobs.push_back(job.clone());
            queue.jobs.len()
        };
        // A lone job waits for its reader: a synchronous read runs it at once on the JS thread
        // (waking the thread for it only added a hand-off: a tiny predict then read took 24%
        // longer), an asynchronous one starts the thread (`when_done`). A second job queued
        // means JS went on without reading: the thread starts on the first.
        if waiting > 1 || on_executor {
            changed.notify_one();
        }
        Ok(job)
    }

    /// Wakes the thread for the queued jobs (someone waits for them without running them).
    fn start(&self) {
        self.queue.changed.notify_one();
    }

    /// A number JS gives back to `held` or `release` to get `job`.
    pub fn hold(&mut self, job: Arc<Job>) -> u32 {
        self.next_ticket = self.next_ticket.wrapping_add(1);
        self.held.insert(self.next_ticket, job);
        self.next_ticket
    }

    pub fn held(&self, ticket: u32) -> Result<Arc<Job>> {
        self.held
            .get(&ticket)
            .cloned()
            .ok_or_else(|| unknown_ticket(ticket))
    }

    /// Forgets `ticket`, returning its job.
    pub fn release(&mut self, ticket: u32) -> Result<Arc<Job>> {
        self.held
            .remove(&ticket)
            .ok_or_else(|| unknown_ticket(ticket))
    }

    /// Waits until the queued jobs and those in progress (apart too) are done: nothing runs
    /// after this returns until the next `submit` (before the context changes under the jobs).
    pub fn wait_idle(&self) {
        let Shared { queue, changed, .. } = &*self.queue;
        self.start();
        let mut guard = queue.lock().unwrap_or_else(|p| p.into_inner());
        guard.drop_set_ups();
        drop(
            changed
                .wait_while(guard, |q| q.running || !q.jobs.is_empty() || q.apart > 0)
                .unwrap_or_else(|p| p.into_inner()),
        );
    }

    /// A promise resolved (with `undefined`) on the JS thread once `job` is done; starts the
    /// thread on the queue.
    pub fn when_done(&self, js: Js, job: Arc<Job>) -> Result<Value> {
        self.start();
        self.completions.wait_for(js, job)
    }

    /// Finishes the job in progress, drops the queued ones and stops the thread (env shutdown:
    /// the env's tensors, which the jobs would fill, are gone).
    pub fn shut_down(&mut self) {
        let Shared {
            queue,
            changed: ready,
            ..
        } = &*self.queue;
        {
            let mut queue = queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.stopping = true;
            queue.jobs.clear();
            queue.drop_set_ups();
        }
        self.held.clear();
        ready.notify_all();
        if let Some(thread) = self.thread.take() {
            // A job's panic was already reported by the thread; nothing is left to clean up.
            let _ = thread.join();
        }
        // Calls in flight apart hold the context, which goes after this: they end first.
        drop(
            ready
                .wait_while(queue.lock().unwrap_or_else(|p| p.into_inner()), |q| {
                    q.apart > 0
                })
                .unwrap_or_else(|p| p.into_inner()),
        );
        if let Some(wakeup) = self.completions.lock_wakeup().take() {
            wakeup.close();
        }
    }
}

fn unknown_ticket(ticket: u32) -> Error {
    Error::Invalid(format!("job {ticket} is unknown or its outputs were taken"))
}

/// The executor thread: runs queued jobs in order, and set-ups when no job waits, until the env
/// shuts down.
fn work_through(shared: &Shared) {
    IS_EXECUTOR.set(true);
    let status = Status::new();
    let Shared {
        queue,
        changed,
        working,
    } = shared;
    let lock = || queue.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        let (job, set_up) = {
            let mut guard = lock();
            loop {
                if guard.stopping {
                    return;
                }
                if let Some(job) = guard.jobs.pop_front() {
                    guard.running = true;
                    break (Some(job), None);
                }
                if working.load(Ordering::Relaxed) {
                    guard.drop_set_ups();
                }
                if let Some(set_up) = guard.set_ups.pop_front() {
                    guard.set_up_counts.run += 1;
                    guard.running = true;
                    break (None, Some(set_up));
                }
                guard = changed.wait(guard).unwrap_or_else(|p| p.into_inner());
            }
        };
        if let Some(job) = job {
            job.run_if_queued(&status);
        }
        if let Some(set_up) = set_up {
            set_up(&status);
        }
        lock().running = false;
        changed.notify_all();
    }
}

/// Promises waiting on jobs. The list is touched on the JS thread only; the count tells other
/// threads whether a finished job must wake it.
#[derive(Default)]
struct Completions {
    waiting: Mutex<Vec<(Arc<Job>, Deferred)>>,
    count: AtomicUsize,
    wakeup: Mutex<Option<Wakeup>>,
}

impl Completions {
    fn lock_wakeup(&self) -> MutexGuard<'_, Option<Wakeup>> {
        self.wakeup.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock_waiting(&self) -> MutexGuard<'_, Vec<(Arc<Job>, Deferred)>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait_for(&self, js: Js, job: Arc<Job>) -> Result<Value> {
        let (promise, deferred) = js.promise()?;
        self.lock_waiting().push((job.clone(), deferred));
        if self.count.fetch_add(1, Ordering::AcqRel) == 0 {
            if let Some(wakeup) = &*self.lock_wakeup() {
                // Until the last promise resolves, the pending wakeup keeps the loop alive.
                wakeup.hold(js, true)?;
            }
        }
        // Asked after counting the waiter: a job finishing before the count saw none waiting
        // and woke nobody. Resolved from the next turn of the event loop, as promises are.
        if job.is_done() {
            self.job_done();
        }
        Ok(promise)
    }

    /// Any thread: a job finished; wake the JS thread if a promise may wait on it.
    fn job_done(&self) {
        if self.count.load(Ordering::Acquire) > 0 {
            if let Some(wakeup) = &*self.lock_wakeup() {
                wakeup.wake();
            }
        }
    }
}

impl OnWake for Completions {
    fn on_wake(&self, js: Js) {
        let finished: Vec<Deferred> = {
            let mut waiting = self.lock_waiting();
            let mut finished = Vec::new();
            let mut k = 0;
            while k < waiting.len() {
                if waiting[k].0.is_done() {
                    finished.push(waiting.swap_remove(k).1);
                } else {
                    k += 1;
                }
            }
            finished
        };
        if finished.is_empty() {
            return;
        }
        let left = self.count.fetch_sub(finished.len(), Ordering::AcqRel) - finished.len();
        if left == 0 {
            if let Some(wakeup) = &*self.lock_wakeup() {
                // Nothing waits any more: the loop may exit (the wakeup stays usable).
                let _ = wakeup.hold(js, false);
            }
        }
        for deferred in finished {
            // A failed resolve leaves a promise unsettled; there is no caller to report it to.
            let _ = js.resolve_undefined(deferred);
        }
    }
}
