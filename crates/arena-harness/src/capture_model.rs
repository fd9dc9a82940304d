//! The capture model: interleaved captured and uncaptured `alloc`,
//! `alloc_zeroed`, `realloc` and `dealloc` calls on a
//! [`GlobalArena`](arena::GlobalArena), frees and allocations on other
//! threads, nested captures and trims, checked after every step.
//!
//! The model calls the allocator's `GlobalAlloc` methods itself instead of
//! installing it as the process's global allocator: then only the model's
//! operations are captured (never its own bookkeeping), and every counter can
//! be predicted exactly.
//!
//! # Checks
//! - After every step, over every live allocation (captured or not, from
//!   this thread or another, from this capture or an earlier one): it is
//!   aligned as its layout asks, overlaps no other, and holds its pattern
//!   where it starts, where it ends and at the start of each OS page it
//!   spans; after an outermost capture's end, a trim and the run's last
//!   step, in every byte. So memory reused while something in it is live shows as an
//!   overlap (or a broken pattern), and a page given back while something
//!   in it is live (the only way the allocator changes bytes it has not
//!   handed out, and always whole pages) as a broken pattern at the step
//!   that gave it back.
//! - Every allocation inside a capture with an alignment of at most a page
//!   is counted as captured, and none outside (`captured_allocations`).
//! - `alloc_zeroed` gives zeros; `realloc` keeps the old contents.
//! - When an outermost capture ends, its escapes (`escaped_allocations`,
//!   `escaped_bytes`) are exactly the allocations it made that are still
//!   live, and their sizes.
//! - After every step outside a capture but an `alloc` (which only the
//!   inner allocator serves there), the capture region's resident
//!   bytes (from `mincore` over the part runs may have touched, and at the
//!   end of one run in 16 over all of it) are at most the OS pages the live
//!   captured items span, plus the retention budget and the chunks listed
//!   to continue from where they continue (`continued_bytes`): escapes hold
//!   their own pages only, and idle memory is bounded. Runs hold a
//!   process-wide lock for this, since the region is shared.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use arena::capture::CaptureStats;
use arena::{GlobalArena, capture};

use super::Violation;
use super::pattern::{MAX_ITEM_BYTES, all_zero, noise, offset_for};

/// The retention budget of the allocator the model drives: small, so that
/// the held-bytes bound is tight.
const RETAIN_BYTES: usize = 2 << 20;
/// The allocator the model drives.
static ARENA: GlobalArena = GlobalArena::new().with_retain_bytes(RETAIN_BYTES);
/// Held by each run: the region's resident bytes are checked against this
/// run's items alone.
static RUN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The deepest nesting of captures a run opens; deeper `Enter`s are skipped.
pub const MAX_CAPTURE_DEPTH: usize = 4;
/// Allocations and growths are skipped while live items would hold more.
const LIVE_BUDGET_BYTES: usize = 12 << 20;
/// The largest alignment a capture serves; larger requests are forwarded.
const MAX_CAPTURED_ALIGN: usize = 4096;

/// One operation of a capture run. Selectors (`item`) are reduced modulo the
/// live items; an operation with nothing to act on is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureOp {
    /// Runs the following operations inside [`capture`](arena::capture())
    /// (nested in the current one, if any).
    Enter,
    /// Returns from the current capture's closure.
    Exit,
    /// `alloc` (or `alloc_zeroed`).
    Alloc {
        /// Size, at least 1 (at most 4 MiB, the largest item the harness makes).
        bytes: u32,
        /// Alignment as a power of two, 0..=13: above 12 (a page) it is
        /// forwarded even inside a capture.
        align_log2: u8,
        /// `alloc_zeroed`.
        zeroed: bool,
    },
    /// `realloc` of a live item to `bytes`.
    Realloc {
        /// Which item.
        item: u8,
        /// The new size.
        bytes: u32,
    },
    /// `dealloc` of a live item.
    Free {
        /// Which item.
        item: u8,
    },
    /// `dealloc` of a live item on another thread.
    FreeElsewhere {
        /// Which item.
        item: u8,
    },
    /// An allocation made inside a capture on the run's other thread: the
    /// item outlives its capture, and its thread if that then exits (a new
    /// one takes its place).
    AllocElsewhere {
        /// Size.
        bytes: u32,
        /// Whether the other thread exits after it.
        then_exits: bool,
    },
    /// [`capture::trim`](arena::capture::trim).
    Trim,
}

