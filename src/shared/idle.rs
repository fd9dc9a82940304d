//! The idle large blocks of every arena, reachable from every thread.
//!
//! An arena keeps the large blocks its scopes released in a cache of its own
//! (`mem::large::LargeBlockCache`), so that a loop reuses its mappings. Those
//! blocks count against the process limit and may hold locked pages, yet an
//! arena whose thread waits for work (an idle rayon worker) never runs a
//! path that could give them back. So each arena's cache sits on a [`Shelf`]
//! of its own, behind a lock, listed in a process-wide [`ShelfRegistry`]: a
//! request refused for want of memory, on any thread, clears every shelf
//! ([`reclaim_idle`]) and is tried once more.
//!
//! The lock is taken only where an arena takes a large block from its cache
//! or puts one back: the large-block path, whose every request is for a
//! megabyte or more (by default) and keeps a record; the bump path never
//! sees it. Uncontended but for a reclaim, it costs one atomic
//! read-modify-write each way.
//!
//! Lock order: the registry's list, then a shelf's cache, then the pool's.
//! An owner holds its shelf's lock for one cache operation, or while its
//! arena's drop gives the cached blocks to the pool; it never takes the
//! registry's lock while holding it, and the pool never takes a shelf's, so
//! no cycle exists.
//!
//! A child forked while another thread held one of these locks would wait
//! for it forever: fork only from a single-threaded process, or `exec` at
//! once (as for the pool and the capture region).

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;

use crate::mem::large::LargeBlockCache;
use crate::mem::system::{SystemVec, system_vec};
use crate::shared::sync::{Mutex, MutexGuard};
use crate::stats::Counters;

/// One arena's cache of idle large blocks, where other threads can reach it.
///
/// Invariant: allocated from [`System`] by `IdleShelf::make` and freed by
/// `IdleShelf`'s drop, once, after it left its registry; while it is listed
/// in a registry it is valid, and any thread may lock `cache`.
struct Shelf {
    cache: Mutex<LargeBlockCache>,
    /// The registry that lists the shelf, if one does.
    registry: Option<&'static ShelfRegistry>,
}

/// A shelf's address, as the registry lists it.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ShelfPtr(NonNull<Shelf>);

// SAFETY: a listed shelf is valid until it leaves the list (the `Shelf`
// invariant), and everything another thread does through the address goes
// through the shelf's `Mutex`.
unsafe impl Send for ShelfPtr {}

/// The shelves of every arena that holds idle large blocks, so that any
/// thread can clear them.
///
/// Invariant: every listed shelf is valid (a shelf leaves the list, under its
/// lock, before it is freed).
pub(crate) struct ShelfRegistry {
    shelves: Mutex<SystemVec<ShelfPtr>>,
}

impl ShelfRegistry {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> ShelfRegistry {
        ShelfRegistry { shelves: Mutex::new(system_vec()) }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> ShelfRegistry {
        ShelfRegistry { shelves: Mutex::new(system_vec()) }
    }

    fn shelves(&self) -> MutexGuard<'_, SystemVec<ShelfPtr>> {
        // Every update is one push or one removal: a panic cannot leave the list half changed.
        self.shelves.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Gives back every idle block of every listed shelf, counting in `os`;
    /// returns the bytes of the blocks given back.
    pub(crate) fn clear_all(&self, os: &mut Counters) -> usize {
        let shelves = self.shelves();
        let mut cleared = 0;
        for shelf in shelves.iter() {
            // SAFETY: a listed shelf is valid, and cannot leave the list (and
            // be freed) while this thread holds the list's lock.
            let shelf = unsafe { shelf.0.as_ref() };
            cleared += clear(&mut lock(&shelf.cache), os);
        }
        cleared
    }

