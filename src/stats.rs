//! Counters an arena keeps about itself, and the snapshots users read.
#![forbid(unsafe_code)]

use std::ops::{Add, Sub};

/// Declares [`Counters`] from one list of counters, each with the snapshots
/// that carry it under the same name: the struct, its length, the
/// conversions to and from an array in declaration order, and
/// `Stats::from_counters` and `GlobalStats::from_counters`, so that a new
/// counter is written once (and once more as a documented field of each
/// snapshot that carries it).
macro_rules! counters {
    ($($field:ident: $($snapshot:ident)|+),* $(,)?) => {
        /// The event counts of an arena, in one place: each part that causes
        /// an event adds to it, [`Stats`] and [`GlobalStats`] are built from
        /// it, and the process-wide totals receive differences of two of them.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub(crate) struct Counters {
            $(pub(crate) $field: u64,)*
        }

        impl Counters {
            /// The number of counters.
            pub(crate) const LEN: usize = [$(stringify!($field)),*].len();

            /// The counters in declaration order.
            pub(crate) const fn to_array(self) -> [u64; Counters::LEN] {
                [$(self.$field),*]
            }

            /// The inverse of [`to_array`](Counters::to_array).
            pub(crate) const fn from_array(values: [u64; Counters::LEN]) -> Counters {
                let [$($field),*] = values;
                Counters { $($field),* }
            }
        }

        impl Stats {
            /// The event counts of `counters`; every other figure zero.
            pub(crate) fn from_counters(counters: Counters) -> Stats {
                let mut stats = Stats::default();
                $(counters!(@carry Stats, stats, counters, $field, $($snapshot)|+);)*
                stats
            }
        }

        impl GlobalStats {
            /// The event counts of `counters` that the process-wide figures
            /// carry; every other figure zero.
            pub(crate) fn from_counters(counters: Counters) -> GlobalStats {
                let mut stats = GlobalStats::default();
                $(counters!(@carry GlobalStats, stats, counters, $field, $($snapshot)|+);)*
                stats
            }
        }
    };
    // `$to.$field = $from.$field` if `$snapshot` is among the snapshots listed.
    (@carry Stats, $to:ident, $from:ident, $field:ident, Stats $(| $rest:ident)*) => {
        $to.$field = $from.$field;
    };
    (@carry GlobalStats, $to:ident, $from:ident, $field:ident, GlobalStats $(| $rest:ident)*) => {
        $to.$field = $from.$field;
    };
    (@carry $snapshot:ident, $to:ident, $from:ident, $field:ident, $other:ident $(| $rest:ident)*) => {
        counters!(@carry $snapshot, $to, $from, $field, $($rest)|*)
    };
    (@carry $snapshot:ident, $to:ident, $from:ident, $field:ident, ) => {};
}

counters!(
    system_allocations: Stats | GlobalStats,
    system_deallocations: Stats | GlobalStats,
    large_cache_hits: Stats | GlobalStats,
    large_cache_misses: Stats,
    mmaps: Stats | GlobalStats,
    munmaps: Stats | GlobalStats,
    madvise_calls: Stats,
    bytes_returned_to_os: Stats,
    advice_errors: Stats,
);

impl Counters {
    pub(crate) const ZERO: Counters = Counters::from_array([0; Counters::LEN]);

    /// Whether every counter is 0: one test of all of them or-ed together
    /// (a few vector instructions, no branch per counter).
    #[inline]
    pub(crate) fn is_zero(&self) -> bool {
        self.to_array().iter().fold(0, |any, &value| any | value) == 0
    }
}

/// The events of an arena's slab, side and bypass paths, which only ever
/// allocate and free through the system allocator: the two [`Counters`] of
/// theirs, so that a test for unpublished events reads two words for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SystemCalls {
    pub(crate) system_allocations: u64,
    pub(crate) system_deallocations: u64,
}

impl SystemCalls {
    pub(crate) const ZERO: SystemCalls = SystemCalls { system_allocations: 0, system_deallocations: 0 };
}

impl Counters {
    /// These counters with the events of `calls` added.
    #[inline]
    pub(crate) fn with_calls(self, calls: SystemCalls) -> Counters {
        Counters {
            system_allocations: self.system_allocations + calls.system_allocations,
            system_deallocations: self.system_deallocations + calls.system_deallocations,
            ..self
        }
    }
}

impl Add for Counters {
    type Output = Counters;

