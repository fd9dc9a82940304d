//! The per-thread cache of released large blocks, by size class, bounded
//! by a retention budget.
//!
//! A hot loop that allocates the same large temporaries every iteration gets
//! the same mappings back from the cache: no syscall, no page fault. Beyond the
//! retention budget, released blocks go back to the OS: their pages given
//! back (the mapping stays, its pages go: RSS drops at once, see
//! `sys::Discard`) or unmapped. Never on every scope exit inside the budget:
//! giving the pages back per iteration costs as much as a fresh mapping
//! (every page faults again).
#![forbid(unsafe_code)]

use super::block::LargeBlock;
use crate::config::ReturnMode;
use crate::mem::system::{SystemVec, system_vec};
use crate::stats::Counters;

/// Cold (advised-away) blocks kept per size class: they cost address space
/// only, and save the `mmap` syscall when the class is asked for again.
const COLD_BLOCKS_PER_CLASS: usize = 4;

/// The cached blocks of one size class.
struct ClassCache {
    class_bytes: usize,
    /// Resident blocks, counted against the retention budget, oldest release
    /// first, each with the tick of its release.
    warm: SystemVec<(u64, LargeBlock)>,
    /// Blocks whose pages were advised away: address space only.
    cold: SystemVec<LargeBlock>,
}

/// Released large blocks by size class, bounded by a retention budget.
///
/// When a release would exceed the budget, the blocks released longest ago go
/// back to the OS first, whatever their class: a workload whose sizes change
/// keeps the blocks it uses now, not the ones it used first.
///
/// Invariant: `warm_bytes` is the total length of all warm blocks, `cold_bytes`
/// of all cold ones; no cached block is referenced by anything.
pub(crate) struct LargeBlockCache {
    classes: SystemVec<ClassCache>,
    pub(crate) warm_bytes: usize,
    pub(crate) cold_bytes: usize,
    /// Counts releases; orders the warm blocks.
    tick: u64,
}

impl LargeBlockCache {
    pub(crate) const fn new() -> LargeBlockCache {
        LargeBlockCache { classes: system_vec(), warm_bytes: 0, cold_bytes: 0, tick: 0 }
    }

    /// A cached block for a request of the size class `class_bytes`, the
    /// cheapest to use first: a resident block of that class (the most
    /// recently released); else a resident block of a larger class, at most
    /// twice as large (the smallest such), so that a released temporary
    /// serves the next one of a somewhat different size without new pages;
    /// else an advised-away block of that class (no `mmap`, but its pages
    /// fault again).
    pub(crate) fn take(&mut self, class_bytes: usize) -> Option<LargeBlock> {
        let largest_useful = class_bytes.saturating_mul(2);
        let warm = self
            .classes
            .iter_mut()
            .filter(|c| (class_bytes..=largest_useful).contains(&c.class_bytes) && !c.warm.is_empty())
            .min_by_key(|c| c.class_bytes);
        if let Some(class) = warm {
            let (_, block) = class.warm.pop()?;
            self.warm_bytes -= block.len();
            return Some(block);
        }
        let class = self.classes.iter_mut().find(|c| c.class_bytes == class_bytes)?;
        let block = class.cold.pop()?;
        self.cold_bytes -= block.len();
        Some(block)
    }

    /// Before new pages are mapped for a request of the size class
    /// `class_bytes`: gives back the resident blocks of smaller classes,
    /// which could not have served it. Temporaries that grow from one use to
    /// the next then peak at about the largest of them, not at their sum.
    pub(crate) fn give_back_smaller(&mut self, class_bytes: usize, mode: ReturnMode, os: &mut Counters) {
        for index in 0..self.classes.len() {
            if self.classes[index].class_bytes < class_bytes {
                for (_, block) in std::mem::replace(&mut self.classes[index].warm, system_vec()) {
                    self.warm_bytes -= block.len();
                    self.give_back(index, block, mode, os);
                }
            }
        }
    }

    /// The index of the class `class_bytes`, made if need be; `None` if the
    /// system allocator refuses the room for it.
    fn class_index(&mut self, class_bytes: usize) -> Option<usize> {
        match self.classes.iter().position(|c| c.class_bytes == class_bytes) {
            Some(index) => Some(index),
            None => {
                self.classes.try_reserve(1).ok()?;
                self.classes.push(ClassCache { class_bytes, warm: system_vec(), cold: system_vec() });
                Some(self.classes.len() - 1)
            }
        }
    }

