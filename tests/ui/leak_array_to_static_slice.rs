//! Leaking the container itself (`Box::leak`) cannot produce a `'static` slice:
//! `&'static ScopedArray<'s, _>` requires `'s: 'static`.

fn main() {
    let escaped: &'static [f64] = arena::scope(|s| {
        let leaked: &'static arena::ScopedArray<'_, f64> = Box::leak(Box::new(s.filled(4, 1.0_f64)));
        leaked.as_slice()
    });
    println!("{}", escaped[0]);
}
