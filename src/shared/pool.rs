//! The process-wide pool of spare memory, and the counters summed over all
//! threads.
//!
//! Each thread allocates from its own arena without synchronising. What
//! crosses threads is rare: when a thread's arena is dropped (thread exit), its
//! spare slabs and cached large blocks go to this pool, up to a budget, instead
//! of back to the OS; a new thread (a fresh rayon worker) takes from the pool
//! before asking the OS, and starts its slabs at the size the process has
//! needed so far rather than the smallest. Every shared field sits behind the
//! `sync` shim and is checked by the loom models in `shared/loom_models.rs`.
#![forbid(unsafe_code)]

use crate::mem::large::LargeBlock;
use crate::mem::slab::Slab;
use crate::mem::system::{SystemVec, system_vec};
use crate::shared::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::stats::Counters;

/// Default bound on the bytes the pool holds.
pub(crate) const DEFAULT_POOL_BUDGET_BYTES: usize = 256 * 1024 * 1024;

/// Spare memory shared by all threads.
///
/// Invariant: `bytes` is the total length of the slabs and blocks held, and
/// never exceeds the budget when an operation returns.
pub(crate) struct SlabPool {
    held: Mutex<PoolContents>,
    budget_bytes: AtomicUsize,
    /// The largest geometric slab size an exited arena had reached.
    warm_slab_bytes: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Whether the pool holds anything: lets a miss skip the lock.
    nonempty: AtomicBool,
}

/// The pool's lists, from [`System`](std::alloc::System) like the arenas'
/// (see `crate::mem::system`): a thread's exit gives its memory here.
struct PoolContents {
    slabs: SystemVec<Slab>,
    blocks: SystemVec<LargeBlock>,
    bytes: usize,
}

impl SlabPool {
    #[cfg(not(loom))]
    pub(crate) const fn new(budget_bytes: usize) -> SlabPool {
        SlabPool {
            held: Mutex::new(PoolContents { slabs: system_vec(), blocks: system_vec(), bytes: 0 }),
            budget_bytes: AtomicUsize::new(budget_bytes),
            warm_slab_bytes: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            nonempty: AtomicBool::new(false),
        }
    }

    #[cfg(loom)]
    pub(crate) fn new(budget_bytes: usize) -> SlabPool {
        SlabPool {
            held: Mutex::new(PoolContents { slabs: system_vec(), blocks: system_vec(), bytes: 0 }),
            budget_bytes: AtomicUsize::new(budget_bytes),
            warm_slab_bytes: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            nonempty: AtomicBool::new(false),
        }
    }

    fn held(&self) -> crate::shared::sync::MutexGuard<'_, PoolContents> {
        // A panic while the lock is held cannot leave `PoolContents` inconsistent
        // (every update is a push/pop plus an add), so poisoning is ignored.
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `slab` if the budget allows (and the list can grow); otherwise
    /// hands it back to be freed.
    pub(crate) fn give_slab(&self, slab: Slab) -> Option<Slab> {
        let len = slab.len();
        self.give(slab, len, |held| &mut held.slabs)
    }

    /// Keeps `block` if the budget allows (and the list can grow); otherwise
    /// hands it back to be unmapped. A pooled block holds no lock: the
    /// memlock limit would count it while nobody uses it, and the thread
    /// that takes it locks it again if its options ask.
    pub(crate) fn give_block(&self, mut block: LargeBlock) -> Option<LargeBlock> {
        // Unlocked before the pool's lock is taken: a system call.
        let _ = block.set_locked(false);
        let len = block.len();
        self.give(block, len, |held| &mut held.blocks)
    }

    fn give<T>(&self, item: T, len: usize, list: impl FnOnce(&mut PoolContents) -> &mut SystemVec<T>) -> Option<T> {
        let mut held = self.held();
        if held.bytes + len > self.budget_bytes.load(Ordering::Relaxed) {
            return Some(item);
        }
        // A list the system allocator refuses to grow (the heap exhausted
        // at a thread's exit) hands the item back to be freed: no abort.
        let list = list(&mut held);
        if list.try_reserve(1).is_err() {
            return Some(item);
        }
        list.push(item);
        held.bytes += len;
        self.nonempty.store(true, Ordering::Relaxed);
        None
    }

    /// The smallest held slab of `min_bytes` to `max_bytes`: an arena uses
    /// no more of a slab than its large threshold (its bump stays below it),
    /// so a larger one would be mostly idle.
    pub(crate) fn take_slab(&self, min_bytes: usize, max_bytes: usize) -> Option<Slab> {
        self.take(|held| {
            // The slab given last, if it fits exactly (no other can fit
            // better): an exited thread's slab taken by the next one.
            if held.slabs.last().is_some_and(|slab| slab.len() == min_bytes) {
                let slab = held.slabs.pop()?;
                held.bytes -= slab.len();
                return Some(slab);
            }
            Self::take_best_fit(held, min_bytes, max_bytes)
        })
    }

