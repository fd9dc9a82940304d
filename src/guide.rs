//! Patterns: how numeric code is written with scopes. Every example here
//! runs as a test.
//!
//! # Helper functions
//!
//! A helper that allocates takes any borrow of the scope, `&Scope<'s>`, and
//! returns containers that carry `'s`: they live until the scope exits,
//! however short the borrow was.
//!
//! ```
//! use arena::{Scope, ScopedArray, ScopedVec};
//!
//! fn ramp<'s>(s: &Scope<'s>, n: usize) -> ScopedArray<'s, f64> {
//!     s.from_fn(n, |i| i as f64)
//! }
//!
//! fn positive<'s>(s: &Scope<'s>, x: &[f64]) -> ScopedVec<'s, f64> {
//!     let mut v = s.vec();
//!     v.extend(x.iter().copied().filter(|&v| v > 0.0));
//!     v
//! }
//!
//! arena::scope(|s| {
//!     let x = ramp(s, 5);
//!     assert_eq!(positive(s, &x).len(), 4);
//! });
//! ```
//!
//! Code that should also run without a scope is written over
//! [`Allocator`](allocator_api2::alloc::Allocator) instead, as the
//! [`kernels`](crate::kernels) are: the caller passes `&Scope`,
//! `&bumpalo::Bump` or `Global`, and converts a result in a scope to a
//! [`ScopedArray`](crate::ScopedArray) with `.into()` (no copy).
//!
//! ```
//! use allocator_api2::alloc::{Allocator, Global};
//! use allocator_api2::vec::Vec;
//! use arena::{ScopedArray, kernels};
//!
//! fn softmax<A: Allocator + Copy>(x: &[f64], alloc: A) -> Vec<f64, A> {
//!     let top = kernels::max(x).unwrap_or(0.0);
//!     let e = kernels::map_in(x, |v| (v - top).exp(), alloc);
//!     kernels::scale_in(&e, 1.0 / kernels::sum(&e), alloc)
//! }
//!
//! let on_heap = softmax(&[1.0, 2.0, 3.0], Global);
//! arena::scope(|s| {
//!     let p: ScopedArray<f64> = softmax(&[1.0, 2.0, 3.0], s).into();
//!     assert_eq!(p[..], on_heap[..]);
//! });
//! ```
//!
//! # Time-stepping: state outside, temporaries inside
//!
//! The state that survives a step lives outside the step's scope (a plain
//! `Vec`, or an array of an outer scope); each step opens a scope for its
//! temporaries and copies the result back. In steady state a step makes no
//! system call: its scope reuses the same slab memory every time.
//!
//! ```
//! let mut u = vec![0.0_f64; 256];
//! u[128] = 1.0;
//! let before = arena::stats().system_allocations;
//! for _step in 0..100 {
//!     arena::scope(|s| {
//!         let next = s.from_fn(u.len(), |i| {
//!             let left = u[i.saturating_sub(1)];
//!             let right = u[(i + 1).min(u.len() - 1)];
//!             u[i] + 0.25 * (left - 2.0 * u[i] + right)
//!         });
//!         u.copy_from_slice(&next);
//!     });
//! }
//! assert!((u.iter().sum::<f64>() - 1.0).abs() < 1e-12); // diffusion keeps the mass
//! assert!(arena::stats().system_allocations - before <= 1); // the first step's slab at most
//! ```
//!
//! # A library that returns its result in the caller's scope
//!
//! The result is allocated from the caller's scope; the library's own
//! temporaries go to a child scope it opens, so they are gone when it
//! returns. An allocation from the outer handle while the child is open is
//! served from the outer scope's side blocks and survives the child.
//!
//! ```
//! use arena::{Scope, ScopedArray};
//!
//! /// Centred moving average of width 3; the prefix sums are a temporary.
//! fn smooth<'s>(s: &Scope<'s>, x: &[f64]) -> ScopedArray<'s, f64> {
//!     s.scope(|tmp| {
//!         let mut prefix = tmp.vec_with_capacity(x.len() + 1);
//!         prefix.push(0.0);
//!         for &v in x {
//!             prefix.push(prefix[prefix.len() - 1] + v);
//!         }
//!         s.from_fn(x.len(), |i| {
//!             let (lo, hi) = (i.saturating_sub(1), (i + 2).min(x.len()));
//!             (prefix[hi] - prefix[lo]) / (hi - lo) as f64
//!         })
//!     })
//! }
//!
//! arena::scope(|s| {
//!     let y = smooth(s, &[3.0, 0.0, 3.0, 0.0]);
//!     assert_eq!(y, [1.5, 2.0, 1.0, 1.5]);
//! });
//! ```
//!
//! # Rayon tasks
//!
//! A `Scope` belongs to its thread. Open a scope inside each task: every
//! worker has its own arena, so this is as cheap as on the main thread.
//! Finished arrays may cross threads when their elements may.
//!
//! ```
//! use rayon::prelude::*;
//! let norms: Vec<f64> = (0..8_u32)
//!     .into_par_iter()
//!     .map(|seed| {
//!         arena::scope(|s| {
//!             let x = s.from_fn(1000, |i| f64::from((seed + i as u32) % 7));
//!             arena::kernels::norm2(&x)
//!         })
//!     })
//!     .collect();
//! assert_eq!(norms.len(), 8);
//! ```
//!
//! Settings are per thread: [`configure`](crate::configure) on the main
//! thread does not reach rayon's workers. Set what every new thread's arena
//! starts with, and cap all arenas together, before the pool starts:
//!
//! ```
//! let workers = arena::Config { limit_bytes: 256 << 20, ..arena::Config::DEFAULT };
//! arena::process::set_default_config(workers); // each new thread's arena starts with it
//! arena::process::set_limit(4 << 30); // all arenas of the process together
//! # arena::process::set_default_config(arena::Config::DEFAULT);
//! # arena::process::set_limit(usize::MAX);
//! ```
//!
//! # Collections: hashbrown and allocator_api2
//!
//! `&Scope` is an allocator-api2 0.2 allocator (0.3 and 0.4 with the
//! `allocator-api2-03` / `allocator-api2-04` features), so the collections
//! of crates that accept one live in the scope.
//!
//! ```
//! use hashbrown::{DefaultHashBuilder, HashMap};
//! arena::scope(|s| {
//!     let mut counts = HashMap::with_hasher_in(DefaultHashBuilder::default(), s);
//!     for word in "a rose is a rose".split(' ') {
//!         *counts.entry(word).or_insert(0_u32) += 1;
//!     }
//!     let mut stack = allocator_api2::vec::Vec::new_in(s);
//!     stack.push(counts["rose"]);
//!     assert_eq!(stack[0], 2);
//! });
//! ```
//!
//! # 2-D arrays with ndarray
//!
//! With the `ndarray` feature, [`kernels::ndarray`](crate::kernels) makes a
//! 2-D or N-D temporary in one line (`zeros`, `zeros_like`) and views any
//! scoped array with a shape (`view`, `view_mut`), without copying.
//!
//! ```
//! # #[cfg(feature = "ndarray")]
//! # {
//! use arena::kernels::ndarray::{view, zeros};
//! arena::scope(|s| {
//!     let mut laplacian = zeros::<f64, _>(s, (64, 64));
//!     let field = s.from_fn(64 * 64, |i| (i % 64) as f64);
//!     let f = view(&field, (64, 64)).unwrap();
//!     for i in 1..63 {
//!         for j in 1..63 {
//!             laplacian[[i, j]] = f[[i - 1, j]] + f[[i + 1, j]] + f[[i, j - 1]] + f[[i, j + 1]] - 4.0 * f[[i, j]];
//!         }
//!     }
//!     assert_eq!(laplacian.sum(), 0.0); // a linear field has no curvature
//! });
//! # }
//! ```
//!
//! # Early release and what it costs
//!
//! An array of [`Config::large_threshold_bytes`](crate::Config) (1 MiB) or
//! more has a large block of its own. Dropping the array (or
//! [`Scope::release`](crate::Scope::release)) returns the block at once,
//! before the scope exits: the next large request of its size, or of down to
//! half its size, reuses it without a system call or a page fault, and a
//! request too large for any released block first gives the smaller ones
//! back to the OS. So temporaries released one after another peak at about
//! the largest of them. Up to
//! [`Config::large_retain_bytes`](crate::Config) of released blocks stay
//! resident for reuse; beyond that they go back to the OS. Smaller arrays
//! live in slabs and are released with their scope.
//!
//! ```
//! arena::scope(|s| {
//!     for _ in 0..3 {
//!         let step = s.zeroed::<f64>(1 << 20); // 8 MiB
//!         assert!(step.is_large_block());
//!         s.release(step); // back to the cache now, not at scope exit
//!     }
//!     let stats = arena::stats();
//!     assert_eq!(stats.large_live_bytes, 0);
//!     assert!(stats.large_cache_hits >= 2); // steps 2 and 3 reused step 1's block
//! });
//! ```
//!
//! # What costs a system call
//!
//! | operation | cost |
//! |---|---|
//! | opening and closing a scope | a few loads and stores, never a call |
//! | a small allocation in the innermost scope | a pointer bump; a new slab only when the retained ones are full |
//! | the same loop body, the next time | nothing new: the slabs are kept ([`Config::retain_bytes`](crate::Config)) |
//! | growing a [`ScopedVec`](crate::ScopedVec) that is the newest allocation | in place |
//! | growing any other `ScopedVec` | a move; the old block waits for the scope's exit |
//! | an outer scope's allocation while a child is open | a side block of the outer scope (a system allocation when its side blocks are full) |
//! | a large request (≥ 1 MiB) | one `mmap` the first time, then the cache |
//! | a thread's first scope | the arena is made, from the process-wide pool first |
//!
//! [`stats`](crate::stats) counts each of these (`system_allocations`,
//! `mmaps`, `large_cache_hits`, ...), so a test can check that a loop's
//! steady state makes none.
//!
//! # Common compile errors
//!
//! The lifetimes that keep scoped memory from escaping show up in compiler
//! errors whose suggestions do not always help. The ones newcomers meet
//! first, each checked as a compile-fail case in `tests/ui/`:
//!
//! **Returning an array from the closure**: `error: lifetime may not live
//! long enough` (`returning this value requires that '1 must outlive '2`;
//! rustc may suggest `move`, which changes nothing). The array is released
//! when the scope exits, so it cannot be the scope's result. Return what you
//! computed from it, or copy it out:
//!
//! ```
//! let kept: Vec<f64> = arena::scope(|s| {
//!     let a = s.from_fn(4, |i| i as f64 * 0.5);
//!     a.to_vec() // or `out.copy_from_slice(&a)` into a buffer from outside
//! });
//! assert_eq!(kept, [0.0, 0.5, 1.0, 1.5]);
//! ```
//!
//! **A helper without lifetimes**: `error[E0106]: missing lifetime
//! specifier` on `fn ramp(s: &Scope, n: usize) -> ScopedArray<f64>`. rustc
//! suggests `fn ramp<'a>(s: &'a Scope<'a>, ...) -> ScopedArray<'a, f64>`,
//! which compiles only while every caller passes the closure's own handle: a
//! helper that passes its own borrow on then fails with `error[E0621]:
//! explicit lifetime required`, because `Scope` is invariant in its lifetime
//! and a borrow cannot be stretched to it. Name the two lifetimes apart:
//!
//! ```
//! use arena::{Scope, ScopedArray};
//!
//! fn ramp<'s>(s: &Scope<'s>, n: usize) -> ScopedArray<'s, f64> {
//!     s.from_fn(n, |i| i as f64)
//! }
//!
//! fn doubled_ramp<'s>(s: &Scope<'s>, n: usize) -> ScopedArray<'s, f64> {
//!     let x = ramp(s, n); // a helper calling a helper: fine
//!     s.from_fn(n, |i| 2.0 * x[i])
//! }
//!
//! arena::scope(|s| assert_eq!(doubled_ramp(s, 4)[3], 6.0));
//! ```
//!
//! **A helper that gives its input the scope's lifetime**: `error[E0521]:
//! borrowed data escapes outside of function` (`argument requires that '1
//! must outlive 'static`) where the helper is called inside a scope, or
//! `error[E0597]: ... does not live long enough` for a local. A bumpalo
//! helper `fn batch<'b>(bump: &'b Bump, input: &'b [String])` shares one
//! lifetime between the arena and its input; ported as
//! `fn batch<'s>(s: &Scope<'s>, input: &'s [String])` it asks the input to
//! live as long as the scope's lifetime, which [`scope`](crate::scope)
//! chooses (any lifetime at all, as far as the closure knows), so nothing
//! from outside the scope can be borrowed for it. Naming the borrow of the
//! handle (`s: &'a Scope<'s>`) changes nothing:
//!
//! ```compile_fail,E0521
//! use arena::{Scope, ScopedVec};
//!
//! fn batch<'s>(s: &Scope<'s>, input: &'s [String]) -> ScopedVec<'s, &'s str> {
//!     let mut words = s.vec();
//!     words.extend(input.iter().map(String::as_str));
//!     words
//! }
//!
//! fn total_len(input: &[String]) -> usize {
//!     arena::scope(|s| batch(s, input).iter().map(|word| word.len()).sum())
//! }
//! ```
//!
//! Give the input a lifetime of its own; the result may borrow both:
//!
//! ```
//! use arena::{Scope, ScopedVec};
//!
//! fn batch<'s, 'i>(s: &Scope<'s>, input: &'i [String]) -> ScopedVec<'s, &'i str> {
//!     let mut words = s.vec();
//!     words.extend(input.iter().map(String::as_str));
//!     words
//! }
//!
//! fn total_len(input: &[String]) -> usize {
//!     arena::scope(|s| batch(s, input).iter().map(|word| word.len()).sum())
//! }
//!
//! assert_eq!(total_len(&[String::from("ab"), String::from("c")]), 3);
//! ```
//!
//! (Or copy the input into the scope, `s.copy_str(word)`, when the result
//! should hold `&'s str`.)
//!
//! **`collect()` into a `ScopedArray`**: `error[E0277]: a value of type
//! ScopedArray<'_, u64> cannot be built from an iterator`. `collect` has no
//! scope to allocate from; [`collect_in`](crate::CollectIn::collect_in)
//! takes one:
//!
//! ```
//! use arena::{CollectIn, ScopedArray};
//!
//! arena::scope(|s| {
//!     let squares: ScopedArray<u64> = (0..4_u64).map(|i| i * i).collect_in(s);
//!     assert_eq!(squares[3], 9);
//! });
//! ```
//!
//! **A scope in a rayon task or a thread**: `error[E0277]: *const
//! ScopeBelongsToItsThread cannot be shared between threads safely`. A scope
//! is its thread's; the task runs on a worker. Open a scope inside the task:
//! it reaches the worker's own arena.
//!
//! ```
//! use rayon::prelude::*;
//!
//! let sums: Vec<f64> = (0..4_usize)
//!     .into_par_iter()
//!     .map(|i| arena::scope(|s| s.filled(8, i as f64).iter().sum()))
//!     .collect();
//! assert_eq!(sums, [0.0, 8.0, 16.0, 24.0]);
//! ```
#![forbid(unsafe_code)]