/// What a capture run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CaptureSummary {
    /// Operations executed (skipped ones included).
    pub ops: usize,
    /// Operations skipped.
    pub skipped: usize,
    /// Outermost captures opened.
    pub captures: usize,
    /// Allocations the arena captured (this thread's `captured_allocations`).
    pub captured: u64,
    /// Escapes counted at the outermost exits, each predicted by the model.
    pub escapes: u64,
    /// `realloc`s that moved the item.
    pub moved: usize,
    /// Frees and allocations done on another thread.
    pub remote: usize,
    /// Step checks run.
    pub checks: usize,
}

/// Reads `bytes` as operations of five bytes each (opcode, then four
/// parameter bytes; missing bytes read as zero). Never fails.
pub fn decode_capture(bytes: &[u8]) -> Vec<CaptureOp> {
    bytes
        .chunks(5)
        .map(|op| {
            let at = |i: usize| op.get(i).copied().unwrap_or(0);
            let (code, kind, value, extra) = (at(0), at(1), u16::from_le_bytes([at(2), at(3)]), at(4));
            let size = size_of_kind(kind, value);
            match code % 16 {
                0 | 1 => CaptureOp::Enter,
                2 | 3 => CaptureOp::Exit,
                4..=8 => {
                    // Small alignments mostly; now and then any, up to 8 KiB.
                    let align_log2 = if extra & 0x10 == 0 { extra % 4 } else { extra % 14 };
                    CaptureOp::Alloc { bytes: size, align_log2, zeroed: extra & 0x80 != 0 }
                }
                9 | 10 => CaptureOp::Realloc { item: extra, bytes: size },
                11 | 12 => CaptureOp::Free { item: extra },
                13 => CaptureOp::FreeElsewhere { item: extra },
                14 => CaptureOp::AllocElsewhere { bytes: size, then_exits: extra % 4 == 0 },
                _ => CaptureOp::Trim,
            }
        })
        .collect()
}

/// A size from a kind byte and a value: mostly tiny and small requests (the
/// bump path, up to 64 KiB), one in 32 a run of its own (up to 2 MiB, nine
/// chunks). Every page of an item is written, so a run costs its pages'
/// faults: at one in eight they took most of a fuzz run's time.
fn size_of_kind(kind: u8, value: u16) -> u32 {
    let value = u32::from(value);
    match kind % 32 {
        0..=18 => 1 + value % 256,
        19..=26 => 1 + value % 4096,
        27..=30 => 1 + value,
        _ => 65_537 + value * 32,
    }
}

/// Runs `ops` and checks the model after every step.
///
/// # Errors
/// The first [`Violation`] seen.
pub fn run_capture(ops: &[CaptureOp]) -> Result<CaptureSummary, Violation> {
    run_with(ops, None, 1)
}

/// Like [`run_capture`], but in one run of four only are the region's
/// residency checked after every step and every byte of the live items
/// compared after each outermost capture's end and each trim; the other
/// runs compare each page's samples after every step and check everything
/// at their end: the fuzz target's pace.
///
/// # Errors
/// The first [`Violation`] seen.
pub fn run_capture_quick(ops: &[CaptureOp]) -> Result<CaptureSummary, Violation> {
    run_with(ops, None, THOROUGH_EVERY)
}

/// Test hook: like [`run_capture`], but just before the checks of step
/// `corrupt_at` (from 1) one byte of the newest live item is overwritten
/// (its first in the last OS page it spans: for a long item, a byte inside
/// it, as a page given back would change), so the run must report a
/// [`Violation`] at that step if an item is live then.
#[doc(hidden)]
pub fn run_capture_corrupting(ops: &[CaptureOp], corrupt_at: Option<usize>) -> Result<CaptureSummary, Violation> {
    run_with(ops, corrupt_at, 1)
}

