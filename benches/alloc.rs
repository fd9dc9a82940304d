//! The hot path against its peers, in one process: the thread-local scoped
//! arena next to `Vec` (the system allocator), `bumpalo`, `bump-scope` and
//! `blink-alloc`, for the operations a hot loop's temporaries are made of.
//!
//! `cargo bench -p arena-benches --bench alloc [-- FILTER]` prints one table: nanoseconds per
//! operation (the median over interleaved rounds) for each peer, and the
//! arena's time over the fastest peer's. The arena appears twice: `arena` is
//! `arena::scope`, on the thread's arena found through a thread-local, and
//! `arena, owned` is `Arena::scope` on an arena the timed loop owns, the way
//! the other peers own theirs; the difference between the two is the cost of
//! reaching the thread's arena from any call depth. Every peer reclaims its
//! memory in each operation, the way a loop iteration would: `Vec` frees,
//! `bumpalo` and `blink` reset, `bump-scope` and the arena leave a scope.
//!
//! Interleaving matters on a shared machine: each round times every
//! (case, peer) pair once, in order, so a slow period affects all peers of a
//! round alike and the median over rounds discards it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use allocator_api2::vec::Vec as VecIn;
use blink_alloc::Blink;
use bumpalo::Bump;

/// Timed rounds per (case, peer); the median is reported.
const ROUNDS: usize = 41;
/// Target duration of one timed batch.
const BATCH_TARGET: Duration = Duration::from_millis(2);
/// Live allocations per operation of the `10k live` case.
const LIVE: usize = 10_000;

/// A peer's timed loop: runs the operation `iters` times, returns the elapsed time.
type Timed = Box<dyn FnMut(u64) -> Duration>;

/// Turns one operation into a timed loop; generic, so `op` is inlined into it.
fn timed(mut op: impl FnMut() + 'static) -> Timed {
    Box::new(move |iters| {
        let start = Instant::now();
        for _ in 0..iters {
            op();
        }
        start.elapsed()
    })
}

/// `peers` followed by the two arena columns for an operation on a scope,
/// given as a closure: the thread's arena (`arena::scope`) and an arena owned
/// by the timed loop (`Arena::scope`). A macro, so that each column gets its
/// own copy of the closure, as each peer's operation is a closure of its own:
/// one closure called from two timed loops is one function with two call
/// sites, which the compiler kept out of line, a call the peers did not pay.
macro_rules! with_arena {
    ($peers:expr, $body:expr $(,)?) => {{
        let mut peers: Vec<(Peer, Timed)> = $peers;
        let mut owned = arena::Arena::new();
        // The owned arena holds a slab, as the thread's does (see `main`).
        owned.scope(|s| drop(s.zeroed::<u8>(64)));
        peers.push((Peer::Arena, timed(move || arena::scope($body))));
        peers.push((Peer::ArenaOwned, timed(move || owned.scope($body))));
        peers
    }};
}

/// Times `iters` empty child scopes of `outer`.
fn time_child_scopes(outer: &arena::Scope<'_>, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        outer.scope(|s| _ = black_box(s));
    }
    start.elapsed()
}

/// One row of the table: an operation, implemented by each peer that has it.
struct Case {
    name: String,
    /// How many operations one call of the closure performs (for ns per op).
    ops_per_call: u64,
    peers: Vec<(Peer, Timed)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Peer {
    Vec,
    Bumpalo,
    BumpScope,
    Blink,
    Arena,
    /// `Arena::scope` on an arena owned by the loop, as the other peers' are:
    /// the same code as `arena` without the thread-local lookup.
    ArenaOwned,
}

const PEERS: [Peer; 6] = [Peer::Vec, Peer::Bumpalo, Peer::BumpScope, Peer::Blink, Peer::Arena, Peer::ArenaOwned];

impl Peer {
    fn label(self) -> &'static str {
        match self {
            Peer::Vec => "Vec/malloc",
            Peer::Bumpalo => "bumpalo",
            Peer::BumpScope => "bump-scope",
            Peer::Blink => "blink",
            Peer::Arena => "arena",
            Peer::ArenaOwned => "arena, owned",
        }
    }
}

