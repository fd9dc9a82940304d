//! Byte strings to operations and back. Plain integer code: decoding never
//! fails and never panics, whatever the bytes.

use super::{Elem, Focus, Header, LargeThreshold, LimitSetting, MAX_OPS, Make, Op, PanicSite, ScopeKind};

/// Largest size an ordinary (two-byte) size field decodes to.
pub(super) const MAX_SMALL_BYTES: u32 = 65_407;

/// The opcode families; an opcode byte selects one through a focus's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Open,
    Close,
    Array,
    LargeArray,
    VecNew,
    VecPush,
    VecExtend,
    VecFreeze,
    Boxed,
    RawAlloc,
    RawLarge,
    RawGrow,
    RawShrink,
    RawDealloc,
    DropItem,
    Panic,
    Trim,
    Limit,
}

use Kind as K;

/// Opcode byte (mod 32) to family, one table per focus: the number of
/// entries of a family is its weight.
const BALANCED: [Kind; 32] = [
    K::Open,
    K::Close,
    K::Array,
    K::LargeArray,
    K::VecNew,
    K::VecPush,
    K::VecExtend,
    K::VecFreeze,
    K::Boxed,
    K::RawAlloc,
    K::RawLarge,
    K::RawGrow,
    K::RawShrink,
    K::RawDealloc,
    K::DropItem,
    K::Panic,
    K::Trim,
    K::Open,
    K::Open,
    K::Close,
    K::Close,
    K::Array,
    K::Array,
    K::Array,
    K::Array,
    K::Array,
    K::VecPush,
    K::RawAlloc,
    K::RawAlloc,
    K::RawGrow,
    K::DropItem,
    K::Limit,
];

const ALLOCATOR_API: [Kind; 32] = [
    K::Open,
    K::Close,
    K::Array,
    K::VecNew,
    K::VecPush,
    K::VecExtend,
    K::VecFreeze,
    K::RawAlloc,
    K::RawLarge,
    K::RawGrow,
    K::RawShrink,
    K::RawDealloc,
    K::DropItem,
    K::Panic,
    K::Open,
    K::Open,
    K::Close,
    K::Array,
    K::VecPush,
    K::RawAlloc,
    K::RawAlloc,
    K::RawAlloc,
    K::RawAlloc,
    K::RawAlloc,
    K::RawGrow,
    K::RawGrow,
    K::RawGrow,
    K::RawGrow,
    K::RawShrink,
    K::RawShrink,
    K::RawDealloc,
    K::Limit,
];

const LARGE_BLOCKS: [Kind; 32] = [
    K::Open,
    K::Close,
    K::Array,
    K::LargeArray,
    K::VecNew,
    K::VecPush,
    K::VecExtend,
    K::VecFreeze,
    K::RawAlloc,
    K::RawLarge,
    K::RawGrow,
    K::RawShrink,
    K::RawDealloc,
    K::DropItem,
    K::Panic,
    K::Trim,
    K::Open,
    K::Open,
    K::Close,
    K::Array,
    K::LargeArray,
    K::LargeArray,
    K::LargeArray,
    K::LargeArray,
    K::VecExtend,
    K::VecExtend,
    K::VecFreeze,
    K::RawLarge,
    K::RawLarge,
    K::RawGrow,
    K::DropItem,
    K::Limit,
];

fn table(focus: Focus) -> &'static [Kind; 32] {
    match focus {
        Focus::Balanced => &BALANCED,
        Focus::AllocatorApi => &ALLOCATOR_API,
        Focus::LargeBlocks => &LARGE_BLOCKS,
    }
}

/// Reads bytes; past the end every byte reads as zero.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    ops: usize,
    focus: Focus,
    header: Header,
}