fn run_with(ops: &[CaptureOp], corrupt_at: Option<usize>, thorough_every: u64) -> Result<CaptureSummary, Violation> {
    let _run = RUN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let mut model = Model {
        corrupt_at,
        elsewhere: Some(Elsewhere::start()),
        thorough: run.is_multiple_of(thorough_every),
        ..Model::default()
    };
    let mut ops = ops.iter().copied();
    let result = model
        .run_level(&mut ops)
        .and_then(|()| model.check(Scrutiny::EveryByte))
        .and_then(|()| model.check_held_bytes(run.is_multiple_of(WHOLE_EVERY)));
    // Whatever happened, nothing is left allocated (outside any capture).
    for item in std::mem::take(&mut model.items) {
        // SAFETY: `item` is live and was allocated by `ARENA` with its layout.
        unsafe { ARENA.dealloc(item.ptr.as_ptr(), item.layout) };
    }
    // Ends the other thread and joins it: a thread still running its exit
    // (TLS destructors) after the run shows as a leak to LeakSanitizer in
    // the fuzz target.
    drop(model.elsewhere.take());
    result.map(|()| model.summary)
}

/// What the run's other thread is asked to do.
enum Request {
    /// `dealloc` the item.
    Free(SendPtr, Layout),
    /// `alloc` inside a capture: answered with the pointer and the
    /// allocations the thread's capture counted.
    Alloc(Layout),
}

/// The run's other thread, for frees and captured allocations elsewhere:
/// one thread until an operation asks it to exit (a thread per operation
/// would cost more than the rest of the run together).
#[derive(Debug)]
struct Elsewhere {
    requests: Option<std::sync::mpsc::Sender<Request>>,
    replies: std::sync::mpsc::Receiver<(Option<SendPtr>, u64)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Elsewhere {
    /// A new thread, running until the handle is dropped or restarted.
    fn start() -> Elsewhere {
        let (requests, received) = std::sync::mpsc::channel::<Request>();
        let (replying, replies) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            for request in received {
                let reply = match request {
                    Request::Free(ptr, layout) => {
                        // SAFETY: the item was live, allocated by `ARENA`
                        // with `layout`, and is no longer in the model,
                        // whose thread waits for the reply.
                        unsafe { ARENA.dealloc(ptr.0.as_ptr(), layout) };
                        (None, 0)
                    }
                    Request::Alloc(layout) => {
                        let before = arena::capture::stats();
                        // SAFETY: the model asks for non-zero sizes only.
                        let ptr = capture(|| unsafe { ARENA.alloc(layout) });
                        let counted =
                            arena::capture::stats().thread.captured_allocations - before.thread.captured_allocations;
                        (NonNull::new(ptr).map(SendPtr), counted)
                    }
                };
                if replying.send(reply).is_err() {
                    break;
                }
            }
        });
        Elsewhere { requests: Some(requests), replies, thread: Some(thread) }
    }

    fn ask(&self, request: Request) -> (Option<SendPtr>, u64) {
        let requests = self.requests.as_ref().expect("the other thread runs until the handle is dropped");
        requests.send(request).expect("the other thread runs until the handle is dropped");
        self.replies.recv().expect("the other thread does not panic")
    }

    /// Frees `ptr` on the other thread and waits until it has.
    fn free(&self, ptr: SendPtr, layout: Layout) {
        self.ask(Request::Free(ptr, layout));
    }

    /// Allocates `layout` inside a capture on the other thread: the pointer
    /// (if any) and the allocations that capture counted.
    fn alloc(&self, layout: Layout) -> (Option<SendPtr>, u64) {
        self.ask(Request::Alloc(layout))
    }

    /// Ends the thread (it exits with what it allocated still live) and
    /// starts another.
    fn restart(&mut self) {
        self.finish();
        *self = Elsewhere::start();
    }

    fn finish(&mut self) {
        drop(self.requests.take());
        if let Some(thread) = self.thread.take()
            && thread.join().is_err()
            && !std::thread::panicking()
        {
            panic!("the other thread does not panic");
        }
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Where the model expects an item's memory to come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The inner allocator (`System`).
    Inner,
    /// The outermost capture numbered so, on this thread.
    Capture(usize),
    /// A capture on the run's other thread, ended since (and the thread
    /// may have exited).
    OtherThread,
}

/// A live allocation of `ARENA`, holding the pattern at `off`.
#[derive(Debug)]
struct Item {
    ptr: NonNull<u8>,
    layout: Layout,
    off: usize,
    origin: Origin,
    /// The most bytes it has had at `ptr` (a shrink in place may leave the
    /// pages past its new end resident).
    extent: usize,
}

impl Item {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is live for `layout.size()` bytes, all written (with
        // the pattern, or zeros by `alloc_zeroed`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.layout.size()) }
    }

