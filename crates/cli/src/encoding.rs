//! How keys and values are written on the command line and printed back.
//!
//! Input: a token starting with `0x` is hex (`0x` + an even number of hex
//! digits, either case; `0x` alone is the empty string). Any other token is
//! taken byte for byte.
//!
//! Output: a byte string is printed as-is when it is non-empty, valid UTF-8,
//! holds no control and no whitespace character (so it stays one token), and
//! does not itself start with `0x` (which would read back as hex). Everything
//! else — including the empty string, printed `0x` so it stays visible — is
//! printed as `0x` followed by lowercase hex.
//!
//! The two directions round-trip: `decode_token(&encode_bytes(b)) == b` for
//! every byte string `b`.

/// Decodes one token (see the module docs).
pub fn decode_token(token: &str) -> Result<Vec<u8>, String> {
    decode_token_bytes(token.as_bytes())
}

/// Decodes one token given as raw bytes (for input that need not be UTF-8,
/// such as `strata load`).
pub fn decode_token_bytes(token: &[u8]) -> Result<Vec<u8>, String> {
    match token.strip_prefix(b"0x") {
        Some(hex) => decode_hex(hex).map_err(|e| {
            format!(
                "invalid hex token {:?}: {e}",
                String::from_utf8_lossy(token)
            )
        }),
        None => Ok(token.to_vec()),
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes hex digits (no prefix).
pub fn decode_hex(hex: &[u8]) -> Result<Vec<u8>, String> {
    if !hex.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits ({})", hex.len()));
    }
    hex.chunks_exact(2)
        .enumerate()
        .map(|(i, pair)| match (hex_digit(pair[0]), hex_digit(pair[1])) {
            (Some(h), Some(l)) => Ok((h << 4) | l),
            _ => Err(format!(
                "not a hex digit at position {}",
                2 * i + usize::from(hex_digit(pair[0]).is_some())
            )),
        })
        .collect()
}

/// Lowercase hex of `bytes` (no prefix).
pub fn encode_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// True for characters printed as-is: not control, not whitespace. This is
/// the same notion of whitespace that splits shell lines into tokens.
pub fn is_printable_char(c: char) -> bool {
    !c.is_control() && !c.is_whitespace()
}

/// Formats `bytes` for output (see the module docs).
pub fn encode_bytes(bytes: &[u8]) -> String {
    if !bytes.is_empty()
        && !bytes.starts_with(b"0x")
        && let Ok(s) = std::str::from_utf8(bytes)
        && s.chars().all(is_printable_char)
    {
        return s.to_string();
    }
    format!("0x{}", encode_hex(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn plain_tokens_are_taken_as_is() {
        assert_eq!(decode_token("hello").as_deref(), Ok(&b"hello"[..]));
        assert_eq!(decode_token("ключ").as_deref(), Ok("ключ".as_bytes()));
        assert_eq!(decode_token("0").as_deref(), Ok(&b"0"[..]));
        assert_eq!(decode_token("0X41").as_deref(), Ok(&b"0X41"[..]));
        assert_eq!(decode_token("x0").as_deref(), Ok(&b"x0"[..]));
    }

    #[test]
    fn hex_tokens_are_decoded() {
        assert_eq!(decode_token("0x").as_deref(), Ok(&b""[..]));
        assert_eq!(decode_token("0x00ff").as_deref(), Ok(&[0u8, 0xff][..]));
        assert_eq!(
            decode_token("0xDEADbeef").as_deref(),
            Ok(&[0xde, 0xad, 0xbe, 0xef][..])
        );
        assert_eq!(decode_token("0x6869").as_deref(), Ok(&b"hi"[..]));
    }

    #[test]
    fn bad_hex_is_rejected() {
        for bad in [
            "0x1", "0xabc", "0xzz", "0x0g", "0xg0", "0x-1", "0x 1", "0x0x",
        ] {
            let e = decode_token(bad).expect_err(bad);
            assert!(e.contains("invalid hex"), "{bad}: {e}");
        }
        assert!(decode_token("0xabc").expect_err("odd").contains("odd"));
        // Multi-byte characters after the prefix are not hex either.
        assert!(decode_token("0xé0").is_err());
    }

    #[test]
    fn printable_values_print_as_is() {
        assert_eq!(encode_bytes(b"hello"), "hello");
        assert_eq!(encode_bytes("ключ".as_bytes()), "ключ");
        assert_eq!(encode_bytes(b"a-b_c:1/2"), "a-b_c:1/2");
    }

    #[test]
    fn unprintable_values_print_as_hex() {
        assert_eq!(encode_bytes(b""), "0x");
        assert_eq!(encode_bytes(b"a b"), "0x612062");
        assert_eq!(encode_bytes(b"a\tb"), "0x610962");
        assert_eq!(encode_bytes(b"\n"), "0x0a");
        assert_eq!(encode_bytes(&[0xff, 0x00]), "0xff00");
        assert_eq!(encode_bytes(b"\x7f"), "0x7f");
        // A value that looks like hex is itself hex-encoded so it reads back.
        assert_eq!(encode_bytes(b"0x12"), "0x30783132");
        // Non-breaking space is whitespace.
        assert_eq!(encode_bytes("a\u{a0}b".as_bytes()), "0x61c2a062");
    }

    fn check_round_trip(bytes: &[u8]) {
        let printed = encode_bytes(bytes);
        assert!(!printed.is_empty());
        assert_eq!(
            printed.split_whitespace().count(),
            1,
            "{bytes:?} printed as {printed:?}, not one token"
        );
        assert_eq!(
            decode_token(&printed).as_deref(),
            Ok(bytes),
            "{bytes:?} printed as {printed:?}"
        );
    }

    #[test]
    fn round_trip_random_bytes() {
        let mut rng = StdRng::seed_from_u64(0x0574_2a7a);
        // Alphabet that makes the interesting cases likely: printable ASCII,
        // whitespace, control bytes, the `0x` prefix, UTF-8 lead and
        // continuation bytes.
        let alphabet: &[u8] = b"0x0xab \t\n\r\x00\x7f\xc3\xa9\xe2\x80\x8b\xffZz-";
        for _ in 0..20_000 {
            let len = rng.random_range(0..12);
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    if rng.random_bool(0.5) {
                        alphabet[rng.random_range(0..alphabet.len())]
                    } else {
                        rng.random()
                    }
                })
                .collect();
            check_round_trip(&bytes);
        }
    }

    #[test]
    fn round_trip_random_strings() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let len = rng.random_range(0..8);
            let s: String = (0..len)
                .map(|_| {
                    // Mostly ASCII, sometimes any scalar value.
                    if rng.random_bool(0.7) {
                        char::from(rng.random_range(0u8..128))
                    } else {
                        rng.random::<char>()
                    }
                })
                .collect();
            check_round_trip(s.as_bytes());
        }
    }

    #[test]
    fn hex_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode_hex(encode_hex(&all).as_bytes()), Ok(all));
    }
}