fn scope_cases() -> Vec<Case> {
    let mut cases = Vec::new();

    // bumpalo and blink have no scopes (their `reset` of an empty arena is a no-op).
    let mut bump = bump_scope::Bump::<bump_scope::alloc::Global>::new();
    cases.push(Case {
        name: "scope enter + exit, empty".into(),
        ops_per_call: 1,
        peers: with_arena!(vec![(Peer::BumpScope, timed(move || bump.scoped(|b| _ = black_box(b))))], move |s| {
            _ = black_box(s);
        }),
    });

    let mut bump = bump_scope::Bump::<bump_scope::alloc::Global>::new();
    cases.push(Case {
        name: "nested scope enter + exit, empty".into(),
        ops_per_call: 1,
        peers: vec![
            (Peer::BumpScope, {
                Box::new(move |iters| {
                    bump.scoped(|outer| {
                        let start = Instant::now();
                        for _ in 0..iters {
                            outer.scoped(|b| _ = black_box(b));
                        }
                        start.elapsed()
                    })
                })
            }),
            (Peer::Arena, Box::new(|iters| arena::scope(|outer| time_child_scopes(outer, iters)))),
            (Peer::ArenaOwned, {
                let mut owned = arena::Arena::new();
                Box::new(move |iters| owned.scope(|outer| time_child_scopes(outer, iters)))
            }),
        ],
    });

    let mut bump = bump_scope::Bump::<bump_scope::alloc::Global>::new();
    let mut bumpalo = Bump::new();
    let mut blink = Blink::new();
    cases.push(Case {
        name: "scope + one 64 B zeroed array + exit".into(),
        ops_per_call: 1,
        peers: with_arena!(
            vec![
                (Peer::Vec, timed(|| drop(black_box(vec![0_u8; 64])))),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        black_box(bumpalo.alloc_slice_fill_copy(64, 0_u8));
                        bumpalo.reset();
                    }),
                ),
                (Peer::BumpScope, timed(move || bump.scoped(|b| drop(black_box(b.alloc_slice_fill(64, 0_u8)))))),
                (
                    Peer::Blink,
                    timed(move || {
                        black_box(blink.copy_slice(&[0_u8; 64]));
                        blink.reset();
                    }),
                ),
            ],
            move |s| drop(black_box(s.zeroed::<u8>(64))),
        ),
    });

    let mut bump = bump_scope::Bump::<bump_scope::alloc::Global>::new();
    let mut bumpalo = Bump::new();
    let mut blink = Blink::new();
    let mut held: Vec<Vec<u8>> = Vec::with_capacity(LIVE);
    cases.push(Case {
        name: format!("64 B zeroed array, {}k live, per array", LIVE / 1000),
        ops_per_call: LIVE as u64,
        peers: with_arena!(
            vec![
                (
                    Peer::Vec,
                    timed(move || {
                        held.extend((0..LIVE).map(|_| vec![0_u8; 64]));
                        black_box(&held);
                        held.clear();
                    }),
                ),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        for _ in 0..LIVE {
                            black_box(bumpalo.alloc_slice_fill_copy(64, 0_u8));
                        }
                        bumpalo.reset();
                    }),
                ),
                (
                    Peer::BumpScope,
                    timed(move || {
                        bump.scoped(|b| {
                            for _ in 0..LIVE {
                                black_box(b.alloc_slice_fill(64, 0_u8));
                            }
                        });
                    }),
                ),
                (
                    Peer::Blink,
                    timed(move || {
                        for _ in 0..LIVE {
                            black_box(blink.copy_slice(&[0_u8; 64]));
                        }
                        blink.reset();
                    }),
                ),
            ],
            |s| {
                for _ in 0..LIVE {
                    black_box(s.zeroed::<u8>(64));
                }
            },
        ),
    });
    cases
}