    fn write_pattern(&mut self) {
        let pattern = &noise()[self.off..self.off + self.layout.size()];
        // SAFETY: `ptr` is live for `layout.size()` bytes and only this item
        // refers to it.
        unsafe { self.ptr.as_ptr().copy_from_nonoverlapping(pattern.as_ptr(), pattern.len()) };
    }

    fn holds_pattern(&self, len: usize) -> bool {
        self.bytes()[..len] == noise()[self.off..self.off + len]
    }

    /// Whether it holds its pattern in its first and last bytes and in the
    /// first bytes it has in each OS page: a page given back (zeroed, or
    /// another's) breaks one of them.
    fn holds_pattern_on_each_page(&self, page_bytes: usize) -> bool {
        const SAMPLE: usize = 16;
        let (bytes, pattern) = (self.bytes(), &noise()[self.off..self.off + self.layout.size()]);
        let start = self.ptr.as_ptr().addr();
        let tail = bytes.len().saturating_sub(SAMPLE);
        let page_starts = (start.next_multiple_of(page_bytes)..start + bytes.len()).step_by(page_bytes);
        std::iter::once(0).chain(page_starts.map(|page| page - start)).chain(std::iter::once(tail)).all(|at| {
            let end = (at + SAMPLE).min(bytes.len());
            // A whole sample as one word: a `memcmp` call per page costs
            // more than the comparison under a sanitizer's interceptor.
            match (<[u8; SAMPLE]>::try_from(&bytes[at..end]), <[u8; SAMPLE]>::try_from(&pattern[at..end])) {
                (Ok(held), Ok(expected)) => u128::from_ne_bytes(held) == u128::from_ne_bytes(expected),
                _ => bytes[at..end] == pattern[at..end],
            }
        })
    }
}

/// Where the captured runs of the model's items may end, at most: past the
/// end of every such item, a quarter of its size (a run's size-class
/// rounding) and two chunks (its chunk's rounding). Runs are taken from the
/// region's start upwards, so nothing beyond it was ever touched.
/// Process-wide, as the region is.
static TOUCHED_END: AtomicUsize = AtomicUsize::new(0);
/// The start of the chunk of the lowest captured item: the region's start
/// (where its first run is), unless something else captured first.
static TOUCHED_START: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The region's chunk size, which runs are made of and aligned to.
const CHUNK_BYTES: usize = 256 << 10;

/// Notes where a captured item lies (see [`TOUCHED_END`]).
fn note_touched(ptr: NonNull<u8>, size: usize) {
    let addr = ptr.as_ptr().addr();
    TOUCHED_START.fetch_min(addr / CHUNK_BYTES * CHUNK_BYTES, Ordering::Relaxed);
    TOUCHED_END.fetch_max(addr + size + size / 4 + 2 * CHUNK_BYTES, Ordering::Relaxed);
}

/// The resident bytes of the region whose reservation is `reserved`
/// bytes, from `mincore`: over the part that runs may have touched; or, if
/// `whole` (at the end of one run in [`WHOLE_EVERY`]: the end of the
/// touched part is an estimate), over all of it.
fn region_resident(reserved: usize, whole: bool) -> Result<Option<usize>, String> {
    let touched_start = TOUCHED_START.load(Ordering::Relaxed);
    if reserved == 0 || touched_start == usize::MAX {
        return Ok(None);
    }
    let (start, end) = capture_region_around(touched_start, reserved);
    // The region never moves: its mapping is looked up once.
    static MAPPED_AT: AtomicUsize = AtomicUsize::new(usize::MAX);
    if MAPPED_AT.load(Ordering::Relaxed) != start {
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return Ok(None);
        };
        // Not found would leave the check silently undone.
        maps.lines()
            .filter_map(mapping_range)
            .find(|&(from, to)| from <= start && end <= to)
            .ok_or_else(|| format!("no mapping holds the capture region {start:#x}..{end:#x}"))?;
        MAPPED_AT.store(start, Ordering::Relaxed);
    }
    let (from, to) = if whole {
        (start, end)
    } else {
        let touched_end = TOUCHED_END.load(Ordering::Relaxed).clamp(start, end);
        (touched_start.clamp(start, touched_end), touched_end)
    };
    resident_bytes(from, to).map(Some).ok_or_else(|| format!("mincore over {from:#x}..{to:#x} failed"))
}

