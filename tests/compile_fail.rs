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