    /// How many shelves are listed.
    #[cfg(all(loom, test))]
    pub(crate) fn len(&self) -> usize {
        self.shelves().len()
    }
}

/// The process's registry. Under `cfg(loom)` there is none (loom objects
/// cannot live in statics); the models build their own.
#[cfg(not(loom))]
static REGISTRY: ShelfRegistry = ShelfRegistry::new();

/// The process's registry of shelves.
#[cfg(not(loom))]
pub(crate) fn registry() -> Option<&'static ShelfRegistry> {
    Some(&REGISTRY)
}

#[cfg(loom)]
pub(crate) fn registry() -> Option<&'static ShelfRegistry> {
    None
}

/// Locks a shelf's cache. A panic while it is held (a failed invariant
/// check) leaves the counts as they were: poisoning is ignored.
fn lock(cache: &Mutex<LargeBlockCache>) -> MutexGuard<'_, LargeBlockCache> {
    cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Gives back every block of `cache`, counting in `os`; returns their bytes.
fn clear(cache: &mut LargeBlockCache, os: &mut Counters) -> usize {
    let bytes = cache.warm_bytes + cache.cold_bytes;
    if bytes != 0 {
        cache.clear(os);
    }
    bytes
}

/// An arena's handle to its shelf: none until the arena first caches a
/// large block, so that an arena that only bumps allocates nothing for it.
///
/// Invariant: `shelf`, when set, is a valid shelf this handle alone owns
/// (the registry only borrows it, under its lock).
pub(crate) struct IdleShelf {
    shelf: Option<NonNull<Shelf>>,
}

// SAFETY: the shelf is owned by the handle, and its cache is behind a `Mutex`
// (a `LargeBlockCache` may move between threads, as its blocks may).
unsafe impl Send for IdleShelf {}

impl IdleShelf {
    pub(crate) const fn new() -> IdleShelf {
        IdleShelf { shelf: None }
    }

    /// Whether the shelf exists (else dropping the handle does nothing).
    pub(crate) fn owns_memory(&self) -> bool {
        self.shelf.is_some()
    }

    /// The cache, locked, if the shelf exists.
    pub(crate) fn existing(&self) -> Option<MutexGuard<'_, LargeBlockCache>> {
        // SAFETY: the handle's shelf is valid while the handle lives.
        self.shelf.map(|shelf| lock(unsafe { &shelf.as_ref().cache }))
    }

    /// The cache, locked; the shelf is made first if need be, and listed in
    /// `registry`. `None` if the system allocator refuses the room for it;
    /// a shelf the registry has no room to list works, out of other
    /// threads' reach.
    pub(crate) fn cache(
        &mut self,
        registry: Option<&'static ShelfRegistry>,
    ) -> Option<MutexGuard<'_, LargeBlockCache>> {
        let shelf = match self.shelf {
            Some(shelf) => shelf,
            None => self.make(registry)?,
        };
        // SAFETY: the handle's shelf is valid while the handle lives.
        Some(lock(unsafe { &shelf.as_ref().cache }))
    }

    /// Makes the shelf and lists it.
    #[cold]
    fn make(&mut self, registry: Option<&'static ShelfRegistry>) -> Option<NonNull<Shelf>> {
        let layout = Layout::new::<Shelf>();
        // SAFETY: `Shelf` is not zero-sized.
        let shelf = NonNull::new(unsafe { System.alloc(layout) })?.cast::<Shelf>();
        let mut shelves = registry.map(ShelfRegistry::shelves);
        let listed = shelves.as_mut().is_some_and(|list| list.try_reserve(1).is_ok());
        let registry = registry.filter(|_| listed);
        // SAFETY: `shelf` is fresh, aligned and valid for writes of one `Shelf`.
        unsafe { shelf.write(Shelf { cache: Mutex::new(LargeBlockCache::new()), registry }) };
        if let (true, Some(list)) = (listed, shelves.as_mut()) {
            list.push(ShelfPtr(shelf));
        }
        self.shelf = Some(shelf);
        Some(shelf)
    }

    /// Gives back every block on this shelf, counting in `os`; returns their bytes.
    pub(crate) fn clear(&self, os: &mut Counters) -> usize {
        self.existing().map_or(0, |mut cache| clear(&mut cache, os))
    }
}

