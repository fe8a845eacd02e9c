//! Codes bit-packed to the smallest width that holds a block's largest
//! code.
//!
//! Code `i` of a packed vector of width `w` is bits `i·w .. (i+1)·w` of a
//! little-endian bit stream: bit `k` of the stream is bit `k % 8` of byte
//! `k / 8`. The stream takes `ceil(n·w / 8)` bytes; the unused high bits of
//! the last byte are zero. Eight codes always take exactly `w` bytes, which
//! is what lets the vectorised filters (`select`) use one shuffle pattern
//! per width.

/// The widest packing: codes are below 2^[`MAX_WIDTH`].
pub const MAX_WIDTH: u8 = 32;

/// Bits needed for codes up to `max_code` (0 when every code is 0).
pub fn width_for(max_code: u32) -> u8 {
    (32 - max_code.leading_zeros()) as u8
}

/// Bytes a vector of `n` codes of `width` bits takes.
pub fn packed_len(n: usize, width: u8) -> usize {
    (n * usize::from(width)).div_ceil(8)
}

/// Appends `codes` packed to `width` bits; every code must fit.
pub fn pack(codes: &[u32], width: u8, dst: &mut Vec<u8>) {
    debug_assert!(width <= MAX_WIDTH);
    let start = dst.len();
    dst.resize(start + packed_len(codes.len(), width), 0);
    if width == 0 {
        return;
    }
    let out = &mut dst[start..];
    let w = u64::from(width);
    let mut acc: u64 = 0;
    let mut bits: u64 = 0;
    let mut pos = 0usize;
    for &c in codes {
        debug_assert!(u64::from(c) >> w == 0, "code {c} wider than {width} bits");
        acc |= u64::from(c) << bits;
        bits += w;
        while bits >= 8 {
            out[pos] = acc as u8;
            pos += 1;
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out[pos] = acc as u8;
    }
}

/// Code `i` of a vector packed to `width` bits. `packed` must hold at
/// least `packed_len(i + 1, width)` bytes.
#[inline]
pub fn get(packed: &[u8], width: u8, i: usize) -> u32 {
    if width == 0 {
        return 0;
    }
    let bit = i * usize::from(width);
    let byte = bit / 8;
    let shift = bit % 8;
    // Up to 8 bytes from `byte`, fewer at the end of the stream.
    let word = if byte + 8 <= packed.len() {
        u64::from_le_bytes(packed[byte..byte + 8].try_into().unwrap_or([0; 8]))
    } else {
        let mut buf = [0u8; 8];
        let tail = &packed[byte.min(packed.len())..];
        buf[..tail.len()].copy_from_slice(tail);
        u64::from_le_bytes(buf)
    };
    ((word >> shift) & mask(width)) as u32
}

/// Appends codes `0..n` of a packed vector to `out`.
pub fn unpack(packed: &[u8], width: u8, n: usize, out: &mut Vec<u32>) {
    out.reserve(n);
    for_each(packed, width, n, |_, c| out.push(c));
}

/// Calls `f(i, code)` for codes `0..n` of a packed vector, in order.
/// `packed` must hold at least `packed_len(n, width)` bytes.
#[inline]
pub fn for_each(packed: &[u8], width: u8, n: usize, mut f: impl FnMut(usize, u32)) {
    if width == 0 {
        (0..n).for_each(|i| f(i, 0));
        return;
    }
    let w = usize::from(width);
    let m = mask(width);
    // Codes whose 8-byte window lies inside the vector: one unaligned
    // load, a shift and a mask each.
    let fast = if packed.len() >= 8 {
        ((packed.len() - 8) * 8 / w + 1).min(n)
    } else {
        0
    };
    for i in 0..fast {
        let bit = i * w;
        let at = bit / 8;
        let word = u64::from_le_bytes(packed[at..at + 8].try_into().unwrap_or([0; 8]));
        f(i, ((word >> (bit % 8)) & m) as u32);
    }
    for i in fast..n {
        f(i, get(packed, width, i));
    }
}

/// The low `width` bits set.
#[inline]
pub fn mask(width: u8) -> u64 {
    (1u64 << width) - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn widths_are_the_bits_of_the_largest_code() {
        assert_eq!(width_for(0), 0);
        assert_eq!(width_for(1), 1);
        assert_eq!(width_for(255), 8);
        assert_eq!(width_for(256), 9);
        assert_eq!(width_for(u32::MAX), 32);
        assert_eq!(packed_len(8, 13), 13);
        assert_eq!(packed_len(3, 5), 2);
    }

    #[test]
    fn the_stream_is_little_endian_from_bit_zero() {
        let mut v = Vec::new();
        pack(&[1, 2, 3], 3, &mut v);
        // 001 010 011 from bit 0: 0b11_010_001 = 0xd1, then 0b0 (the 3's top bit)
        assert_eq!(v, [0b1101_0001, 0b0000_0000]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn packing_round_trips_at_every_width(width in 0u8..=32, raw in proptest::collection::vec(any::<u32>(), 0..100)) {
            let codes: Vec<u32> = raw.iter().map(|&c| (u64::from(c) & mask(width)) as u32).collect();
            let mut packed = Vec::new();
            pack(&codes, width, &mut packed);
            prop_assert_eq!(packed.len(), packed_len(codes.len(), width));
            let mut back = Vec::new();
            unpack(&packed, width, codes.len(), &mut back);
            prop_assert_eq!(&back, &codes);
            for (i, &c) in codes.iter().enumerate() {
                prop_assert_eq!(get(&packed, width, i), c);
            }
        }
    }
}