    /// The smallest held slab of `min_bytes` to `max_bytes`, searched for
    /// (out of line: the exact fit above is the common case).
    #[inline(never)]
    fn take_best_fit(held: &mut PoolContents, min_bytes: usize, max_bytes: usize) -> Option<Slab> {
        let fits = |i: &usize| (min_bytes..=max_bytes).contains(&held.slabs[*i].len());
        let index = (0..held.slabs.len()).filter(fits).min_by_key(|&i| held.slabs[i].len())?;
        let slab = held.slabs.swap_remove(index);
        held.bytes -= slab.len();
        Some(slab)
    }

    /// A held large block of exactly `class_bytes`.
    pub(crate) fn take_block(&self, class_bytes: usize) -> Option<LargeBlock> {
        self.take(|held| {
            let index = held.blocks.iter().position(|b| b.len() == class_bytes)?;
            let block = held.blocks.swap_remove(index);
            held.bytes -= block.len();
            Some(block)
        })
    }

    fn take<T>(&self, pick: impl FnOnce(&mut PoolContents) -> Option<T>) -> Option<T> {
        let taken = if self.nonempty.load(Ordering::Relaxed) {
            let mut held = self.held();
            let taken = pick(&mut held);
            self.nonempty.store(held.bytes != 0, Ordering::Relaxed);
            taken
        } else {
            None
        };
        let counter = if taken.is_some() { &self.hits } else { &self.misses };
        counter.fetch_add(1, Ordering::Relaxed);
        taken
    }

    /// Records the slab size an exiting arena had grown to.
    pub(crate) fn note_slab_size(&self, bytes: usize) {
        // A load first: most arenas reach the size the process knows already,
        // and a read-modify-write would take the line from other cores.
        if bytes > self.warm_slab_bytes.load(Ordering::Relaxed) {
            self.warm_slab_bytes.fetch_max(bytes, Ordering::Relaxed);
        }
    }

    /// The slab size the process has needed so far (0 before any arena exited).
    pub(crate) fn warm_slab_bytes(&self) -> usize {
        self.warm_slab_bytes.load(Ordering::Relaxed)
    }

    /// Sets the budget and frees what exceeds it; returns the memory freed.
    /// One critical section: a concurrent [`trim`](SlabPool::trim) or
    /// `set_budget` runs wholly before or after it.
    pub(crate) fn set_budget(&self, budget_bytes: usize) -> Released {
        let mut held = self.held();
        self.budget_bytes.store(budget_bytes, Ordering::Relaxed);
        Self::release_above(&mut held, budget_bytes, &self.nonempty)
    }

    /// Frees everything held, keeping the budget; returns the memory freed.
    /// One critical section that never writes the budget, so a concurrent
    /// [`set_budget`](SlabPool::set_budget) is never undone.
    pub(crate) fn trim(&self) -> Released {
        let mut held = self.held();
        Self::release_above(&mut held, 0, &self.nonempty)
    }

    /// Frees held memory until at most `budget_bytes` remain (under the lock).
    fn release_above(held: &mut PoolContents, budget_bytes: usize, nonempty: &AtomicBool) -> Released {
        let mut released = Released::default();
        while held.bytes > budget_bytes {
            if let Some(block) = held.blocks.pop() {
                held.bytes -= block.len();
                released.blocks += 1;
            } else if let Some(slab) = held.slabs.pop() {
                held.bytes -= slab.len();
                released.slabs += 1;
            } else {
                break;
            }
        }
        nonempty.store(held.bytes != 0, Ordering::Relaxed);
        released
    }

    /// What the pool holds now, and its hit counters.
    pub(crate) fn snapshot(&self) -> PoolSnapshot {
        let held = self.held();
        PoolSnapshot {
            bytes: held.bytes,
            slabs: held.slabs.len(),
            blocks: held.blocks.len(),
            budget_bytes: self.budget_bytes.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

/// Memory a pool operation gave back to the OS.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Released {
    pub(crate) slabs: u64,
    pub(crate) blocks: u64,
}

/// What [`SlabPool::snapshot`] reads.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolSnapshot {
    pub(crate) bytes: usize,
    pub(crate) slabs: usize,
    pub(crate) blocks: usize,
    pub(crate) budget_bytes: usize,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
}

/// Counters summed over every arena of the process, live or dropped. Arenas
/// add their differences on slow paths only (a new slab, a mapping, the exit
/// of a scope that released memory, their drop), so the hot path never
/// touches them.
pub(crate) struct GlobalCounters {
    /// One total per field of [`Counters`], in its order.
    totals: [AtomicU64; Counters::LEN],
    pub(crate) arenas_dropped: AtomicU64,
}

impl GlobalCounters {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> GlobalCounters {
        GlobalCounters { totals: [const { AtomicU64::new(0) }; Counters::LEN], arenas_dropped: AtomicU64::new(0) }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> GlobalCounters {
        GlobalCounters { totals: std::array::from_fn(|_| AtomicU64::new(0)), arenas_dropped: AtomicU64::new(0) }
    }

    /// Adds `delta` (an arena's counts since its last publication).
    pub(crate) fn add(&self, delta: &Counters) {
        for (total, value) in self.totals.iter().zip(delta.to_array()) {
            if value != 0 {
                total.fetch_add(value, Ordering::Relaxed);
            }
        }
    }

