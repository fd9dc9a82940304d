//! A dropped arena gives back every byte it took from the system allocator:
//! slabs, side chunks, large-block records and their lists, bypass blocks.
//! The arena takes them from `std::alloc::System`, never the global
//! allocator, so this binary counts one level below: it wraps the C
//! allocator (`malloc` and the calls `System` makes) to count the bytes each
//! thread holds. Its own test binary: the wrappers are this process's.
// glibc only: it wraps glibc's `__libc_*` entry points.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::cell::Cell;
use std::ffi::{c_int, c_void};

thread_local! {
    /// Usable bytes of the C allocator's blocks this thread allocated, less
    /// those it freed. Const and without a destructor: touching it never
    /// allocates and works during thread teardown.
    static HELD: Cell<isize> = const { Cell::new(0) };
}

unsafe extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(count: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
    fn __libc_free(ptr: *mut c_void);
    fn malloc_usable_size(ptr: *mut c_void) -> usize;
}

/// Counts the block at `ptr` (if any) as `sign` times its usable size.
fn count(ptr: *mut c_void, sign: isize) {
    if !ptr.is_null() {
        // SAFETY: `ptr` is a live block of the C allocator.
        let bytes = unsafe { malloc_usable_size(ptr) } as isize;
        let _ = HELD.try_with(|held| held.set(held.get() + sign * bytes));
    }
}

// The C allocator's entry points, each forwarded to glibc's own and counted.
// Defined in the executable, they take the place of glibc's for every caller.

/// # Safety
/// The C `malloc` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    let ptr = unsafe { __libc_malloc(size) };
    count(ptr, 1);
    ptr
}

/// # Safety
/// The C `calloc` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn calloc(count_: usize, size: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    let ptr = unsafe { __libc_calloc(count_, size) };
    count(ptr, 1);
    ptr
}

/// # Safety
/// The C `realloc` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    // Counted out before the call: the block may move or be freed.
    count(ptr, -1);
    // SAFETY: forwarded contract.
    let new = unsafe { __libc_realloc(ptr, size) };
    if new.is_null() && size != 0 {
        // Refused: the old block stays.
        count(ptr, 1);
    }
    count(new, 1);
    new
}

/// # Safety
/// The C `posix_memalign` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(size_of::<usize>()) {
        return libc::EINVAL;
    }
    // SAFETY: forwarded contract; `align` is a power of two.
    let ptr = unsafe { __libc_memalign(align, size) };
    if ptr.is_null() {
        return libc::ENOMEM;
    }
    count(ptr, 1);
    // SAFETY: `out` is valid for a write (the caller's contract).
    unsafe { out.write(ptr) };
    0
}

/// # Safety
/// The C `aligned_alloc` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    let ptr = unsafe { __libc_memalign(align, size) };
    count(ptr, 1);
    ptr
}

/// # Safety
/// The C `memalign` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    // SAFETY: forwarded contract.
    let ptr = unsafe { __libc_memalign(align, size) };
    count(ptr, 1);
    ptr
}

/// # Safety
/// The C `free` contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(ptr: *mut c_void) {
    count(ptr, -1);
    // SAFETY: forwarded contract.
    unsafe { __libc_free(ptr) }
}

/// An arena that used every part: slabs (more than one), a side chunk (an outer scope's
/// request while a child is open), large blocks (their records), and, under
/// `ARENA_DEBUG=bypass`, bypass blocks; then dropped. Returns the bytes this
/// thread held just before the drop.
fn use_every_part_and_drop() -> isize {
    let mut arena = arena::Arena::with_config(arena::Config { use_pool: false, ..arena::Config::DEFAULT });
    arena.scope(|outer| {
        let kept = outer.filled(100, 1_u8);
        outer.scope(|inner| {
            drop(inner.zeroed::<u8>(2 << 20));
            drop(outer.zeroed::<u8>(1000));
        });
        assert_eq!(kept[99], 1);
    });
    arena.scope(|s| {
        drop(s.zeroed::<u8>(2 << 20));
        // Beyond the first slab: a list of later slabs.
        drop(s.zeroed::<u8>(200_000));
        drop(s.zeroed::<u8>(400_000));
    });
    let slabs = arena.stats().slab_count;
    assert!(slabs != 1, "one slab only (none is right in bypass mode)");
    let held = HELD.with(Cell::get);
    drop(arena);
    held
}

#[test]
fn a_dropped_arena_gives_back_every_byte_it_took() {
    // Once first, so that one-time allocations of the process are not counted.
    use_every_part_and_drop();
    let before = HELD.with(Cell::get);
    let alive = use_every_part_and_drop();
    assert!(alive > before, "the count does not see the arena's memory");
    assert_eq!(HELD.with(Cell::get), before, "bytes held after the arena dropped");
}
