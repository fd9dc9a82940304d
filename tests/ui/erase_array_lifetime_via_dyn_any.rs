//! Type erasure cannot hide the scope's lifetime: a `ScopedArray` is not
//! `'static`, so it cannot become a `Box<dyn Any>`.

use std::any::Any;

fn main() {
    let escaped: Box<dyn Any> = arena::scope(|s| {
        let erased: Box<dyn Any> = Box::new(s.zeroed::<u8>(4));
        erased
    });
    println!("{}", escaped.is::<u8>());
}
