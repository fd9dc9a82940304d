//! Glue to other crates' traits, each behind its feature: `Scope` as the
//! allocator of crates on the newer allocator-api2 lines, and as faer's
//! scratch space (`dyn_stack::MemStack`).

#[cfg(any(feature = "allocator-api2-03", feature = "allocator-api2-04"))]
mod allocator_api2_lines;
#[cfg(feature = "dyn-stack")]
mod dyn_stack;