/// The capture region proper, `[start, end)`, around the captured address
/// `addr`, for a reservation of `reserved` bytes
/// (`arena::capture::CaptureStats::reserved_bytes`): half the reservation,
/// aligned to its size, where every captured byte lies. Not the mapping
/// around it: the kernel may merge neighbouring mappings into that one, and
/// their pages are not the region's.
///
/// # Panics
/// If `reserved` is below two bytes (no region).
pub fn capture_region_around(addr: usize, reserved: usize) -> (usize, usize) {
    let bytes = reserved / 2;
    assert!(bytes > 0, "no capture region in a reservation of {reserved} bytes");
    let start = addr / bytes * bytes;
    (start, start + bytes)
}

/// The resident bytes of the capture region around the captured address
/// `addr` (see [`capture_region_around`]), from `mincore`; `None` where
/// there is no `mincore` or it fails.
pub fn capture_region_resident(addr: usize, reserved: usize) -> Option<usize> {
    let (start, end) = capture_region_around(addr, reserved);
    resident_bytes(start, end)
}

/// One run in this many counts the region's resident pages over the whole
/// region at its end.
const WHOLE_EVERY: u64 = 16;

/// In [`run_capture_quick`], one run in this many checks the region's
/// residency after every step outside a capture and compares every byte
/// after each outermost capture's end and trim, not only at its end: a
/// residency check reads the page tables of all the region has touched, a
/// byte compare reads every live item, and a fuzz run makes hundreds of
/// steps. What a step leaves resident or overwrites and no later step
/// undoes shows at the end too; a page given back shows in its samples.
const THOROUGH_EVERY: u64 = 4;

/// The resident bytes of the pages in `[start, end)` (page-aligned, in one
/// mapping), asked a gibibyte at a time.
#[cfg(unix)]
fn resident_bytes(start: usize, end: usize) -> Option<usize> {
    const STRIDE: usize = 1 << 30;
    let page_bytes = page_bytes();
    let words_for = |len: usize| len.div_ceil(page_bytes).div_ceil(8);
    // The fuzz targets instrument every comparison and a whole region is
    // millions of pages, nearly all of them not resident: runs of zero
    // bytes are skipped a comparison of 4 KiB at a time, the rest counted
    // a word at a time.
    let mut resident = vec![0_u64; words_for((end - start).min(STRIDE))];
    let mut pages = 0;
    for from in (start..end).step_by(STRIDE) {
        let len = (end - from).min(STRIDE);
        let words = &mut resident[..words_for(len)];
        // `mincore` writes a byte per page: the last word's other bytes
        // must not count.
        if let Some(last) = words.last_mut() {
            *last = 0;
        }
        // SAFETY: `[from, from + len)` lies in the region's mapping (the
        // caller found it in `/proc/self/maps`), `from` is page-aligned (a
        // chunk's start or the region's, plus whole gibibytes), and `words`
        // has a byte for each of its pages.
        let rc = unsafe { libc::mincore(from as *mut libc::c_void, len, words.as_mut_ptr().cast()) };
        if rc != 0 {
            return None;
        }
        // Bit 0 of each page's byte says whether it is resident.
        pages += words
            .chunks(512)
            .filter(|chunk| !all_zero(bytemuck::cast_slice(chunk)))
            .flatten()
            .map(|word| (word & 0x0101_0101_0101_0101).count_ones() as usize)
            .sum::<usize>();
    }
    Some(pages * page_bytes)
}

#[cfg(not(unix))]
fn resident_bytes(_: usize, _: usize) -> Option<usize> {
    None
}

/// The address range a mapping's line in `/proc/self/maps` names
/// (`start-end perms ...`); `None` for other lines.
fn mapping_range(line: &str) -> Option<(usize, usize)> {
    let (start, end) = line.split_once(' ')?.0.split_once('-')?;
    Some((usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?))
}

/// The page size the process's OS reports, which the arena gives pages back
/// in: an item keeps the pages it touches resident, whatever their size.
/// Not the mapping's `KernelPageSize`: under an emulator (qemu-user with
/// `-p`) that is the host's, smaller than the pages the arena sees.
#[cfg(unix)]
fn page_bytes() -> usize {
    // SAFETY: `sysconf` with a valid name has no preconditions.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// Without `mincore` the held-bytes check does not run.
#[cfg(not(unix))]
fn page_bytes() -> usize {
    4096
}

/// How much of each live item's pattern a check compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scrutiny {
    /// Its ends and the start of each OS page it spans.
    EachPage,
    /// Every byte.
    EveryByte,
}

