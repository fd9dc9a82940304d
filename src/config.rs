//! Tuning knobs of an arena.
#![forbid(unsafe_code)]

/// The largest alignment the arena serves, which is also the alignment of
/// every slab (its first byte satisfies any alignment the arena serves) and
/// the unit slab sizes are rounded to. Not the OS's page size: slabs come
/// from the system allocator and never go to the OS directly, while
/// everything the OS sees counts in its own pages, read at run time
/// (`sys::page_bytes`).
pub(crate) const MAX_ALIGN_BYTES: usize = 4096;

/// How an arena sizes, keeps and limits its memory.
///
/// Build one from [`Config::DEFAULT`] with struct update syntax:
///
/// ```
/// let config = arena::Config { retain_bytes: 1 << 20, ..arena::Config::DEFAULT };
/// arena::configure(config);
/// assert_eq!(arena::config().retain_bytes, 1 << 20);
/// ```
///
/// Values out of range are clamped rather than rejected: slab sizes are
/// rounded up to whole multiples of 4 KiB (the largest alignment the arena
/// serves, whatever the OS's page size), `first_slab_bytes` is at least
/// 4 KiB and `max_slab_bytes` at least `first_slab_bytes`, and neither is
/// larger than `large_threshold_bytes` rounded up to 4 KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Size of the first slab. Later slabs double in size up to
    /// `max_slab_bytes`. Default 64 KiB.
    pub first_slab_bytes: usize,
    /// Cap of the geometric slab growth. A request larger than the next slab
    /// moves the sequence along to the first size that holds it, so a run of
    /// such requests shares ever larger slabs; a request larger than the cap
    /// gets a slab of its own size and 4 KiB more (a slab's first 64 bytes
    /// and last 8 are never handed out, so a slab holds 72 bytes less than
    /// its size), and later slabs stay within the cap. At most the large
    /// threshold (rounded up to 4 KiB): the bump's end stays within the
    /// threshold of the slab's first byte handed out, so that no bump
    /// serves a block of the threshold or more and the fast path needs no
    /// size test; a larger slab would leave its rest unused. Default 1 MiB.
    pub max_slab_bytes: usize,
    /// Slab bytes kept for reuse when the outermost scope exits; slabs beyond
    /// this go back to the system allocator. A loop whose working set fits in
    /// this budget makes no system allocation after its first iteration.
    /// Default 64 MiB.
    pub retain_bytes: usize,
    /// Upper bound on [`Stats::bytes_in_use`](crate::Stats::bytes_in_use):
    /// a request that would exceed it fails with
    /// [`AllocError`](crate::AllocError) (`try_*` methods) or a panic naming
    /// the numbers. Default: no limit (`usize::MAX`).
    pub limit_bytes: usize,
    /// Requests of at least this many bytes (counted in whole 8-byte grains,
    /// as the slabs hand memory out, plus the alignment less 64 for a
    /// request aligned to more than 64 bytes: the padding it needs at the
    /// start of a slab) bypass the slabs and get their own
    /// mapping (a *large block*), cached by size class after release and
    /// returned early when the array that holds one is dropped. Default 1 MiB:
    /// from it on, an own mapping lets the block go back before the scope
    /// ends, and its cost (a syscall and page faults) is paid only on a cache
    /// miss. Slabs are no larger than the threshold, so an array just below
    /// it may leave the rest of its slab to smaller requests. Values below
    /// 4 KiB are raised to 4 KiB.
    pub large_threshold_bytes: usize,
    /// Resident bytes of released large blocks kept for reuse. Blocks released
    /// beyond it go back to the OS as [`return_mode`](Config::return_mode)
    /// says. Default 256 MiB.
    ///
    /// The cost model of a large request: a resident cached block of its size
    /// class, or of a class up to twice as large, serves it with no syscall
    /// and no page fault (so a released temporary serves the next one of a
    /// somewhat different size); otherwise an advised-away block of its class
    /// serves it with no `mmap` but a fault per page; otherwise it is a new
    /// mapping, and the resident cached blocks smaller than it go back to
    /// the OS first. Sequential temporaries released one after another (the
    /// early free) therefore peak at about the largest of them, whatever
    /// this budget; it bounds what stays resident for temporaries that are
    /// alive together, or that shrink by more than half.
    pub large_retain_bytes: usize,
    /// How large blocks beyond the retention budget go back to the OS.
    /// Default [`ReturnMode::DontNeed`]: RSS drops at once.
    pub return_mode: ReturnMode,
    /// Requests made to the OS for every new large mapping (huge pages,
    /// pre-faulting, locking). Default: transparent huge pages (Linux) for
    /// blocks of a huge page (2 MiB with 4 KiB pages) or more, as NumPy asks
    /// for its large buffers (one fault per 2 MiB instead of 512); no
    /// pre-faulting, no locking.
    pub map_options: MapOptions,
    /// Take spare slabs and large blocks from the process-wide pool before
    /// asking the OS, start the first slab at the size other threads grew to,
    /// and give this arena's memory to the pool when it is dropped (thread
    /// exit). Default true; turn it off for an arena whose counters must
    /// reflect only its own traffic.
    pub use_pool: bool,
}

