//! Filters on packed codes: from a vector of bit-packed codes and a set of
//! codes (a range, or a list), the selection bitmap of the positions whose
//! code is in the set. Unpacking is fused with the comparison: codes are
//! never written out.
//!
//! Three kernels compute the same bitmap:
//! - **AVX-512** (F, BW and VBMI): 16 codes per step. Sixteen codes of
//!   width `w` span `2w` bytes; one 64-byte load, one byte permutation
//!   (the same for every step of a width), a per-lane shift and a mask
//!   give the codes in 32-bit lanes; an unsigned compare of `code - lo`
//!   with `hi - lo` gives the 16 bits of the bitmap directly.
//! - **AVX2**: 8 codes per step (they span `w` bytes), from two 16-byte
//!   loads and an in-lane byte shuffle, then the same shift, mask and
//!   compare; `movemask` gives 8 bits.
//! - **Scalar**: any width, and the ends of vectors where a vector load
//!   would read past the data.
//!
//! The vector kernels handle widths up to 25 bits (a code and its shift
//! within a byte fit one 32-bit lane); a dictionary never has more than
//! 2^24 values. The best kernel the processor has is chosen at run time
//! ([`Kernel::best`]); tests run every available kernel against the scalar
//! one.

use super::bitpack;

/// The widest packing the vector kernels take.
pub const MAX_VECTOR_WIDTH: u8 = 25;

/// Which code path computes a selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Portable code.
    Scalar,
    /// x86-64 AVX2.
    Avx2,
    /// x86-64 AVX-512 F, BW and VBMI.
    Avx512,
}

impl Kernel {
    /// The fastest kernel this processor runs.
    pub fn best() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vbmi")
            {
                return Kernel::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
        }
        Kernel::Scalar
    }

    /// Every kernel this processor runs, the scalar one first.
    pub fn available() -> Vec<Kernel> {
        let best = Kernel::best();
        let mut v = vec![Kernel::Scalar];
        if matches!(best, Kernel::Avx2 | Kernel::Avx512) {
            v.push(Kernel::Avx2);
        }
        if best == Kernel::Avx512 {
            v.push(Kernel::Avx512);
        }
        v
    }

    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        }
    }
}

/// A set of codes of one dictionary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodeSet {
    /// No code.
    Empty,
    /// Codes `lo..=hi`.
    Range {
        /// The smallest code in the set.
        lo: u32,
        /// The largest code in the set.
        hi: u32,
    },
    /// The codes whose bit is set (bit `c % 64` of word `c / 64`).
    Bits(Vec<u64>),
}

impl CodeSet {
    /// `lo..hi` (half-open), `Empty` when it is.
    pub fn half_open(lo: u32, hi: u32) -> CodeSet {
        if lo < hi {
            CodeSet::Range { lo, hi: hi - 1 }
        } else {
            CodeSet::Empty
        }
    }

    /// The set of `codes` (any order, repeats allowed), as a range when
    /// they are consecutive.
    pub fn of(codes: &[u32]) -> CodeSet {
        let (Some(&lo), Some(&hi)) = (codes.iter().min(), codes.iter().max()) else {
            return CodeSet::Empty;
        };
        let mut bits = vec![0u64; (hi as usize / 64) + 1];
        for &c in codes {
            bits[c as usize / 64] |= 1 << (c % 64);
        }
        let count: u32 = bits.iter().map(|w| w.count_ones()).sum();
        if count == hi - lo + 1 {
            CodeSet::Range { lo, hi }
        } else {
            CodeSet::Bits(bits)
        }
    }

    /// True if `code` is in the set.
    #[inline]
    pub fn contains(&self, code: u32) -> bool {
        match self {
            CodeSet::Empty => false,
            CodeSet::Range { lo, hi } => code.wrapping_sub(*lo) <= hi - lo,
            CodeSet::Bits(bits) => bits
                .get(code as usize / 64)
                .is_some_and(|w| w >> (code % 64) & 1 == 1),
        }
    }

    /// True if some code in `min..=max` is in the set (a block whose codes
    /// lie in that range may hold a match).
    pub fn meets(&self, min: u32, max: u32) -> bool {
        match self {
            CodeSet::Empty => false,
            CodeSet::Range { lo, hi } => *lo <= max && min <= *hi,
            CodeSet::Bits(_) => (min..=max).any(|c| self.contains(c)),
        }
    }
}

