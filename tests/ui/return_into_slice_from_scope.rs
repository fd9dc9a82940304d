//! `ScopedArray::into_slice` yields `&'s mut [T]`, which still cannot leave the scope.

fn main() {
    let escaped: &mut [u8] = arena::scope(|s| s.zeroed::<u8>(4).into_slice());
    escaped[0] = 1;
}
