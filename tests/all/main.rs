//! The integration tests that need no process of their own, in one binary so
//! that they link once. Tests that read RSS or page faults, install a global
//! allocator, set `ARENA_DEBUG`, lower a resource limit, watch thread exits
//! or assert process-wide counters keep a binary each (`tests/*.rs`).
//!
//! Every module is one capability; run one with its name as the filter, for
//! example `cargo test --test all nesting::`. The modules of the optional
//! features build with them: `cargo test --features ndarray --test all
//! kernels_ndarray::`.

mod adversarial_scopes;
mod alloc_failure;
#[cfg(all(feature = "allocator-api2-03", feature = "allocator-api2-04"))]
mod allocator_api2_lines;
mod api;
mod arrays;
mod bad_input;
mod collections;
#[path = "../common/mod.rs"]
mod common;
mod kernels;
mod kernels_matmul_exact;
#[cfg(feature = "ndarray")]
mod kernels_ndarray;
mod large_blocks;
#[cfg(feature = "dyn-stack")]
mod mem_stack;
mod nesting;
mod panic_safety;
mod scoped_vec;
mod steady_state;