/// An element type of the constructor cases: made from an index, and mapped.
trait Element: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    const NAME: &'static str;
    fn from_index(i: usize) -> Self;
    fn step(self) -> Self;
}

impl Element for f64 {
    const NAME: &'static str = "f64";
    #[inline(always)]
    fn from_index(i: usize) -> Self {
        i as f64
    }
    #[inline(always)]
    fn step(self) -> Self {
        self * 1.5 + 1.0
    }
}

impl Element for u8 {
    const NAME: &'static str = "u8";
    #[inline(always)]
    fn from_index(i: usize) -> Self {
        i as u8
    }
    #[inline(always)]
    fn step(self) -> Self {
        self.wrapping_mul(3).wrapping_add(1)
    }
}

/// The constructors of the issue, for `len` elements of `T`: `clone_slice` twice,
/// as `copy_slice` next to the peers' `Copy` forms and as itself next to their
/// `Clone` forms; the vector's `extend_from_slice` as its `Copy` form, and
/// a vector made with its capacity and filled by `push`.
fn constructor_cases<T: Element>(len: usize) -> Vec<Case> {
    let source: &'static [T] = Vec::leak((0..len).map(T::from_index).collect());
    let name = |what: &str| format!("{what}, {len} {}", T::NAME);
    let case = |what: &str, peers| Case { name: name(what), ops_per_call: 1, peers };
    let mut cases = Vec::new();

    let (mut bumpalo, mut bump) = (Bump::new(), bump_scope::Bump::<bump_scope::alloc::Global>::new());
    let mut blink = Blink::new();
    cases.push(case(
        "from exact-size iterator",
        with_arena!(
            vec![
                (Peer::Vec, timed(move || drop(black_box((0..len).map(T::from_index).collect::<Vec<T>>())))),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        black_box(bumpalo.alloc_slice_fill_iter((0..len).map(T::from_index)));
                        bumpalo.reset();
                    }),
                ),
                (
                    Peer::BumpScope,
                    timed(move || bump.scoped(|b| drop(black_box(b.alloc_iter_exact((0..len).map(T::from_index)))))),
                ),
                (
                    Peer::Blink,
                    timed(move || {
                        black_box(blink.emplace_no_drop::<T>().from_iter((0..len).map(T::from_index)));
                        blink.reset();
                    }),
                ),
            ],
            move |s| drop(black_box(s.from_iter((0..len).map(T::from_index)))),
        ),
    ));

    let (mut bumpalo, mut bump) = (Bump::new(), bump_scope::Bump::<bump_scope::alloc::Global>::new());
    cases.push(case(
        "from_fn",
        with_arena!(
            vec![
                (Peer::Vec, timed(move || drop(black_box((0..len).map(T::from_index).collect::<Vec<T>>())))),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        black_box(bumpalo.alloc_slice_fill_with(len, T::from_index));
                        bumpalo.reset();
                    }),
                ),
                (
                    Peer::BumpScope,
                    timed(move || {
                        bump.scoped(|b| {
                            let mut i = 0;
                            drop(black_box(b.alloc_slice_fill_with(len, || {
                                i += 1;
                                T::from_index(i - 1)
                            })));
                        });
                    }),
                ),
            ],
            move |s| drop(black_box(s.from_fn(len, T::from_index))),
        ),
    ));

    let (mut bumpalo, mut bump) = (Bump::new(), bump_scope::Bump::<bump_scope::alloc::Global>::new());
    let mut blink = Blink::new();
    cases.push(case(
        "copy_slice",
        with_arena!(
            vec![
                (Peer::Vec, timed(move || drop(black_box(source.to_vec())))),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        black_box(bumpalo.alloc_slice_copy(source));
                        bumpalo.reset();
                    }),
                ),
                (Peer::BumpScope, timed(move || bump.scoped(|b| drop(black_box(b.alloc_slice_copy(source)))))),
                (
                    Peer::Blink,
                    timed(move || {
                        black_box(blink.copy_slice(source));
                        blink.reset();
                    }),
                ),
            ],
            move |s| drop(black_box(s.copy_slice(source))),
        ),
    ));

    let (mut bumpalo, mut bump) = (Bump::new(), bump_scope::Bump::<bump_scope::alloc::Global>::new());
    cases.push(case(
        "clone_slice",
        with_arena!(
            vec![
                (Peer::Vec, timed(move || drop(black_box(source.to_vec())))),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        black_box(bumpalo.alloc_slice_clone(source));
                        bumpalo.reset();
                    }),
                ),
                (Peer::BumpScope, timed(move || bump.scoped(|b| drop(black_box(b.alloc_slice_clone(source)))))),
            ],
            move |s| drop(black_box(s.clone_slice(source))),
        ),
    ));

    let (mut bumpalo, mut bump) = (Bump::new(), bump_scope::Bump::<bump_scope::alloc::Global>::new());
    cases.push(case(
        "vec extend_from_slice",
        with_arena!(
            vec![
                (
                    Peer::Vec,
                    timed(move || {
                        let mut v = Vec::new();
                        v.extend_from_slice(source);
                        drop(black_box(v));
                    }),
                ),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        let mut v = VecIn::new_in(&bumpalo);
                        v.extend_from_slice(source);
                        drop(black_box(v));
                        bumpalo.reset();
                    }),
                ),
                (
                    Peer::BumpScope,
                    timed(move || {
                        bump.scoped(|b| {
                            let mut v = bump_scope::BumpVec::new_in(&b);
                            v.extend_from_slice_copy(source);
                            drop(black_box(v));
                        });
                    }),
                ),
            ],
            move |s| {
                let mut v = s.vec();
                v.extend_from_slice_copy(source);
                drop(black_box(v));
            },
        ),
    ));

    let (mut bumpalo, mut bump) = (Bump::new(), bump_scope::Bump::<bump_scope::alloc::Global>::new());
    cases.push(case(
        "vec extend(slice.iter().copied())",
        with_arena!(
            vec![
                (
                    Peer::Vec,
                    timed(move || {
                        let mut v = Vec::new();
                        v.extend(source.iter().copied());
                        drop(black_box(v));
                    }),
                ),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        let mut v = VecIn::new_in(&bumpalo);
                        v.extend(source.iter().copied());
                        drop(black_box(v));
                        bumpalo.reset();
                    }),
                ),
                (
                    Peer::BumpScope,
                    timed(move || {
                        bump.scoped(|b| {
                            let mut v = bump_scope::BumpVec::new_in(&b);
                            v.extend(source.iter().copied());
                            drop(black_box(v));
                        });
                    }),
                ),
            ],
            move |s| {
                let mut v = s.vec();
                v.extend(source.iter().copied());
                drop(black_box(v));
            },
        ),
    ));

    let (mut bumpalo, mut bump) = (Bump::new(), bump_scope::Bump::<bump_scope::alloc::Global>::new());
    cases.push(case(
        "vec with_capacity + push",
        with_arena!(
            vec![
                (
                    Peer::Vec,
                    timed(move || {
                        let mut v = Vec::with_capacity(len);
                        (0..len).for_each(|i| v.push(T::from_index(i)));
                        drop(black_box(v));
                    }),
                ),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        let mut v = VecIn::with_capacity_in(len, &bumpalo);
                        (0..len).for_each(|i| v.push(T::from_index(i)));
                        drop(black_box(v));
                        bumpalo.reset();
                    }),
                ),
                (
                    Peer::BumpScope,
                    timed(move || {
                        bump.scoped(|b| {
                            let mut v = bump_scope::BumpVec::with_capacity_in(len, &b);
                            (0..len).for_each(|i| v.push(T::from_index(i)));
                            drop(black_box(v));
                        });
                    }),
                ),
            ],
            move |s| {
                let mut v = s.vec_with_capacity(len);
                (0..len).for_each(|i| v.push(T::from_index(i)));
                drop(black_box(v));
            },
        ),
    ));

    let (mut bumpalo, mut bump) = (Bump::new(), bump_scope::Bump::<bump_scope::alloc::Global>::new());
    cases.push(case(
        "map (kernels::map_in)",
        with_arena!(
            vec![
                (Peer::Vec, timed(move || drop(black_box(source.iter().map(|x| x.step()).collect::<Vec<T>>())))),
                (
                    Peer::Bumpalo,
                    timed(move || {
                        black_box(bumpalo.alloc_slice_fill_iter(source.iter().map(|x| x.step())));
                        bumpalo.reset();
                    }),
                ),
                (
                    Peer::BumpScope,
                    timed(move || {
                        bump.scoped(|b| drop(black_box(b.alloc_iter_exact(source.iter().map(|x| x.step())))));
                    }),
                ),
            ],
            move |s| drop(black_box(arena::kernels::map_in(source, T::step, s))),
        ),
    ));
    cases
}