    /// The events of two parts together.
    #[inline]
    fn add(self, other: Counters) -> Counters {
        let (a, b) = (self.to_array(), other.to_array());
        Counters::from_array(std::array::from_fn(|i| a[i] + b[i]))
    }
}

impl Sub for Counters {
    type Output = Counters;

    /// The events between two snapshots (`self` the later one).
    #[inline]
    fn sub(self, earlier: Counters) -> Counters {
        let (now, before) = (self.to_array(), earlier.to_array());
        Counters::from_array(std::array::from_fn(|i| now[i].wrapping_sub(before[i])))
    }
}

/// A snapshot of an arena's counters, from [`stats`](crate::stats) or
/// [`Arena::stats`](crate::Arena::stats).
///
/// ```
/// arena::scope(|s| drop(s.zeroed::<f64>(1000)));
/// let after = arena::stats();
/// assert_eq!(after.bytes_in_use, 0);
/// assert!(after.high_water >= 8000);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Bytes handed out and not yet released, alignment padding included.
    /// A block in the slabs takes whole 8-byte grains (a 3-byte block counts
    /// 8), which spares every request aligned to at most 8 bytes a padding
    /// computation.
    pub bytes_in_use: usize,
    /// The largest `bytes_in_use` has been since the arena was created.
    pub high_water: usize,
    /// Slabs the arena holds, in use or kept for reuse.
    pub slab_count: usize,
    /// Bytes obtained from the system allocator and not yet returned.
    pub reserved_bytes: usize,
    /// Calls to the system allocator (slabs and side blocks) so far.
    pub system_allocations: u64,
    /// Memory regions returned to the system allocator so far.
    pub system_deallocations: u64,
    /// Scopes open right now.
    pub depth: usize,
    /// Bytes of large blocks in use, whole size classes (see
    /// [`Config::large_threshold_bytes`](crate::Config::large_threshold_bytes));
    /// the page each one's mapping has in front of it for its header is not
    /// counted here, but is in [`process::held_bytes`](crate::process::held_bytes).
    pub large_live_bytes: usize,
    /// Resident bytes of released large blocks kept for reuse.
    pub large_cached_bytes: usize,
    /// Bytes of cached large blocks whose pages were given back (as
    /// [`ReturnMode`](crate::ReturnMode) says): address space only, no memory.
    pub large_cold_bytes: usize,
    /// Large requests served from the cache (no `mmap`).
    pub large_cache_hits: u64,
    /// Large requests that needed a new mapping.
    pub large_cache_misses: u64,
    /// Mappings made (`mmap`; Windows: `VirtualAlloc`).
    pub mmaps: u64,
    /// Mappings unmapped (`munmap`; Windows: `VirtualFree`).
    pub munmaps: u64,
    /// Calls that gave a cached block's pages back, keeping its mapping
    /// (`madvise` on Linux; see [`ReturnMode`](crate::ReturnMode) elsewhere).
    pub madvise_calls: u64,
    /// Bytes of large blocks given back to the OS (advised away or unmapped while resident).
    pub bytes_returned_to_os: u64,
    /// OS requests refused: huge-page advice, giving pages back.
    pub advice_errors: u64,
}

impl Stats {
    /// Fraction of large requests served from the cache (0 when there were none).
    ///
    /// ```
    /// arena::scope(|s| {
    ///     for _ in 0..4 {
    ///         drop(s.zeroed::<u8>(2 << 20)); // the first maps, the rest reuse
    ///     }
    /// });
    /// assert!(arena::stats().large_hit_rate() >= 0.75);
    /// ```
    pub fn large_hit_rate(&self) -> f64 {
        let total = self.large_cache_hits + self.large_cache_misses;
        if total == 0 { 0.0 } else { self.large_cache_hits as f64 / total as f64 }
    }
}