    /// Keeps `block` for reuse, resident; if that exceeds `retain_bytes`, the
    /// blocks released longest ago (possibly `block` itself, if it alone
    /// exceeds the budget) are advised away or unmapped as `mode` says. The
    /// cache's lists never abort the process: a block they have no room for
    /// is unmapped.
    pub(crate) fn put(&mut self, block: LargeBlock, retain_bytes: usize, mode: ReturnMode, os: &mut Counters) {
        let len = block.len();
        let Some(index) = self.class_index(len) else {
            os.bytes_returned_to_os += len as u64;
            os.munmaps += 1;
            drop(block);
            return;
        };
        if len > retain_bytes || self.classes[index].warm.try_reserve(1).is_err() {
            self.give_back(index, block, mode, os);
            return;
        }
        self.tick += 1;
        self.warm_bytes += len;
        self.classes[index].warm.push((self.tick, block));
        self.enforce_budget(retain_bytes, mode, os);
    }

    /// Returns the blocks released longest ago until at most `retain_bytes`
    /// stay resident.
    pub(crate) fn enforce_budget(&mut self, retain_bytes: usize, mode: ReturnMode, os: &mut Counters) {
        while self.warm_bytes > retain_bytes {
            // The oldest warm block of each class is its first.
            let oldest = (0..self.classes.len())
                .filter(|&i| !self.classes[i].warm.is_empty())
                .min_by_key(|&i| self.classes[i].warm[0].0);
            let Some(index) = oldest else { break };
            let (_, block) = self.classes[index].warm.remove(0);
            self.warm_bytes -= block.len();
            self.give_back(index, block, mode, os);
        }
    }

    /// Gives `block`'s pages back to the OS: advised away and kept cold (a few
    /// per class), or unmapped.
    fn give_back(&mut self, index: usize, mut block: LargeBlock, mode: ReturnMode, os: &mut Counters) {
        let len = block.len();
        os.bytes_returned_to_os += len as u64;
        let class = &mut self.classes[index];
        if mode != ReturnMode::Unmap && class.cold.len() < COLD_BLOCKS_PER_CLASS && class.cold.try_reserve(1).is_ok() {
            os.madvise_calls += 1;
            if block.advise_away(mode).is_ok() {
                self.cold_bytes += len;
                class.cold.push(block);
                return;
            }
            os.advice_errors += 1;
        }
        os.munmaps += 1;
        drop(block);
    }

    /// Takes every resident cached block out and hands it to `take` (to
    /// give to the process-wide pool). Allocates nothing: an arena's drop
    /// calls it, also with the heap exhausted.
    pub(crate) fn drain_warm(&mut self, mut take: impl FnMut(LargeBlock)) {
        self.warm_bytes = 0;
        for class in &mut self.classes {
            for (_, block) in class.warm.drain(..) {
                take(block);
            }
        }
    }

