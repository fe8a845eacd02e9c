//! Keys and self-verifying values.
//!
//! Value keys live in the default keyspace as `v` + 8 decimal digits; counter
//! keys live in the `counters` keyspace (which has the `U64AddOperator`) as
//! `c` + 8 digits, so both sort in index order.
//!
//! The value of a put of generation `g` to value key `i` is a pure function
//! of `(i, g)` and the configured size range: 4 bytes `i` LE, 4 bytes `g` LE,
//! then filler bytes drawn from a generator seeded with `(i, g)`; its length
//! is also derived from `(i, g)`. A value read back is checked by decoding
//! `(i, g)` from its head and regenerating it byte for byte, so a value that
//! belongs to another key, a torn value or a flipped bit are all caught.

/// Name of the keyspace that holds the counter keys.
pub const COUNTER_KEYSPACE: &str = "counters";

/// The smallest value size accepted (the `(key, generation)` header).
pub const MIN_VALUE_SIZE: usize = 8;

/// The key of value key `i`.
pub fn value_key(i: u32) -> Vec<u8> {
    format!("v{i:08}").into_bytes()
}

/// The key of counter key `i`.
pub fn counter_key(i: u32) -> Vec<u8> {
    format!("c{i:08}").into_bytes()
}

fn parse_key(prefix: u8, k: &[u8]) -> Option<u32> {
    if k.len() != 9 || k[0] != prefix || !k[1..].iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(&k[1..]).ok()?.parse().ok()
}

/// The index of a value key, `None` if `k` is not one.
pub fn parse_value_key(k: &[u8]) -> Option<u32> {
    parse_key(b'v', k)
}

/// The index of a counter key, `None` if `k` is not one.
pub fn parse_counter_key(k: &[u8]) -> Option<u32> {
    parse_key(b'c', k)
}

/// SplitMix64's finaliser: a cheap, well-mixed hash of a u64.
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value written by a put of generation `generation` to value key `i`.
pub fn value_for(i: u32, generation: u32, min: usize, max: usize) -> Vec<u8> {
    let min = min.max(MIN_VALUE_SIZE);
    let max = max.max(min);
    let h = mix64((u64::from(i) << 32) | u64::from(generation));
    let span = (max - min + 1) as u64;
    let len = min + (h % span) as usize;
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&i.to_le_bytes());
    v.extend_from_slice(&generation.to_le_bytes());
    let mut s = h;
    while v.len() < len {
        s = mix64(s);
        let take = (len - v.len()).min(8);
        v.extend_from_slice(&s.to_le_bytes()[..take]);
    }
    v
}

/// Decodes and checks a stored value: `Ok(generation)` when it is exactly
/// the value of some put to key `i`; `Err(reason)` otherwise.
pub fn check_value(i: u32, v: &[u8], min: usize, max: usize) -> Result<u32, String> {
    if v.len() < MIN_VALUE_SIZE {
        return Err(format!(
            "value of {} bytes is shorter than its header",
            v.len()
        ));
    }
    let ki = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
    let g = u32::from_le_bytes([v[4], v[5], v[6], v[7]]);
    if ki != i {
        return Err(format!(
            "value belongs to key {ki} (generation {g}), not to key {i}"
        ));
    }
    let want = value_for(i, g, min, max);
    if want != v {
        let at = want.iter().zip(v).position(|(a, b)| a != b);
        return Err(format!(
            "value of generation {g} is damaged: {} bytes (expected {}), first difference at {:?}",
            v.len(),
            want.len(),
            at
        ));
    }
    Ok(g)
}

/// Decodes a counter value (8 bytes little-endian).
pub fn decode_counter(v: &[u8]) -> Result<u64, String> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| format!("counter value of {} bytes, expected 8", v.len()))?;
    Ok(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_detect_damage() {
        for g in 1..200 {
            let v = value_for(7, g, 8, 300);
            assert!((8..=300).contains(&v.len()));
            assert_eq!(check_value(7, &v, 8, 300), Ok(g));
            assert!(check_value(8, &v, 8, 300).is_err());
            let mut bad = v.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            if bad.len() > 8 {
                assert!(check_value(7, &bad, 8, 300).is_err());
            }
        }
        assert_eq!(parse_value_key(&value_key(42)), Some(42));
        assert_eq!(parse_counter_key(&counter_key(42)), Some(42));
        assert_eq!(parse_value_key(b"v0000004"), None);
        assert_eq!(parse_value_key(&counter_key(1)), None);
    }
}
