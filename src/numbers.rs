//! Maps keyed by numbers the server hands out (a db index, a client id). Nobody chooses
//! them, so the keyed SipHash that the maps keyed by names (lock keys, owners, request ids)
//! keep against chosen collisions buys nothing here; it was a quarter of the hashing of an
//! uncontended acquire + release (two look-ups by db for every one by key).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by a db index or a client id.
pub type NumberMap<K, V> = HashMap<K, V, BuildHasherDefault<NumberHasher>>;

/// Multiplies the number by 2^64 / φ (Fibonacci hashing): the high bits, which the table
/// reads first, depend on every bit of a small number.
#[derive(Default)]
pub struct NumberHasher(u64);

const PHI: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for NumberHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    /// Any other key type: each byte mixed in the same way (not used on the paths above).
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(PHI);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(PHI);
    }

    fn write_i32(&mut self, n: i32) {
        self.write_u64(u64::from(n as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn small_numbers_differ_in_their_high_bits() {
        let build = BuildHasherDefault::<NumberHasher>::default();
        let tops: HashSet<u64> = (0..16i32).map(|db| build.hash_one(db) >> 57).collect();
        assert!(tops.len() >= 12, "{tops:?}");
        let mut map: NumberMap<u64, u64> = NumberMap::default();
        for id in 0..1000u64 {
            map.insert(id, id * 2);
        }
        assert!((0..1000u64).all(|id| map.get(&id) == Some(&(id * 2))));
    }
}