    /// Checks the byte counts against the cached blocks.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let warm: usize = self.classes.iter().flat_map(|c| &c.warm).map(|(_, block)| block.len()).sum();
        let cold: usize = self.classes.iter().flat_map(|c| &c.cold).map(LargeBlock::len).sum();
        let misplaced = self
            .classes
            .iter()
            .any(|c| c.warm.iter().map(|(_, block)| block).chain(&c.cold).any(|block| block.len() != c.class_bytes));
        if (warm, cold) != (self.warm_bytes, self.cold_bytes) || misplaced {
            return Err(format!(
                "large cache counts (warm, cold) {:?} disagree with its blocks {:?}",
                (self.warm_bytes, self.cold_bytes),
                (warm, cold)
            ));
        }
        Ok(())
    }

    /// Unmaps every cached block.
    pub(crate) fn clear(&mut self, os: &mut Counters) {
        for class in self.classes.drain(..) {
            for (_, block) in class.warm {
                os.munmaps += 1;
                os.bytes_returned_to_os += block.len() as u64;
            }
            os.munmaps += class.cold.len() as u64;
        }
        self.warm_bytes = 0;
        self.cold_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MapOptions;

    #[test]
    fn cache_keeps_blocks_within_budget_and_returns_the_rest() {
        let mut cache = LargeBlockCache::new();
        let mut os = Counters::default();
        for _ in 0..3 {
            let (block, _) = LargeBlock::map(1 << 20, MapOptions::default()).unwrap();
            cache.put(block, 2 << 20, ReturnMode::DontNeed, &mut os);
        }
        assert_eq!(cache.warm_bytes, 2 << 20);
        assert_eq!(cache.cold_bytes, 1 << 20);
        assert_eq!(os.madvise_calls, 1);
        // Resident blocks are handed out before cold ones.
        assert!(cache.take(1 << 20).is_some());
        assert_eq!(cache.warm_bytes, 1 << 20);
        cache.clear(&mut os);
        assert_eq!(os.munmaps, 2);
        assert!(cache.take(1 << 20).is_none());
    }

    #[test]
    fn blocks_released_longest_ago_go_back_first() {
        let mut cache = LargeBlockCache::new();
        let mut os = Counters::default();
        let map = |len| LargeBlock::map(len, MapOptions::default()).unwrap().0;
        cache.put(map(2 << 20), 4 << 20, ReturnMode::Unmap, &mut os);
        cache.put(map(1 << 20), 4 << 20, ReturnMode::Unmap, &mut os);
        cache.put(map(1 << 20), 4 << 20, ReturnMode::Unmap, &mut os);
        // A fourth block exceeds the budget: the 2 MiB one, released first, goes.
        cache.put(map(1 << 20), 4 << 20, ReturnMode::Unmap, &mut os);
        assert_eq!(cache.warm_bytes, 3 << 20);
        assert!(cache.take(2 << 20).is_none());
        assert_eq!(os.munmaps, 1);
        // A block larger than the whole budget is not kept at all.
        cache.put(map(8 << 20), 4 << 20, ReturnMode::Unmap, &mut os);
        assert_eq!((cache.warm_bytes, os.munmaps), (3 << 20, 2));
    }

    #[test]
    fn a_resident_block_up_to_twice_as_large_serves_a_smaller_class() {
        let mut cache = LargeBlockCache::new();
        let mut os = Counters::default();
        let map = |len| LargeBlock::map(len, MapOptions::default()).unwrap().0;
        let budget = 64 << 20;
        cache.put(map(6 << 20), budget, ReturnMode::DontNeed, &mut os);
        cache.put(map(16 << 20), budget, ReturnMode::DontNeed, &mut os);
        // 4 MiB: the 6 MiB block (the smallest within 2x), not the 16 MiB one.
        let block = cache.take(4 << 20).expect("a resident block within twice the class");
        assert_eq!(block.len(), 6 << 20);
        assert_eq!(cache.warm_bytes, 16 << 20);
        // 6 MiB: nothing resident within 12 MiB any more.
        assert!(cache.take(6 << 20).is_none());
        // Put back, the block goes to its own class, whatever it served.
        cache.put(block, budget, ReturnMode::DontNeed, &mut os);
        cache.check_invariants().unwrap();
        assert_eq!(cache.take(6 << 20).map(|b| b.len()), Some(6 << 20));
    }

    #[test]
    fn a_new_mapping_gives_back_the_smaller_resident_blocks_first() {
        let mut cache = LargeBlockCache::new();
        let mut os = Counters::default();
        let map = |len| LargeBlock::map(len, MapOptions::default()).unwrap().0;
        let budget = 64 << 20;
        cache.put(map(2 << 20), budget, ReturnMode::DontNeed, &mut os);
        cache.put(map(4 << 20), budget, ReturnMode::DontNeed, &mut os);
        cache.put(map(12 << 20), budget, ReturnMode::DontNeed, &mut os);
        cache.give_back_smaller(8 << 20, ReturnMode::DontNeed, &mut os);
        assert_eq!(cache.warm_bytes, 12 << 20, "only the blocks smaller than the request go");
        assert_eq!(cache.cold_bytes, 6 << 20);
        assert_eq!(os.bytes_returned_to_os, 6 << 20);
        cache.check_invariants().unwrap();
        // The advised-away blocks still save an `mmap` for their own class.
        assert!(cache.take(2 << 20).is_some_and(|b| b.zeroed));
    }
}