/// A pointer moved to another thread for one operation.
struct SendPtr(NonNull<u8>);

// SAFETY: the model's thread hands the allocation over and waits (joins)
// until the other thread is done with it: no concurrent access.
unsafe impl Send for SendPtr {}

#[derive(Debug, Default)]
struct Model {
    items: Vec<Item>,
    next_id: u64,
    /// Open captures on this thread.
    depth: usize,
    /// The number of the outermost capture open, if any.
    current: Option<usize>,
    step: usize,
    corrupt_at: Option<usize>,
    summary: CaptureSummary,
    elsewhere: Option<Elsewhere>,
    /// Whether the region's residency is checked after every step and
    /// every byte compared after the steps that give back the most, or
    /// both only at the run's end.
    thorough: bool,
}

impl Model {
    fn violation(&self, message: String) -> Violation {
        Violation { step: self.step, message }
    }

    fn live_bytes(&self) -> usize {
        self.items.iter().map(|item| item.layout.size()).sum()
    }

    /// Runs operations until an `Exit` at this level or the end.
    fn run_level(&mut self, ops: &mut impl Iterator<Item = CaptureOp>) -> Result<(), Violation> {
        while let Some(op) = ops.next() {
            self.step += 1;
            self.summary.ops += 1;
            // An outermost capture's end and a trim give back the most:
            // every byte is compared after them in a thorough run. (An
            // inner capture joins the outer one and gives back nothing at
            // its end.)
            let mut scrutiny = Scrutiny::EachPage;
            let gives_back = if self.thorough { Scrutiny::EveryByte } else { Scrutiny::EachPage };
            match op {
                CaptureOp::Exit if self.depth > 0 => return Ok(()),
                CaptureOp::Enter if self.depth < MAX_CAPTURE_DEPTH => {
                    if self.depth == 0 {
                        scrutiny = gives_back;
                    }
                    self.enter(ops)?;
                }
                CaptureOp::Alloc { bytes, align_log2, zeroed } => self.alloc(bytes, align_log2, zeroed)?,
                CaptureOp::Realloc { item, bytes } => self.realloc(item, bytes)?,
                CaptureOp::Free { item } => self.free(item, false),
                CaptureOp::FreeElsewhere { item } => self.free(item, true),
                CaptureOp::AllocElsewhere { bytes, then_exits } => self.alloc_elsewhere(bytes, then_exits)?,
                CaptureOp::Trim => {
                    arena::capture::trim();
                    scrutiny = gives_back;
                }
                CaptureOp::Enter | CaptureOp::Exit => self.summary.skipped += 1,
            }
            self.check(scrutiny)?;
            // Outside a capture only the inner allocator serves `alloc`: the
            // region's pages cannot have changed.
            if self.thorough && self.depth == 0 && !matches!(op, CaptureOp::Alloc { .. }) {
                self.check_held_bytes(false)?;
            }
        }
        Ok(())
    }

    fn enter(&mut self, ops: &mut impl Iterator<Item = CaptureOp>) -> Result<(), Violation> {
        let outermost = self.depth == 0;
        let before = arena::capture::stats();
        if outermost {
            self.summary.captures += 1;
            self.current = Some(self.summary.captures);
        }
        self.depth += 1;
        let result = capture(|| self.run_level(ops));
        self.depth -= 1;
        result?;
        if outermost {
            let number = self.current.take();
            let escaped: Vec<&Item> =
                self.items.iter().filter(|item| Some(item.origin) == number.map(Origin::Capture)).collect();
            let expected = (escaped.len() as u64, escaped.iter().map(|item| item.layout.size() as u64).sum::<u64>());
            let after = arena::capture::stats();
            let counted = (
                after.thread.escaped_allocations - before.thread.escaped_allocations,
                after.thread.escaped_bytes - before.thread.escaped_bytes,
            );
            if counted != expected {
                return Err(self.violation(format!(
                    "capture exit counted (allocations, bytes) {counted:?} escaped; live from it: {expected:?}"
                )));
            }
            self.summary.escapes += counted.0;
        }
        Ok(())
    }

    /// The origin of a new block of `layout` allocated on this thread now.
    fn expected_origin(&self, layout: Layout) -> Origin {
        match self.current {
            Some(number) if layout.align() <= MAX_CAPTURED_ALIGN => Origin::Capture(number),
            _ => Origin::Inner,
        }
    }