impl Drop for IdleShelf {
    /// Takes the shelf out of its registry, then frees it with what it still
    /// holds (its arena gives its blocks to the pool or the OS first).
    fn drop(&mut self) {
        let Some(shelf) = self.shelf.take() else { return };
        // SAFETY: the handle's shelf is valid until freed below.
        if let Some(registry) = unsafe { shelf.as_ref() }.registry {
            let mut shelves = registry.shelves();
            if let Some(index) = shelves.iter().position(|&listed| listed == ShelfPtr(shelf)) {
                shelves.swap_remove(index);
            }
        }
        // SAFETY: the shelf left its registry under the registry's lock, so no
        // other thread reaches it any more; it was allocated from `System` with
        // `Shelf`'s layout and holds an initialised `Shelf`, dropped and freed
        // once, here.
        unsafe {
            shelf.drop_in_place();
            System.dealloc(shelf.as_ptr().cast::<u8>(), Layout::new::<Shelf>());
        }
    }
}

/// Gives back the idle memory of every arena and of the pool, for a request
/// refused for want of memory (the process limit, `RLIMIT_MEMLOCK`, or the
/// system's refusal of a mapping): the blocks on `own` (the asking arena's
/// shelf, which may be out of the registry's reach; counted in `os`), then
/// [`give_back_all_idle`]. Returns whether anything was given back (else a
/// retry would fail as the request did).
///
/// The caller holds no shelf's lock.
pub(crate) fn reclaim_idle(own: &IdleShelf, os: &mut Counters) -> bool {
    let own_bytes = own.clear(os);
    give_back_all_idle() || own_bytes != 0
}

/// Gives back the blocks on every listed shelf and everything the pool
/// holds, counted in the process-wide counters (the arenas that kept them
/// did not give them back); returns whether anything was given back.
///
/// The caller holds no shelf's lock.
pub(crate) fn give_back_all_idle() -> bool {
    let mut os = Counters::ZERO;
    let shelves_bytes = registry().map_or(0, |registry| registry.clear_all(&mut os));
    let Some((pool, counters)) = crate::shared::pool::global() else { return shelves_bytes != 0 };
    counters.add(&os);
    let released = pool.trim();
    crate::shared::pool::count_released(counters, released);
    shelves_bytes != 0 || released != crate::shared::pool::Released::default()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn listed(registry: &ShelfRegistry) -> usize {
        registry.shelves().len()
    }

    #[test]
    fn a_shelf_is_made_on_first_use_and_leaves_its_registry_when_dropped() {
        // The test's own: the process's lists the shelves of other tests' arenas.
        static REGISTRY: ShelfRegistry = ShelfRegistry::new();
        let registry = &REGISTRY;
        let mut shelves: Vec<IdleShelf> = (0..3).map(|_| IdleShelf::new()).collect();
        assert!(shelves.iter().all(|shelf| !shelf.owns_memory() && shelf.existing().is_none()));
        for shelf in &mut shelves {
            assert_eq!(shelf.cache(Some(registry)).map(|cache| cache.warm_bytes), Some(0));
        }
        assert_eq!(listed(registry), 3);
        // The registry reaches every shelf; an empty one gives nothing back.
        assert_eq!(registry.clear_all(&mut Counters::default()), 0);
        // The middle one goes: the others stay listed and reachable.
        drop(shelves.remove(1));
        assert_eq!(listed(registry), 2);
        assert_eq!(registry.clear_all(&mut Counters::default()), 0);
        drop(shelves);
        assert_eq!(listed(registry), 0);
    }

    #[test]
    fn a_shelf_without_a_registry_works_out_of_reach() {
        let mut shelf = IdleShelf::new();
        assert!(shelf.cache(None).is_some());
        assert!(shelf.owns_memory());
        assert_eq!(shelf.clear(&mut Counters::default()), 0);
    }
}
