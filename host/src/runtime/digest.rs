//! Content hashes (the compile cache's keys, plugins' identities) and the
//! comparison of secrets (bearer tokens, join codes).

use sha2::{Digest, Sha256};

/// `bytes` in lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    // Not a `format!` per byte: this runs on every HTTP request (its
    // caller's name), and each of those was an allocation.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Whether two secrets are equal, in time that depends only on their lengths.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_writes_each_byte_as_two_lower_case_digits() {
        assert_eq!(hex(&[0x00, 0x0f, 0xab, 0x7f, 0xff]), "000fab7fff");
        // SHA-256 of "abc" (FIPS 180-2, appendix B.1).
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