    /// Checks that exactly `expected` allocations were captured since `before`.
    fn check_captured(&mut self, before: &CaptureStats, expected: bool, what: &str) -> Result<(), Violation> {
        let captured = arena::capture::stats().thread.captured_allocations - before.thread.captured_allocations;
        if captured != u64::from(expected) {
            return Err(
                self.violation(format!("{what}: {captured} allocations captured, expected {}", u64::from(expected)))
            );
        }
        self.summary.captured += captured;
        Ok(())
    }

    fn new_item(&mut self, ptr: *mut u8, layout: Layout, origin: Origin) -> Result<Item, Violation> {
        let ptr = NonNull::new(ptr).ok_or_else(|| self.violation(format!("allocation of {layout:?} failed")))?;
        if origin != Origin::Inner {
            note_touched(ptr, layout.size());
        }
        self.next_id += 1;
        Ok(Item { ptr, layout, off: offset_for(self.next_id), origin, extent: layout.size() })
    }

    fn alloc(&mut self, bytes: u32, align_log2: u8, zeroed: bool) -> Result<(), Violation> {
        let size = (bytes as usize).clamp(1, MAX_ITEM_BYTES);
        let layout = Layout::from_size_align(size, 1 << align_log2).expect("a valid layout");
        if self.live_bytes() + size > LIVE_BUDGET_BYTES {
            self.summary.skipped += 1;
            return Ok(());
        }
        let before = arena::capture::stats();
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { if zeroed { ARENA.alloc_zeroed(layout) } else { ARENA.alloc(layout) } };
        let origin = self.expected_origin(layout);
        let item = self.new_item(ptr, layout, origin)?;
        let zeros_kept = !zeroed || all_zero(item.bytes());
        self.items.push(item);
        self.check_captured(&before, origin != Origin::Inner, "alloc")?;
        if !zeros_kept {
            return Err(self.violation(format!("alloc_zeroed({layout:?}) gave a block that is not all zeros")));
        }
        self.items.last_mut().expect("just pushed").write_pattern();
        Ok(())
    }

    fn realloc(&mut self, item: u8, bytes: u32) -> Result<(), Violation> {
        if self.items.is_empty() {
            self.summary.skipped += 1;
            return Ok(());
        }
        let index = usize::from(item) % self.items.len();
        let (old, new_size) = (&self.items[index], (bytes as usize).clamp(1, MAX_ITEM_BYTES));
        if self.live_bytes() - old.layout.size() + new_size > LIVE_BUDGET_BYTES {
            self.summary.skipped += 1;
            return Ok(());
        }
        let before = arena::capture::stats();
        let (old_ptr, old_layout, old_origin) = (old.ptr, old.layout, old.origin);
        // SAFETY: the item is live, allocated by `ARENA` with `old_layout`;
        // `new_size` is non-zero and small.
        let ptr = unsafe { ARENA.realloc(old_ptr.as_ptr(), old_layout, new_size) };
        let Some(ptr) = NonNull::new(ptr) else {
            return Err(self.violation(format!("realloc of {old_layout:?} to {new_size} failed")));
        };
        let new_layout = Layout::from_size_align(new_size, old_layout.align()).expect("a valid layout");
        let moved = ptr != old_ptr;
        // A captured block that moves goes where a new allocation would; the
        // inner allocator's blocks stay with it.
        let origin = if moved && old_origin != Origin::Inner { self.expected_origin(new_layout) } else { old_origin };
        self.summary.moved += usize::from(moved);
        if origin != Origin::Inner {
            note_touched(ptr, new_size);
        }
        let item = &mut self.items[index];
        item.extent = if moved { new_size } else { item.extent.max(new_size) };
        (item.ptr, item.layout, item.origin) = (ptr, new_layout, origin);
        if !item.holds_pattern(old_layout.size().min(new_size)) {
            return Err(self.violation(format!("realloc of {old_layout:?} to {new_size} lost the contents")));
        }
        item.write_pattern();
        self.check_captured(&before, moved && origin != Origin::Inner, "realloc")
    }

