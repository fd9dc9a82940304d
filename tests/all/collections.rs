//! `&Scope` as an `allocator_api2` allocator under long random operation
//! sequences, checked against the std collections as a model.

use allocator_api2::vec::Vec as ApiVec;
use arena::Scope;
use hashbrown::{DefaultHashBuilder, HashMap};

/// A small deterministic generator (xorshift64*), so that failures replay.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Applies one random operation to a pair (arena vector, model vector).
fn vec_op(rng: &mut Rng, v: &mut ApiVec<u64, &Scope<'_>>, model: &mut Vec<u64>) {
    match rng.below(10) {
        0..=3 => {
            let x = rng.next();
            v.push(x);
            model.push(x);
        }
        4 => assert_eq!(v.pop(), model.pop()),
        5 if !model.is_empty() => {
            let i = rng.below(model.len() as u64) as usize;
            assert_eq!(v.remove(i), model.remove(i));
        }
        6 => {
            let i = rng.below(model.len() as u64 + 1) as usize;
            let x = rng.next();
            v.insert(i, x);
            model.insert(i, x);
        }
        7 => {
            let n = rng.below(64) as usize;
            let items: Vec<u64> = (0..n).map(|_| rng.next()).collect();
            v.extend_from_slice(&items);
            model.extend_from_slice(&items);
        }
        8 => {
            let keep = rng.below(model.len() as u64 + 1) as usize;
            v.truncate(keep);
            model.truncate(keep);
            if rng.below(2) == 0 {
                v.shrink_to_fit();
            }
        }
        _ => {
            let extra = rng.below(512) as usize;
            v.reserve(extra);
            assert!(v.capacity() >= v.len() + extra);
        }
    }
}

#[test]
fn interleaved_vectors_match_the_model() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    arena::scope(|s| {
        // Several vectors growing in turn: each growth is sometimes in place
        // (the vector is the last allocation) and sometimes a move.
        let mut vecs: Vec<ApiVec<u64, &Scope<'_>>> = (0..4).map(|_| ApiVec::new_in(s)).collect();
        let mut models: Vec<Vec<u64>> = vec![Vec::new(); 4];
        for round in 0..300_000 {
            let k = rng.below(4) as usize;
            vec_op(&mut rng, &mut vecs[k], &mut models[k]);
            if round % 10_000 == 0 {
                for (v, m) in vecs.iter().zip(&models) {
                    assert_eq!(v.as_slice(), m.as_slice(), "diverged at round {round}");
                }
            }
        }
        for (v, m) in vecs.iter().zip(&models) {
            assert_eq!(v.as_slice(), m.as_slice());
        }
    });
}

#[test]
fn vectors_across_nested_scopes_match_the_model() {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    arena::scope(|outer| {
        let mut long_lived = ApiVec::new_in(outer);
        let mut long_model = Vec::new();
        for _ in 0..200 {
            outer.scope(|inner| {
                // The outer vector grows while the inner scope is open (side
                // blocks); the inner one lives and dies with the inner scope.
                let mut short_lived = ApiVec::new_in(inner);
                let mut short_model = Vec::new();
                for _ in 0..1000 {
                    if rng.below(2) == 0 {
                        vec_op(&mut rng, &mut long_lived, &mut long_model);
                    } else {
                        vec_op(&mut rng, &mut short_lived, &mut short_model);
                    }
                }
                assert_eq!(short_lived.as_slice(), short_model.as_slice());
            });
            assert_eq!(long_lived.as_slice(), long_model.as_slice());
        }
    });
}

#[test]
fn hash_map_matches_the_model() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    arena::scope(|s| {
        let mut map: HashMap<u64, u64, DefaultHashBuilder, &Scope<'_>> =
            HashMap::with_hasher_in(DefaultHashBuilder::default(), s);
        let mut model = std::collections::HashMap::new();
        for round in 0..300_000 {
            let key = rng.below(5000);
            match rng.below(5) {
                0 | 1 => {
                    let value = rng.next();
                    assert_eq!(map.insert(key, value), model.insert(key, value));
                }
                2 => assert_eq!(map.remove(&key), model.remove(&key)),
                3 => assert_eq!(map.get(&key), model.get(&key)),
                _ => {
                    if rng.below(1000) == 0 {
                        map.shrink_to_fit();
                    }
                    assert_eq!(map.len(), model.len(), "round {round}");
                }
            }
        }
        assert_eq!(map.len(), model.len());
        for (k, v) in &model {
            assert_eq!(map.get(k), Some(v));
        }
    });
}