impl Config {
    /// The configuration a new arena starts with.
    pub const DEFAULT: Config = Config {
        first_slab_bytes: 64 * 1024,
        max_slab_bytes: 1024 * 1024,
        retain_bytes: 64 * 1024 * 1024,
        limit_bytes: usize::MAX,
        large_threshold_bytes: 1024 * 1024,
        large_retain_bytes: 256 * 1024 * 1024,
        return_mode: ReturnMode::DontNeed,
        map_options: MapOptions::DEFAULT,
        use_pool: true,
    };

    /// This configuration with slab sizes and the large threshold clamped
    /// to the documented ranges.
    pub(crate) const fn normalized(self) -> Config {
        let threshold =
            if self.large_threshold_bytes < MAX_ALIGN_BYTES { MAX_ALIGN_BYTES } else { self.large_threshold_bytes };
        let largest = round_to_pages(threshold);
        let first = min(round_to_pages(self.first_slab_bytes), largest);
        let max = min(round_to_pages(self.max_slab_bytes), largest);
        Config {
            first_slab_bytes: first,
            max_slab_bytes: if max < first { first } else { max },
            large_threshold_bytes: threshold,
            ..self
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::DEFAULT
    }
}

const fn min(a: usize, b: usize) -> usize {
    if a < b { a } else { b }
}

/// `bytes` rounded up to whole multiples of [`MAX_ALIGN_BYTES`], at least
/// one, saturating at the largest multiple.
const fn round_to_pages(bytes: usize) -> usize {
    match bytes.checked_next_multiple_of(MAX_ALIGN_BYTES) {
        Some(0) => MAX_ALIGN_BYTES,
        Some(rounded) => rounded,
        None => usize::MAX & !(MAX_ALIGN_BYTES - 1),
    }
}

impl MapOptions {
    /// Huge pages on, the rest off: the large-block part of [`Config::DEFAULT`].
    pub const DEFAULT: MapOptions = MapOptions { huge_pages: true, populate: false, lock: false };
}

impl Default for MapOptions {
    fn default() -> Self {
        MapOptions::DEFAULT
    }
}

/// What happens to a released large block that does not fit in the retention budget.
///
/// ```
/// // Unmap released blocks beyond a 64 MiB budget instead of advising them away.
/// arena::configure(arena::Config {
///     large_retain_bytes: 64 << 20,
///     return_mode: arena::ReturnMode::Unmap,
///     ..arena::Config::DEFAULT
/// });
/// arena::scope(|s| drop(s.zeroed::<u8>(128 << 20))); // larger than the budget
/// let stats = arena::stats();
/// assert_eq!((stats.large_cached_bytes, stats.large_cold_bytes), (0, 0));
/// assert!(stats.munmaps >= 1);
/// arena::configure(arena::Config::DEFAULT);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnMode {
    /// The mapping and its pages go back to the OS (`munmap`; Windows:
    /// `VirtualFree(MEM_RELEASE)`).
    Unmap,
    /// The pages go back at once (RSS drops), the mapping is kept (a few per
    /// size class) and reads as zeros when reused. Linux:
    /// `madvise(MADV_DONTNEED)`; macOS and the BSDs, where that advice does
    /// not zero: fresh pages mapped over the block (`mmap(MAP_FIXED)`);
    /// Windows: the pages decommitted and committed again.
    DontNeed,
    /// The OS may take the pages back lazily, under memory pressure; cheaper
    /// than `DontNeed`, but RSS drops only when it does, and a reused block
    /// is zeroed by the arena where a zeroed one is asked for. Linux, macOS
    /// and the BSDs: `madvise(MADV_FREE)`; Windows: `MEM_RESET`.
    Free,
}

