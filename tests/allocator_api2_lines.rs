//! `&Scope` as the allocator of the allocator-api2 0.3 and 0.4 lines (the
//! features `allocator-api2-03` and `allocator-api2-04`), for crates that
//! moved past 0.2. Run by CI with both features on.
#![cfg(all(feature = "allocator-api2-03", feature = "allocator-api2-04"))]

macro_rules! vec_in_a_scope_on {
    ($name:ident, $api:ident) => {
        #[test]
        fn $name() {
            arena::scope(|s| {
                let before = arena::stats().bytes_in_use;
                let mut v = $api::vec::Vec::new_in(s);
                v.extend(0..10_000_u32);
                v.shrink_to(5_000);
                assert_eq!(v.iter().map(|&x| u64::from(x)).sum::<u64>(), 49_995_000);
                assert!(arena::stats().bytes_in_use >= before + 40_000, "the vector lives in the scope");
                let boxed = $api::boxed::Box::new_in(7_u64, s);
                assert_eq!(*boxed, 7);
            });
            assert_eq!(arena::stats().bytes_in_use, 0);
        }
    };
}

vec_in_a_scope_on!(a_0_3_vector_lives_in_a_scope, allocator_api2_03);
vec_in_a_scope_on!(a_0_4_vector_lives_in_a_scope, allocator_api2_04);
