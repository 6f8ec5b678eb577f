//! Compile-fail and compile-pass cases for the attribute macros. Regenerate the `.stderr`
//! files with `TRYBUILD=overwrite` and review every one: the error must point at the offending
//! token and say what to do.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/pass/*.rs");
    cases.compile_fail("ui/fail/*.rs");
}
