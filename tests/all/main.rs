//! The integration tests that need no process of their own, in one binary so
//! that they link once. Tests that read RSS or page faults, install a global
//! allocator, set `ARENA_DEBUG`, lower a resource limit, watch thread exits
//! or assert process-wide counters keep a binary each (`tests/*.rs`).
//!
//! Every module is one capability; run one with its name as the filter, for
//! example `cargo test --test all nesting::`.

mod api;
mod arrays;
mod bad_input;
mod collections;
mod kernels;
mod large_blocks;
mod nesting;
mod panic_safety;
mod steady_state;
