//! Little-endian fixed-width and LEB128 varint encodings used by every
//! on-disk format.
//!
//! Decoders take a cursor (`&mut &[u8]`) and return `None` when the input is
//! short or malformed; callers turn that into [`crate::Error::Corruption`] with
//! the file and offset they know.

/// Appends a varint-encoded `u64` (LEB128, at most 10 bytes).
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends a varint-encoded `u32`.
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Number of bytes `put_varint64` writes for `v`.
#[inline]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Reads a varint `u64` and advances the cursor.
#[inline]
pub fn get_varint64(src: &mut &[u8]) -> Option<u64> {
    let mut result: u64 = 0;
    for i in 0..10 {
        let b = *src.get(i)?;
        let part = u64::from(b & 0x7f);
        if i == 9 && b > 1 {
            return None; // more than 64 bits
        }
        result |= part << (7 * i);
        if b < 0x80 {
            *src = &src[i + 1..];
            return Some(result);
        }
    }
    None
}

/// Reads a varint that must fit in a `u32`.
#[inline]
pub fn get_varint32(src: &mut &[u8]) -> Option<u32> {
    get_varint64(src).and_then(|v| u32::try_from(v).ok())
}

/// Appends a `u32` as 4 little-endian bytes.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends a `u64` as 8 little-endian bytes.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Decodes 4 little-endian bytes at the start of `src`.
#[inline]
pub fn decode_fixed32(src: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(src.get(..4)?.try_into().ok()?))
}

/// Decodes 8 little-endian bytes at the start of `src`.
#[inline]
pub fn decode_fixed64(src: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(src.get(..8)?.try_into().ok()?))
}

/// Reads a fixed `u32` and advances the cursor.
#[inline]
pub fn get_fixed32(src: &mut &[u8]) -> Option<u32> {
    let v = decode_fixed32(src)?;
    *src = &src[4..];
    Some(v)
}

/// Reads a fixed `u64` and advances the cursor.
#[inline]
pub fn get_fixed64(src: &mut &[u8]) -> Option<u64> {
    let v = decode_fixed64(src)?;
    *src = &src[8..];
    Some(v)
}

/// Appends a varint length followed by the bytes.
#[inline]
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

/// Reads a varint length followed by that many bytes.
#[inline]
pub fn get_length_prefixed<'a>(src: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(get_varint64(src)?).ok()?;
    if src.len() < len {
        return None;
    }
    let (head, tail) = src.split_at(len);
    *src = tail;
    Some(head)
}

/// Asks the CPU to load the cache line holding `bytes[at]` (nothing when
/// `at` is past the end): for searches and gathers whose next loads are
/// known before the current one returns.
#[inline]
pub fn prefetch_at(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < bytes.len() {
        // SAFETY: a prefetch never faults, and the address is in `bytes`.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().add(at) as *const i8);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// CRC-32C (Castagnoli) of `data`, hardware-accelerated where available.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC-32C of `a` followed by `b`.
#[inline]
pub fn crc32c_two(a: &[u8], b: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(a), b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trips_edge_values() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16383,
            16384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v));
            let mut cur = &buf[..];
            assert_eq!(get_varint64(&mut cur), Some(v));
            assert!(cur.is_empty());
        }
    }

    #[test]
    fn truncated_or_overlong_varints_are_rejected() {
        let mut cur: &[u8] = &[0x80, 0x80];
        assert_eq!(get_varint64(&mut cur), None);
        let mut cur: &[u8] = &[0xff; 11];
        assert_eq!(get_varint64(&mut cur), None);
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        assert_eq!(get_varint32(&mut &buf[..]), None);
    }

    #[test]
    fn length_prefixed_rejects_short_input() {
        let mut buf = Vec::new();
        put_length_prefixed(&mut buf, b"hello");
        buf.truncate(4);
        assert_eq!(get_length_prefixed(&mut &buf[..]), None);
    }
}