/// Process-wide figures, from [`process::stats`](crate::process::stats): the
/// shared pool of spare memory, and counters summed over every arena of the
/// process, live or dropped.
///
/// Each arena adds its counts when it takes memory from or returns memory to
/// the system (a new slab, a mapping, a release to the OS) and when it is
/// dropped, so the totals may lag a live thread's latest cheap operations
/// (large blocks reused from its cache), never its memory traffic; a scope
/// exit writes nothing other threads read. [`process::stats`](crate::process::stats)
/// adds the calling thread's counts first.
///
/// ```
/// std::thread::spawn(|| arena::scope(|s| drop(s.zeroed::<u8>(10_000)))).join().unwrap();
/// let global = arena::process::stats();
/// assert!(global.arenas_dropped >= 1); // the thread's arena went to the pool
/// assert!(global.system_allocations >= 1);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GlobalStats {
    /// Bytes of spare slabs and large blocks the pool holds.
    pub pool_bytes: usize,
    /// Spare slabs in the pool.
    pub pool_slabs: usize,
    /// Spare large blocks in the pool.
    pub pool_large_blocks: usize,
    /// The pool's budget (see [`process::set_pool_budget`](crate::process::set_pool_budget)).
    pub pool_budget_bytes: usize,
    /// Requests for a slab or large block that the pool served.
    pub pool_hits: u64,
    /// Requests the pool could not serve (the OS was asked).
    pub pool_misses: u64,
    /// Arenas dropped so far (thread exits, dropped owned arenas).
    pub arenas_dropped: u64,
    /// Calls to the system allocator, all arenas.
    pub system_allocations: u64,
    /// Regions returned to the system allocator, all arenas and the pool.
    pub system_deallocations: u64,
    /// `mmap` calls, all arenas.
    pub mmaps: u64,
    /// `munmap` calls, all arenas and the pool.
    pub munmaps: u64,
    /// Large requests served from an arena's cache (no `mmap`), all arenas.
    pub large_cache_hits: u64,
}

/// Counters can be added to the snapshots without breaking users: code
/// outside the crate reads their fields but cannot build one.
///
/// ```compile_fail,E0639
/// let _ = arena::Stats { bytes_in_use: 0, ..arena::Stats::default() };
/// ```
///
/// ```compile_fail,E0639
/// let _ = arena::GlobalStats { pool_bytes: 0, ..arena::GlobalStats::default() };
/// ```
///
/// ```compile_fail,E0639
/// let _ = arena::capture::CaptureStats { active: false, ..arena::capture::CaptureStats::default() };
/// ```
///
/// ```compile_fail,E0639
/// let _ = arena::capture::CaptureCounts { captures: 0, ..arena::capture::CaptureCounts::default() };
/// ```
#[cfg(doctest)]
pub struct SnapshotsAreNonExhaustive;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_all_zero_counters_are_zero() {
        assert!(Counters::ZERO.is_zero());
        for field in 0..Counters::LEN {
            for value in [1, u64::MAX] {
                let mut values = [0; Counters::LEN];
                values[field] = value;
                assert!(!Counters::from_array(values).is_zero(), "counter {field} at {value}");
            }
        }
    }

    /// Distinct counts, so that a count mapped to the wrong field shows.
    fn distinct() -> Counters {
        Counters::from_array(std::array::from_fn(|i| 100 + i as u64))
    }

    #[test]
    fn an_arena_snapshot_carries_every_count_under_its_name() {
        let c = distinct();
        let s = Stats::from_counters(c);
        assert_eq!(
            [
                s.system_allocations,
                s.system_deallocations,
                s.large_cache_hits,
                s.large_cache_misses,
                s.mmaps,
                s.munmaps,
                s.madvise_calls,
                s.bytes_returned_to_os,
                s.advice_errors,
            ],
            c.to_array()
        );
        let others = Stats {
            system_allocations: 0,
            system_deallocations: 0,
            large_cache_hits: 0,
            large_cache_misses: 0,
            mmaps: 0,
            munmaps: 0,
            madvise_calls: 0,
            bytes_returned_to_os: 0,
            advice_errors: 0,
            ..s
        };
        assert_eq!(others, Stats::default(), "the figures that are not counts stay zero");
    }

    #[test]
    fn the_process_snapshot_carries_its_counts_under_their_names() {
        let c = distinct();
        let g = GlobalStats::from_counters(c);
        let carried = [g.system_allocations, g.system_deallocations, g.large_cache_hits, g.mmaps, g.munmaps];
        let expected = [c.system_allocations, c.system_deallocations, c.large_cache_hits, c.mmaps, c.munmaps];
        assert_eq!(carried, expected);
        let others = GlobalStats {
            system_allocations: 0,
            system_deallocations: 0,
            large_cache_hits: 0,
            mmaps: 0,
            munmaps: 0,
            ..g
        };
        assert_eq!(others, GlobalStats::default(), "the pool's figures are not counts of an arena");
    }
}