/// OS requests made for every new large mapping.
///
/// ```
/// // Pre-fault new large blocks, so the first pass over them takes no page fault.
/// let options = arena::MapOptions { populate: true, ..arena::MapOptions::DEFAULT };
/// let mut arena = arena::Arena::with_config(arena::Config { map_options: options, ..arena::Config::DEFAULT });
/// arena.scope(|s| assert!(s.zeroed::<u8>(4 << 20).iter().all(|&b| b == 0)));
/// assert_eq!(arena.config().map_options, options);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapOptions {
    /// Linux: ask for transparent huge pages (`MADV_HUGEPAGE`) on blocks of
    /// a huge page or more (2 MiB with 4 KiB pages; 32 MiB with 16 KiB and
    /// 512 MiB with 64 KiB pages), which start on a huge-page boundary. A
    /// refusal is counted in [`Stats::advice_errors`](crate::Stats::advice_errors).
    /// macOS, the BSDs and Windows offer no transparent huge pages: there
    /// it does nothing.
    pub huge_pages: bool,
    /// Pre-fault the block, so first touches do not fault. Linux:
    /// `MAP_POPULATE`, or `MADV_POPULATE_WRITE` after the huge-page advice
    /// (so that the pages are huge ones), or a write to each page where the
    /// kernel predates that advice; macOS, the BSDs and Windows: a write to
    /// each page.
    pub populate: bool,
    /// Lock the pages in memory: "pinned" memory for transfers. Unix:
    /// `mlock`; Windows: `VirtualLock`. A refusal (`RLIMIT_MEMLOCK`; on
    /// Windows, a block larger than the process's minimum working set, see
    /// `SetProcessWorkingSetSize`) first gives back the idle large blocks of
    /// every arena, whose locks may be what the limit counts (a block its
    /// thread keeps for reuse stays locked until then, so that steady reuse
    /// makes no system call; one given to the pool is unlocked), and the
    /// lock is tried once more; a second refusal fails the allocation with
    /// `AllocError`.
    pub lock: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonsense_slab_sizes_are_clamped() {
        let c = Config { first_slab_bytes: 0, max_slab_bytes: 10, ..Config::DEFAULT }.normalized();
        assert_eq!(c.first_slab_bytes, MAX_ALIGN_BYTES);
        assert_eq!(c.max_slab_bytes, MAX_ALIGN_BYTES);
        let c = Config { first_slab_bytes: usize::MAX, ..Config::DEFAULT }.normalized();
        assert_eq!(c.first_slab_bytes % MAX_ALIGN_BYTES, 0);
        assert!(c.max_slab_bytes >= c.first_slab_bytes);
    }

    #[test]
    fn slabs_are_no_larger_than_the_large_threshold_in_pages() {
        let c = Config { first_slab_bytes: 8 << 20, max_slab_bytes: 16 << 20, ..Config::DEFAULT }.normalized();
        assert_eq!((c.first_slab_bytes, c.max_slab_bytes), (1 << 20, 1 << 20));
        let c = Config { large_threshold_bytes: MAX_ALIGN_BYTES + 1, ..Config::DEFAULT }.normalized();
        assert_eq!((c.first_slab_bytes, c.max_slab_bytes), (2 * MAX_ALIGN_BYTES, 2 * MAX_ALIGN_BYTES));
        let c = Config { large_threshold_bytes: usize::MAX, max_slab_bytes: 1 << 30, ..Config::DEFAULT }.normalized();
        assert_eq!(c.max_slab_bytes, 1 << 30);
    }

    #[test]
    fn a_large_threshold_below_a_page_is_raised_to_a_page() {
        for threshold in [0, 1, MAX_ALIGN_BYTES - 1] {
            let c = Config { large_threshold_bytes: threshold, ..Config::DEFAULT }.normalized();
            assert_eq!(c.large_threshold_bytes, MAX_ALIGN_BYTES);
        }
        let c = Config { large_threshold_bytes: MAX_ALIGN_BYTES + 1, ..Config::DEFAULT }.normalized();
        assert_eq!(c.large_threshold_bytes, MAX_ALIGN_BYTES + 1);
    }
}