impl<'a> Reader<'a> {
    /// A reader over a whole input: takes the header byte.
    pub(super) fn new(bytes: &'a [u8], focus: Focus) -> Reader<'a> {
        let mut reader = Reader { bytes, pos: 0, ops: 0, focus, header: Header::default() };
        if !bytes.is_empty() {
            let byte = reader.byte();
            reader.header = decode_header(byte, focus);
        }
        reader
    }

    pub(super) fn header(&self) -> Header {
        self.header
    }

    fn byte(&mut self) -> u8 {
        let byte = self.bytes.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        byte
    }

    fn up(&mut self) -> u8 {
        let byte = self.byte();
        let outer_from = if self.focus == Focus::AllocatorApi { 0x80 } else { 0xC0 };
        if byte < outer_from { 0 } else { byte & 0x3F }
    }

    fn small_size(&mut self) -> (u32, bool) {
        let (b0, b1) = (self.byte(), self.byte());
        (small_size(b0, b1), b0 & 0x80 != 0)
    }

    fn large_size(&mut self) -> u32 {
        let steps = u32::from(self.byte() % 9);
        let threshold = threshold_u32(self.header.large_threshold);
        threshold + steps * (threshold / 4)
    }

    fn align_zeroed(&mut self) -> (u8, bool) {
        let byte = self.byte();
        ((byte & 0x7F) % 14, byte & 0x80 != 0)
    }

    /// The next operation, or `None` at the end of the input or after
    /// [`MAX_OPS`] operations.
    pub(super) fn next_op(&mut self) -> Option<Op> {
        if self.pos >= self.bytes.len() || self.ops >= MAX_OPS {
            return None;
        }
        self.ops += 1;
        let kind = table(self.focus)[usize::from(self.byte() % 32)];
        Some(match kind {
            K::Open => {
                let kind = match self.byte() % 3 {
                    0 => ScopeKind::ThreadArena,
                    1 => ScopeKind::ChildScope,
                    _ => ScopeKind::OwnedArena,
                };
                Op::Open { kind, up: self.up() }
            }
            K::Close => Op::Close,
            K::Array => {
                let (elem, make) = elem_make(self.byte());
                let (bytes, _) = self.small_size();
                Op::Array { elem, bytes, make, up: self.up() }
            }
            K::LargeArray => {
                let (elem, make) = elem_make(self.byte());
                let bytes = self.large_size();
                Op::Array { elem, bytes, make, up: self.up() }
            }
            K::VecNew => Op::VecNew { up: self.up() },
            K::VecPush => {
                let (item, count) = (self.byte(), self.byte());
                Op::VecPush { item, count, up: self.up() }
            }
            K::VecExtend => {
                let item = self.byte();
                let (bytes, from_slice) = self.small_size();
                Op::VecExtend { item, bytes, from_slice, up: self.up() }
            }
            K::VecFreeze => Op::VecFreeze { item: self.byte(), up: self.up() },
            K::Boxed => Op::Boxed { elem: elem_make(self.byte()).0, up: self.up() },
            K::RawAlloc => {
                let (bytes, _) = self.small_size();
                let (align_log2, zeroed) = self.align_zeroed();
                Op::RawAlloc { bytes, align_log2, zeroed, up: self.up() }
            }
            K::RawLarge => {
                let bytes = self.large_size();
                let (align_log2, zeroed) = self.align_zeroed();
                Op::RawAlloc { bytes, align_log2, zeroed, up: self.up() }
            }
            K::RawGrow => {
                let item = self.byte();
                let (small, large) = self.small_size();
                let add = if large { small + threshold_u32(self.header.large_threshold) } else { small };
                let (align_log2, zeroed) = self.align_zeroed();
                Op::RawGrow { item, add, align_log2, zeroed, up: self.up() }
            }
            K::RawShrink => {
                let (item, keep) = (self.byte(), self.byte());
                let (align_log2, _) = self.align_zeroed();
                Op::RawShrink { item, keep, align_log2, up: self.up() }
            }
            K::RawDealloc => Op::RawDealloc { item: self.byte(), up: self.up() },
            K::DropItem => Op::DropItem { item: self.byte(), up: self.up() },
            K::Panic => {
                let byte = self.byte();
                let site = match (byte / 4) % 3 {
                    0 => PanicSite::BetweenOps,
                    1 => PanicSite::InFromFn,
                    _ => PanicSite::InExtend,
                };
                Op::Panic { levels: byte % 4, site }
            }
            K::Trim => Op::Trim,
            K::Limit => {
                let setting = match self.byte() % 4 {
                    0 => LimitSetting::Lifted,
                    1 => LimitSetting::AtUse,
                    2 => LimitSetting::BelowUse,
                    _ => LimitSetting::AboveUse,
                };
                Op::Limit { setting }
            }
        })
    }
}

fn decode_header(byte: u8, focus: Focus) -> Header {
    use LargeThreshold::{Medium, Small, Standard};
    let thresholds = match focus {
        Focus::LargeBlocks => [Small, Medium, Standard, Small],
        Focus::Balanced | Focus::AllocatorApi => [Standard, Standard, Medium, Small],
    };
    Header {
        large_threshold: thresholds[usize::from(byte % 4)],
        use_pool: byte & 0x80 == 0,
        large_slabs: byte & 0x40 != 0,
    }
}

fn threshold_u32(threshold: LargeThreshold) -> u32 {
    u32::try_from(threshold.bytes()).unwrap_or(u32::MAX)
}

/// A log-uniform size from 0 to [`MAX_SMALL_BYTES`]: `b0 % 16` is the
/// magnitude, `b1` the mantissa.
fn small_size(b0: u8, b1: u8) -> u32 {
    let magnitude = u32::from(b0 % 16);
    (((256 + u32::from(b1)) << magnitude) >> 8) - 1
}

fn elem_make(byte: u8) -> (Elem, Make) {
    let elem = match byte % 6 {
        0 => Elem::U8,
        1 => Elem::U16,
        2 => Elem::U64,
        3 => Elem::Align64,
        4 => Elem::Page,
        _ => Elem::Empty64,
    };
    let make = match (byte / 6) % 3 {
        0 => Make::Generated,
        1 => Make::Cloned,
        _ => Make::Zeroed,
    };
    (elem, make)
}

/// Decodes a whole input as [`run_with`](super::run_with) with `focus` would:
/// the header and the operations, at most [`MAX_OPS`] of them. For reading a
/// fuzzer's crash input.
pub fn decode(bytes: &[u8], focus: Focus) -> (Header, Vec<Op>) {
    let mut reader = Reader::new(bytes, focus);
    let mut ops = Vec::new();
    while let Some(op) = reader.next_op() {
        ops.push(op);
    }
    (reader.header(), ops)
}

/// Encodes `header` and `ops` as an input for [`run`](super::run)
/// ([`Focus::Balanced`]).
///
/// Every operation that [`decode`] produces encodes exactly. Other values are
/// rounded: a size is written with the two-byte field (0 to 65 407, rounded
/// down to about 1/256) unless it is not exact there and reaches the
/// threshold; then it is a large request (the threshold plus a multiple of a
/// quarter of it, up to three times the threshold, rounded down). `up` is
/// kept to 0..=63, alignments to 0..=12, panic levels to 0..=3.
pub fn encode(header: Header, ops: &[Op]) -> Vec<u8> {
    let threshold = threshold_u32(header.large_threshold);
    let mut out = vec![encode_header(header)];
    for op in ops {
        match *op {
            Op::Open { kind, up } => {
                let kind = match kind {
                    ScopeKind::ThreadArena => 0,
                    ScopeKind::ChildScope => 1,
                    ScopeKind::OwnedArena => 2,
                };
                out.extend([opcode(K::Open), kind, encode_up(up)]);
            }
            Op::Close => out.push(opcode(K::Close)),
            Op::Array { elem, bytes, make, up } => {
                let elem_make = encode_elem_make(elem, make);
                match size_field(bytes, threshold) {
                    SizeField::Small([b0, b1]) => out.extend([opcode(K::Array), elem_make, b0, b1, encode_up(up)]),
                    SizeField::Large(steps) => out.extend([opcode(K::LargeArray), elem_make, steps, encode_up(up)]),
                }
            }
            Op::VecNew { up } => out.extend([opcode(K::VecNew), encode_up(up)]),
            Op::VecPush { item, count, up } => out.extend([opcode(K::VecPush), item, count, encode_up(up)]),
            Op::VecExtend { item, bytes, from_slice, up } => {
                let [b0, b1] = encode_small(bytes.min(MAX_SMALL_BYTES));
                let b0 = b0 | if from_slice { 0x80 } else { 0 };
                out.extend([opcode(K::VecExtend), item, b0, b1, encode_up(up)]);
            }
            Op::VecFreeze { item, up } => out.extend([opcode(K::VecFreeze), item, encode_up(up)]),
            Op::Boxed { elem, up } => {
                out.extend([opcode(K::Boxed), encode_elem_make(elem, Make::Generated), encode_up(up)]);
            }
            Op::RawAlloc { bytes, align_log2, zeroed, up } => {
                let align = encode_align(align_log2, zeroed);
                match size_field(bytes, threshold) {
                    SizeField::Small([b0, b1]) => out.extend([opcode(K::RawAlloc), b0, b1, align, encode_up(up)]),
                    SizeField::Large(steps) => out.extend([opcode(K::RawLarge), steps, align, encode_up(up)]),
                }
            }
            Op::RawGrow { item, add, align_log2, zeroed, up } => {
                let beyond = add.saturating_sub(threshold);
                let large = add >= threshold && (add > MAX_SMALL_BYTES || small_exact(beyond));
                let [b0, b1] = if large && !small_exact(add) {
                    let [b0, b1] = encode_small(beyond);
                    [b0 | 0x80, b1]
                } else {
                    encode_small(add)
                };
                out.extend([opcode(K::RawGrow), item, b0, b1, encode_align(align_log2, zeroed), encode_up(up)]);
            }
            Op::RawShrink { item, keep, align_log2, up } => {
                out.extend([opcode(K::RawShrink), item, keep, encode_align(align_log2, false), encode_up(up)]);
            }
            Op::RawDealloc { item, up } => out.extend([opcode(K::RawDealloc), item, encode_up(up)]),
            Op::DropItem { item, up } => out.extend([opcode(K::DropItem), item, encode_up(up)]),
            Op::Panic { levels, site } => {
                let site = match site {
                    PanicSite::BetweenOps => 0,
                    PanicSite::InFromFn => 1,
                    PanicSite::InExtend => 2,
                };
                out.extend([opcode(K::Panic), site * 4 + levels.min(3)]);
            }
            Op::Trim => out.push(opcode(K::Trim)),
            Op::Limit { setting } => {
                let setting = match setting {
                    LimitSetting::Lifted => 0,
                    LimitSetting::AtUse => 1,
                    LimitSetting::BelowUse => 2,
                    LimitSetting::AboveUse => 3,
                };
                out.extend([opcode(K::Limit), setting]);
            }
        }
    }
    out
}

fn encode_header(header: Header) -> u8 {
    let threshold = match header.large_threshold {
        LargeThreshold::Standard => 0,
        LargeThreshold::Medium => 2,
        LargeThreshold::Small => 3,
    };
    threshold | if header.use_pool { 0 } else { 0x80 } | if header.large_slabs { 0x40 } else { 0 }
}

/// The first opcode byte of `kind` in the balanced table (every family has one).
fn opcode(kind: Kind) -> u8 {
    let index = BALANCED.iter().position(|&k| k == kind).unwrap_or(0);
    u8::try_from(index).unwrap_or(0)
}

fn encode_up(up: u8) -> u8 {
    if up == 0 { 0 } else { 0xC0 | (up & 0x3F) }
}

fn encode_align(align_log2: u8, zeroed: bool) -> u8 {
    align_log2.min(13) | if zeroed { 0x80 } else { 0 }
}

fn encode_elem_make(elem: Elem, make: Make) -> u8 {
    let elem = match elem {
        Elem::U8 => 0,
        Elem::U16 => 1,
        Elem::U64 => 2,
        Elem::Align64 => 3,
        Elem::Page => 4,
        Elem::Empty64 => 5,
    };
    let make = match make {
        Make::Generated => 0,
        Make::Cloned => 1,
        Make::Zeroed => 2,
    };
    elem + 6 * make
}

/// The two bytes whose [`small_size`] is the largest size `<= bytes`.
fn encode_small(bytes: u32) -> [u8; 2] {
    let m = bytes.min(MAX_SMALL_BYTES) + 1;
    let magnitude = (31 - m.leading_zeros()).min(15);
    let mantissa = ((m << 8) >> magnitude).saturating_sub(256).min(255);
    [magnitude as u8, mantissa as u8]
}

/// Whether `bytes` is a size the two-byte field decodes to.
fn small_exact(bytes: u32) -> bool {
    let [b0, b1] = encode_small(bytes);
    small_size(b0, b1) == bytes
}

/// How a request size is written: the two-byte field, or the steps of a large request.
enum SizeField {
    Small([u8; 2]),
    Large(u8),
}

/// The field that writes `bytes` exactly where one can, else the closest one below.
fn size_field(bytes: u32, threshold: u32) -> SizeField {
    if small_exact(bytes) || (bytes < threshold && bytes <= MAX_SMALL_BYTES) {
        SizeField::Small(encode_small(bytes))
    } else if bytes >= threshold {
        SizeField::Large(encode_large(bytes, threshold))
    } else {
        SizeField::Small(encode_small(bytes))
    }
}

fn encode_large(bytes: u32, threshold: u32) -> u8 {
    let steps = bytes.saturating_sub(threshold) / (threshold / 4).max(1);
    steps.min(8) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_sizes_round_trip_downward() {
        for bytes in (0..=MAX_SMALL_BYTES).step_by(7) {
            let [b0, b1] = encode_small(bytes);
            let decoded = small_size(b0, b1);
            assert!(decoded <= bytes && decoded + decoded / 128 + 1 >= bytes, "{bytes} -> {decoded}");
        }
        assert_eq!(small_size(15, 255), MAX_SMALL_BYTES);
    }

    #[test]
    fn every_family_has_a_balanced_opcode() {
        for kind in LARGE_BLOCKS.iter().chain(&ALLOCATOR_API) {
            assert!(BALANCED.contains(kind), "{kind:?}");
        }
    }
}
