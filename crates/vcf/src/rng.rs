//! A seeded xorshift source for the tests' random cases (reproducible without a
//! dependency): a leaf module, so any module's tests may use it.

/// Each call a number below its argument.
pub fn rng(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed | 1;
    move |n| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    }
}