    fn free(&mut self, item: u8, elsewhere: bool) {
        if self.items.is_empty() {
            self.summary.skipped += 1;
            return;
        }
        let item = self.items.swap_remove(usize::from(item) % self.items.len());
        if elsewhere {
            self.summary.remote += 1;
            self.elsewhere().free(SendPtr(item.ptr), item.layout);
        } else {
            // SAFETY: as above, on this thread.
            unsafe { ARENA.dealloc(item.ptr.as_ptr(), item.layout) };
        }
    }

    fn elsewhere(&self) -> &Elsewhere {
        self.elsewhere.as_ref().expect("a run has its other thread")
    }

    fn alloc_elsewhere(&mut self, bytes: u32, then_exits: bool) -> Result<(), Violation> {
        let size = (bytes as usize).clamp(1, MAX_ITEM_BYTES);
        let layout = Layout::from_size_align(size, 8).expect("a valid layout");
        if self.live_bytes() + size > LIVE_BUDGET_BYTES {
            self.summary.skipped += 1;
            return Ok(());
        }
        self.summary.remote += 1;
        let (ptr, captured) = self.elsewhere().alloc(layout);
        if then_exits {
            self.elsewhere.as_mut().expect("a run has its other thread").restart();
        }
        let ptr = ptr.map_or(std::ptr::null_mut(), |ptr| ptr.0.as_ptr());
        let mut item = self.new_item(ptr, layout, Origin::OtherThread)?;
        item.write_pattern();
        self.items.push(item);
        if captured != 1 {
            return Err(self.violation(format!("another thread's capture captured {captured} allocations, not 1")));
        }
        Ok(())
    }

    /// Every live item holds its pattern (as `scrutiny` says), is aligned,
    /// and overlaps no other.
    fn check(&mut self, scrutiny: Scrutiny) -> Result<(), Violation> {
        self.summary.checks += 1;
        let page_bytes = page_bytes();
        if self.corrupt_at == Some(self.step)
            && let Some(item) = self.items.last()
        {
            let start = item.ptr.as_ptr().addr();
            let last_page = (start + item.layout.size() - 1) / page_bytes * page_bytes;
            // SAFETY: the item is live, and `last_page.max(start)` lies
            // within its bytes; only the model refers to it.
            unsafe { *item.ptr.as_ptr().add(last_page.max(start) - start) ^= 1 };
        }
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(self.items.len());
        for item in &self.items {
            let addr = item.ptr.as_ptr().addr();
            if addr % item.layout.align() != 0 {
                return Err(self.violation(format!("{:?} at {addr:#x} is misaligned", item.layout)));
            }
            let holds = match scrutiny {
                Scrutiny::EveryByte => item.holds_pattern(item.layout.size()),
                Scrutiny::EachPage => item.holds_pattern_on_each_page(page_bytes),
            };
            if !holds {
                return Err(self.violation(format!(
                    "{:?} at {addr:#x} ({:?}) no longer holds its pattern",
                    item.layout, item.origin
                )));
            }
            spans.push((addr, addr + item.layout.size()));
        }
        spans.sort_unstable();
        if let Some(pair) = spans.windows(2).find(|pair| pair[0].1 > pair[1].0) {
            return Err(self.violation(format!("live blocks overlap: {:#x?} and {:#x?}", pair[0], pair[1])));
        }
        Ok(())
    }

    /// Outside a capture: the region holds resident at most the pages of
    /// the live captured items, plus the retention budget.
    fn check_held_bytes(&self, whole: bool) -> Result<(), Violation> {
        let stats = arena::capture::stats();
        let Some(resident) = region_resident(stats.reserved_bytes, whole).map_err(|message| self.violation(message))?
        else {
            return Ok(());
        };
        let page_bytes = page_bytes();
        let live_pages: usize = self
            .items
            .iter()
            .filter(|item| item.origin != Origin::Inner)
            .map(|item| {
                let start = item.ptr.as_ptr().addr();
                (start + item.extent).div_ceil(page_bytes) - start / page_bytes
            })
            .sum();
        // A chunk listed to continue keeps what was touched from where it
        // continues on.
        let bound = live_pages * page_bytes + RETAIN_BYTES + stats.continued_bytes;
        if resident > bound {
            return Err(self.violation(format!(
                "the capture region holds {resident} bytes resident; live items span {live_pages} pages of \
                 {page_bytes} bytes, the budget is {RETAIN_BYTES}, chunks to continue {}: {stats:?}",
                stats.continued_bytes
            )));
        }
        Ok(())
    }
}
