//! The size classes of runs: the crate's one size-class rule, counted in
//! chunks.
#![forbid(unsafe_code)]

use crate::mem::size_class;

/// Size classes of the run cache (see [`run_class`]); runs past the last one
/// are never made (such a request goes to the inner allocator).
pub(crate) const CLASSES: usize = 64;

/// The size class of a run of at least `chunks` chunks (the crate's one
/// rule, in chunks: exact up to 8 chunks, then four steps per power of two).
/// Returns the class index and the class's run length, or `None` past the
/// last class.
pub(crate) fn run_class(chunks: usize) -> Option<(usize, usize)> {
    let class_chunks = size_class::class_len(chunks, 1)?;
    let class = size_class::class_index(class_chunks, 1);
    (class < CLASSES).then_some((class, class_chunks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_classes_are_exact_to_eight_chunks_then_quarter_steps() {
        assert_eq!(run_class(1), Some((0, 1)));
        assert_eq!(run_class(8), Some((7, 8)));
        assert_eq!(run_class(9), Some((8, 10)));
        assert_eq!(run_class(16), Some((11, 16)));
        assert_eq!(run_class(17), Some((12, 20)));
        let mut last: Option<(usize, usize)> = None;
        for chunks in 1..100_000 {
            let Some((class, class_chunks)) = run_class(chunks) else { break };
            assert!(class_chunks >= chunks && class_chunks - chunks <= chunks / 4 + 1, "{chunks} -> {class_chunks}");
            if let Some((last_class, last_chunks)) = last {
                // A class is one length: the next length opens the next class.
                let same = class == last_class && class_chunks == last_chunks;
                let next = class == last_class + 1 && class_chunks > last_chunks;
                assert!(same || next, "classes grow with the length: {chunks} -> {class}");
            }
            assert_eq!(run_class(class_chunks), Some((class, class_chunks)), "a class's length is in the class");
            last = Some((class, class_chunks));
        }
        assert!(last.is_some_and(|(class, _)| class > 12), "the loop reached the quarter-step classes");
    }
}