/// Words of a bitmap of `n` positions.
pub fn bitmap_words(n: usize) -> usize {
    n.div_ceil(64)
}

/// Writes into `out` (resized to [`bitmap_words`]`(n)`) the bitmap of the
/// positions `i < n` whose code, in `packed` at `width` bits, is in `set`;
/// returns how many there are. Bits at positions `>= n` are zero.
pub fn select(packed: &[u8], width: u8, n: usize, set: &CodeSet, out: &mut Vec<u64>) -> usize {
    select_with(Kernel::best(), packed, width, n, set, out)
}

/// [`select`] with a chosen kernel (which the processor must support;
/// an unsupported one falls back to the scalar kernel).
pub fn select_with(
    kernel: Kernel,
    packed: &[u8],
    width: u8,
    n: usize,
    set: &CodeSet,
    out: &mut Vec<u64>,
) -> usize {
    out.clear();
    out.resize(bitmap_words(n), 0);
    assert!(
        packed.len() >= bitpack::packed_len(n, width),
        "packed codes cut short"
    );
    match set {
        CodeSet::Empty => {}
        CodeSet::Range { lo, hi } => {
            select_range(kernel, packed, width, n, *lo, *hi, out);
        }
        CodeSet::Bits(_) => {
            for (wi, word) in out.iter_mut().enumerate() {
                let mut reader = Reader::new(packed, width, wi * 64);
                let end = n.min(wi * 64 + 64) - wi * 64;
                let mut bits = 0u64;
                for j in 0..end {
                    bits |= u64::from(set.contains(reader.next())) << j;
                }
                *word = bits;
            }
        }
    }
    out.iter().map(|w| w.count_ones() as usize).sum()
}

fn select_range(
    kernel: Kernel,
    packed: &[u8],
    width: u8,
    n: usize,
    lo: u32,
    hi: u32,
    out: &mut [u64],
) {
    let span = hi.wrapping_sub(lo);
    if width == 0 {
        // Every code is 0.
        if lo == 0 {
            fill_ones(out, n);
        }
        return;
    }
    let mut done = 0; // words already computed by a vector kernel
    #[cfg(target_arch = "x86_64")]
    if width <= MAX_VECTOR_WIDTH {
        match kernel {
            // SAFETY: `Kernel::best` chose (or a test checked) a kernel the
            // processor supports; `select_with`'s callers pass only those
            // (`Kernel::available`).
            Kernel::Avx512 if Kernel::best() == Kernel::Avx512 => unsafe {
                done = x86::range_avx512(packed, width, n, lo, span, out);
            },
            Kernel::Avx2 if Kernel::best() != Kernel::Scalar => unsafe {
                done = x86::range_avx2(packed, width, n, lo, span, out);
            },
            _ => {}
        }
    }
    let _ = kernel;
    for (wi, word) in out.iter_mut().enumerate().skip(done) {
        let mut reader = Reader::new(packed, width, wi * 64);
        let end = n.min(wi * 64 + 64) - wi * 64;
        let mut bits = 0u64;
        for j in 0..end {
            bits |= u64::from(reader.next().wrapping_sub(lo) <= span) << j;
        }
        *word = bits;
    }
}

fn fill_ones(out: &mut [u64], n: usize) {
    for (wi, w) in out.iter_mut().enumerate() {
        let end = n.min(wi * 64 + 64) - wi * 64;
        *w = if end == 64 {
            u64::MAX
        } else {
            (1u64 << end) - 1
        };
    }
}

/// Reads consecutive codes from a position: the scalar kernel's inner
/// loop, without a bounds check per code beyond the byte fetch.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    acc: u64,
    bits: u32,
    width: u32,
}