/// Iterations per batch so that one batch takes about [`BATCH_TARGET`].
fn calibrate(run: &mut Timed) -> u64 {
    let mut iters = 1;
    loop {
        let elapsed = run(iters);
        if elapsed >= BATCH_TARGET || iters >= 1 << 30 {
            let scale = BATCH_TARGET.as_secs_f64() / elapsed.as_secs_f64().max(1e-9);
            return ((iters as f64 * scale) as u64).max(1);
        }
        iters *= 2;
    }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; anything else is a filter on case names.
    let filter: Vec<String> = std::env::args().skip(1).filter(|arg| !arg.starts_with("--")).collect();
    // The thread's arena holds a slab, as it does in a loop after its first pass.
    arena::scope(|s| drop(s.zeroed::<u8>(64)));

    let mut cases = scope_cases();
    cases.extend(constructor_cases::<f64>(4096));
    cases.extend(constructor_cases::<u8>(16));
    cases.retain(|case| filter.is_empty() || filter.iter().any(|f| case.name.contains(f.as_str())));

    let mut iters: Vec<Vec<u64>> =
        cases.iter_mut().map(|case| case.peers.iter_mut().map(|(_, run)| calibrate(run)).collect()).collect();
    let mut samples: Vec<Vec<Vec<f64>>> = cases.iter().map(|case| vec![Vec::new(); case.peers.len()]).collect();
    for _ in 0..ROUNDS {
        for (c, case) in cases.iter_mut().enumerate() {
            for (p, (_, run)) in case.peers.iter_mut().enumerate() {
                let n = iters[c][p];
                let ns = run(n).as_nanos() as f64 / (n * case.ops_per_call) as f64;
                samples[c][p].push(ns);
            }
        }
    }
    iters.clear();

    println!(
        "ns per operation, median of {ROUNDS} interleaved rounds; ratios = each arena column / the fastest other peer\n"
    );
    print!("| case |");
    for peer in PEERS {
        print!(" {} |", peer.label());
    }
    println!(" arena / best peer | owned / best peer |");
    println!("|---|{}--:|--:|", "--:|".repeat(PEERS.len()));
    for (case, mut case_samples) in cases.iter().zip(samples) {
        let medians: Vec<(Peer, f64)> =
            case.peers.iter().zip(case_samples.iter_mut()).map(|((peer, _), s)| (*peer, median(s))).collect();
        print!("| {} |", case.name);
        for peer in PEERS {
            match medians.iter().find(|(p, _)| *p == peer) {
                Some((_, ns)) => print!(" {ns:.2} |"),
                None => print!(" – |"),
            }
        }
        let of = |peer: Peer| medians.iter().find(|(p, _)| *p == peer).map(|(_, ns)| *ns);
        let is_arena = |peer: Peer| matches!(peer, Peer::Arena | Peer::ArenaOwned);
        let best = medians.iter().filter(|(p, _)| !is_arena(*p)).map(|(_, ns)| *ns).reduce(f64::min);
        for arena in [of(Peer::Arena), of(Peer::ArenaOwned)] {
            match (arena, best) {
                (Some(arena), Some(best)) => print!(" {:.2} |", arena / best),
                _ => print!(" – |"),
            }
        }
        println!();
    }
}