    /// The totals so far.
    pub(crate) fn snapshot(&self) -> Counters {
        Counters::from_array(std::array::from_fn(|i| self.totals[i].load(Ordering::Relaxed)))
    }
}

/// What every arena that uses the pool shares: the pool and the counters.
pub(crate) type Shared = (SlabPool, GlobalCounters);

/// The process-wide pool and counters. Arenas reach it through [`global`]
/// rather than hold a reference: a `const` thread-local arena may not point
/// to memory with interior mutability on every supported compiler.
#[cfg(not(loom))]
static SHARED: Shared = (SlabPool::new(DEFAULT_POOL_BUDGET_BYTES), GlobalCounters::new());

/// The process-wide pool and counters. Under `cfg(loom)` there is none (loom
/// objects cannot live in statics); the models build their own instances.
#[cfg(not(loom))]
pub(crate) const fn global() -> Option<&'static Shared> {
    Some(&SHARED)
}

#[cfg(loom)]
pub(crate) const fn global() -> Option<&'static Shared> {
    None
}

/// The process-wide figures as published so far (see [`crate::process::stats`]).
pub(crate) fn global_stats_published() -> crate::stats::GlobalStats {
    if crate::busy::thread_is_busy() {
        return crate::stats::GlobalStats::default();
    }
    let Some((pool, counters)) = global() else { return crate::stats::GlobalStats::default() };
    let held = pool.snapshot();
    let totals = counters.snapshot();
    crate::stats::GlobalStats {
        pool_bytes: held.bytes,
        pool_slabs: held.slabs,
        pool_large_blocks: held.blocks,
        pool_budget_bytes: held.budget_bytes,
        pool_hits: held.hits,
        pool_misses: held.misses,
        arenas_dropped: counters.arenas_dropped.load(Ordering::Relaxed),
        ..crate::stats::GlobalStats::from_counters(totals)
    }
}

/// Sets the bound on the bytes the process-wide pool holds (default 256
/// MiB), returning what exceeds it to the OS now. A budget of 0 disables
/// pooling: dropped arenas then return everything to the OS.
///
/// Does nothing when called from a global allocator in the middle of an arena
/// operation of this thread.
///
/// ```
/// arena::process::set_pool_budget(64 << 20); // keep at most 64 MiB of exited threads' memory
/// std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(1 << 20)))).join().unwrap();
/// assert!(arena::process::stats().pool_bytes <= 64 << 20);
/// ```
pub fn set_pool_budget(budget_bytes: usize) {
    if crate::busy::thread_is_busy() {
        return;
    }
    let _busy = crate::busy::BusyGuard::raise();
    if let Some((pool, counters)) = global() {
        count_released(counters, pool.set_budget(budget_bytes));
    }
}

/// Adds what a pool operation gave back to the OS to the process-wide counters.
pub(crate) fn count_released(counters: &GlobalCounters, released: Released) {
    counters.add(&Counters { system_deallocations: released.slabs, munmaps: released.blocks, ..Counters::ZERO });
}

/// Returns everything the process-wide pool holds to the OS now, keeping its
/// budget. Does nothing where [`process::set_pool_budget`](crate::process::set_pool_budget) does nothing.
///
/// ```
/// std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(1 << 20)))).join().unwrap();
/// arena::process::trim_pool();
/// assert_eq!(arena::process::stats().pool_bytes, 0);
/// ```
pub fn trim_pool() {
    if crate::busy::thread_is_busy() {
        return;
    }
    let _busy = crate::busy::BusyGuard::raise();
    if let Some((pool, counters)) = global() {
        count_released(counters, pool.trim());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::MAX_ALIGN_BYTES;

    fn pool_of(pages: &[usize]) -> SlabPool {
        let pool = SlabPool::new(DEFAULT_POOL_BUDGET_BYTES);
        for &n in pages {
            assert!(pool.give_slab(Slab::allocate(n * MAX_ALIGN_BYTES).expect("a test slab")).is_none());
        }
        pool
    }

    fn take_pages(pool: &SlabPool, pages: usize) -> Option<usize> {
        pool.take_slab(pages * MAX_ALIGN_BYTES, usize::MAX).map(|slab| slab.len() / MAX_ALIGN_BYTES)
    }

    #[test]
    fn a_take_gets_the_smallest_slab_that_fits() {
        // The last slab given fits exactly; further ones fit worse or not at all.
        let pool = pool_of(&[4, 1, 3, 2]);
        assert_eq!(take_pages(&pool, 2), Some(2));
        // The last slab given fits, but not best.
        let pool = pool_of(&[4, 2, 1, 3]);
        assert_eq!(take_pages(&pool, 2), Some(2));
        assert_eq!(take_pages(&pool, 2), Some(3));
        assert_eq!(take_pages(&pool, 5), None);
        assert_eq!(take_pages(&pool, 1), Some(1));
        assert_eq!(take_pages(&pool, 1), Some(4));
        assert_eq!(take_pages(&pool, 1), None);
        let held = pool.snapshot();
        assert_eq!((held.bytes, held.slabs, held.hits, held.misses), (0, 0, 4, 2));
    }
}