impl<'a> Reader<'a> {
    fn new(packed: &'a [u8], width: u8, index: usize) -> Reader<'a> {
        let bit = index * usize::from(width);
        let mut r = Reader {
            bytes: packed,
            pos: bit / 8,
            acc: 0,
            bits: 0,
            width: u32::from(width),
        };
        if !bit.is_multiple_of(8) {
            r.fill();
            r.acc >>= bit % 8;
            r.bits -= (bit % 8) as u32;
        }
        r
    }

    #[inline]
    fn fill(&mut self) {
        // Whole bytes while they fit in the accumulator.
        while self.bits <= 56 {
            let b = self.bytes.get(self.pos).copied().unwrap_or(0);
            self.acc |= u64::from(b) << self.bits;
            self.pos += 1;
            self.bits += 8;
        }
    }

    #[inline]
    fn next(&mut self) -> u32 {
        if self.bits < self.width {
            self.fill();
        }
        let c = (self.acc & bitpack::mask(self.width as u8)) as u32;
        self.acc >>= self.width;
        self.bits -= self.width;
        c
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Computes whole bitmap words with AVX2 while every load stays inside
    /// `packed`; returns how many words it wrote.
    ///
    /// # Safety
    /// The processor must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn range_avx2(
        packed: &[u8],
        width: u8,
        n: usize,
        lo: u32,
        span: u32,
        out: &mut [u64],
    ) -> usize {
        let w = usize::from(width);
        // Lanes 0-3 come from a load at the group's first byte, lanes 4-7
        // from one `high` bytes further.
        let high = 4 * w / 8;
        let mut shuffle = [0u8; 32];
        let mut shifts = [0u32; 8];
        for j in 0..8 {
            let bit = j * w;
            let base = if j < 4 { 0 } else { high };
            let first = bit / 8 - base;
            for k in 0..4 {
                shuffle[(j / 4) * 16 + (j % 4) * 4 + k] = (first + k) as u8;
            }
            shifts[j] = (bit % 8) as u32;
        }
        // SAFETY: the arrays are 32 bytes; unaligned loads.
        let shuffle = unsafe { _mm256_loadu_si256(shuffle.as_ptr().cast()) };
        let shifts = unsafe { _mm256_loadu_si256(shifts.as_ptr().cast()) };
        let mask = _mm256_set1_epi32(((1u64 << width) - 1) as i32);
        let lo = _mm256_set1_epi32(lo as i32);
        let span = _mm256_set1_epi32(span as i32);
        let full_words = n / 64;
        let mut wi = 0;
        while wi < full_words {
            // The word's last group reads up to `high + 16` bytes from its start.
            let last_group = (wi * 8 + 7) * w;
            if last_group + high + 16 > packed.len() {
                break;
            }
            let mut word = 0u64;
            for g in 0..8 {
                let off = (wi * 8 + g) * w;
                // SAFETY: off + high + 16 <= packed.len() (checked above for
                // the word's last group, the largest offset).
                let v = unsafe {
                    let p = packed.as_ptr().add(off);
                    _mm256_loadu2_m128i(p.add(high).cast(), p.cast())
                };
                let codes = _mm256_and_si256(
                    _mm256_srlv_epi32(_mm256_shuffle_epi8(v, shuffle), shifts),
                    mask,
                );
                let rel = _mm256_sub_epi32(codes, lo);
                // rel <= span, unsigned: max(rel, span) == span.
                let hit = _mm256_cmpeq_epi32(_mm256_max_epu32(rel, span), span);
                let bits = _mm256_movemask_ps(_mm256_castsi256_ps(hit)) as u32 as u64;
                word |= bits << (8 * g);
            }
            out[wi] = word;
            wi += 1;
        }
        wi
    }

    /// Computes whole bitmap words with AVX-512 while every load stays
    /// inside `packed`; returns how many words it wrote.
    ///
    /// # Safety
    /// The processor must support AVX-512 F, BW and VBMI.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn range_avx512(
        packed: &[u8],
        width: u8,
        n: usize,
        lo: u32,
        span: u32,
        out: &mut [u64],
    ) -> usize {
        let w = usize::from(width);
        let mut index = [0u8; 64];
        let mut shifts = [0u32; 16];
        for j in 0..16 {
            let bit = j * w;
            for k in 0..4 {
                index[j * 4 + k] = (bit / 8 + k) as u8;
            }
            shifts[j] = (bit % 8) as u32;
        }
        // SAFETY: 64-byte arrays; unaligned loads.
        let index = unsafe { _mm512_loadu_si512(index.as_ptr().cast()) };
        let shifts = unsafe { _mm512_loadu_si512(shifts.as_ptr().cast()) };
        let mask = _mm512_set1_epi32(((1u64 << width) - 1) as i32);
        let lo = _mm512_set1_epi32(lo as i32);
        let span = _mm512_set1_epi32(span as i32);
        let full_words = n / 64;
        let mut wi = 0;
        while wi < full_words {
            let last_group = (wi * 4 + 3) * 2 * w;
            if last_group + 64 > packed.len() {
                break;
            }
            let mut word = 0u64;
            for g in 0..4 {
                let off = (wi * 4 + g) * 2 * w;
                // SAFETY: off + 64 <= packed.len() (checked for the largest
                // offset of the word above).
                let v = unsafe { _mm512_loadu_si512(packed.as_ptr().add(off).cast()) };
                let codes = _mm512_and_si512(
                    _mm512_srlv_epi32(_mm512_permutexvar_epi8(index, v), shifts),
                    mask,
                );
                let hit = _mm512_cmple_epu32_mask(_mm512_sub_epi32(codes, lo), span);
                word |= u64::from(hit) << (16 * g);
            }
            out[wi] = word;
            wi += 1;
        }
        wi
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(codes: &[u32], set: &CodeSet) -> Vec<u64> {
        let mut out = vec![0u64; bitmap_words(codes.len())];
        for (i, &c) in codes.iter().enumerate() {
            if set.contains(c) {
                out[i / 64] |= 1 << (i % 64);
            }
        }
        out
    }

    #[test]
    fn code_sets_collapse_consecutive_codes_to_ranges() {
        assert_eq!(CodeSet::of(&[5, 3, 4, 4]), CodeSet::Range { lo: 3, hi: 5 });
        assert_eq!(CodeSet::of(&[]), CodeSet::Empty);
        let gaps = CodeSet::of(&[1, 70]);
        assert!(gaps.contains(70) && gaps.contains(1) && !gaps.contains(2) && !gaps.contains(500));
        assert!(gaps.meets(60, 80) && !gaps.meets(2, 69));
        assert_eq!(CodeSet::half_open(4, 4), CodeSet::Empty);
    }

    #[test]
    fn every_kernel_agrees_at_every_width_and_length() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for width in 0..=32u8 {
            for n in [0usize, 1, 7, 63, 64, 65, 200, 1000, 4096] {
                let codes: Vec<u32> = (0..n)
                    .map(|_| (rand() & bitpack::mask(width)) as u32)
                    .collect();
                let mut packed = Vec::new();
                bitpack::pack(&codes, width, &mut packed);
                let top = bitpack::mask(width) as u32;
                let sets = [
                    CodeSet::Range { lo: 0, hi: top },
                    CodeSet::Range {
                        lo: top / 3,
                        hi: top / 2,
                    },
                    CodeSet::Range { lo: top, hi: top },
                    CodeSet::Range { lo: 0, hi: 0 },
                    CodeSet::Empty,
                    CodeSet::of(&[top / 5, top / 7, top]),
                ];
                for set in &sets {
                    let want = reference(&codes, set);
                    for kernel in Kernel::available() {
                        let mut out = Vec::new();
                        let count = select_with(kernel, &packed, width, n, set, &mut out);
                        assert_eq!(out, want, "{kernel:?} width {width} n {n} {set:?}");
                        let ones: u32 = want.iter().map(|w| w.count_ones()).sum();
                        assert_eq!(count, ones as usize);
                    }
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn selections_match_a_reference_on_random_codes(
            width in 1u8..=25,
            raw in proptest::collection::vec(any::<u32>(), 0..700),
            a in any::<u32>(),
            b in any::<u32>(),
        ) {
            let m = bitpack::mask(width) as u32;
            let codes: Vec<u32> = raw.iter().map(|c| c & m).collect();
            let (lo, hi) = ((a & m).min(b & m), (a & m).max(b & m));
            let mut packed = Vec::new();
            bitpack::pack(&codes, width, &mut packed);
            let set = CodeSet::Range { lo, hi };
            let want = reference(&codes, &set);
            for kernel in Kernel::available() {
                let mut out = Vec::new();
                select_with(kernel, &packed, width, codes.len(), &set, &mut out);
                prop_assert_eq!(&out, &want, "{:?}", kernel);
            }
        }
    }
}
