//! Compile-fail tests: every route by which a scope's allocations (or the
//! scope handle itself) could outlive the scope or reach another thread must be
//! rejected by the compiler. `tests/ui/pass` is the positive control showing
//! that the harness compiles the same patterns when used legitimately.

#[test]
fn escape_routes_do_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}

/// The expected compiler errors name only the public API: a user who sends
/// a scope to another thread reads `ScopeBelongsToItsThread` (documented,
/// with what to do instead), not the arena's internals. Fails if a blessed
/// `.stderr` mentions a type or path that is not part of the public API.
#[test]
fn error_messages_name_no_internal_type() {
    const INTERNAL: [&str; 6] =
        ["NonNull<Arena>", "ArenaPtr", "UnsafeCell", "SideChunks", "arena::arena::", "ScopeStart"];
    let mut checked = 0;
    for entry in std::fs::read_dir("tests/ui").expect("tests/ui exists") {
        let path = entry.expect("readable directory entry").path();
        if path.extension().is_some_and(|ext| ext == "stderr") {
            let text = std::fs::read_to_string(&path).expect("readable .stderr");
            for name in INTERNAL {
                assert!(!text.contains(name), "{} names the internal `{name}`", path.display());
            }
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} .stderr files found");
    let thread_errors = std::fs::read_to_string("tests/ui/send_scope_to_thread_spawn.stderr").expect("blessed");
    assert!(thread_errors.contains("ScopeBelongsToItsThread"), "the thread error does not name the marker");
}
