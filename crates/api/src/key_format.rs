//! What an API key looks like: `eai_live_` and 64 hex digits of randomness when we make one, the format we are
//! willing to look up, and the SHA-256 the store keeps. A leaf: it imports nothing of this crate (the
//! configuration checks the bootstrap key with it, the sign-in looks keys up with it).

use rand::RngCore;
use sha2::{Digest, Sha256};

/// Every API key starts with this.
pub const KEY_PREFIX: &str = "eai_live_";

/// A new API key: `eai_live_` + 32 random bytes in hex. Shown once; only its hash is stored.
pub fn new_api_key() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    format!("{KEY_PREFIX}{}", hex::encode(b))
}

/// Hex SHA-256 of the full key text: what the store keeps and looks up.
pub fn hash_api_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A key we are willing to hash and look up: the prefix, then 24 to 200 characters of `[A-Za-z0-9_-]`.
/// The reason never repeats the key.
pub fn check_key_format(key: &str) -> Result<(), &'static str> {
    let Some(secret) = key.strip_prefix(KEY_PREFIX) else {
        return Err("it must start with eai_live_");
    };
    if secret.len() < 24 || secret.len() > 200 {
        return Err("it must have 24 to 200 characters after eai_live_");
    }
    if !secret
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("it may only hold letters, digits, _ and -");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_prefix_and_64_hex_digits() {
        let k = new_api_key();
        assert!(k.starts_with(KEY_PREFIX));
        assert_eq!(k.len(), KEY_PREFIX.len() + 64);
        assert!(check_key_format(&k).is_ok());
        assert_ne!(k, new_api_key());
        assert_eq!(hash_api_key(&k).len(), 64);
    }

    #[test]
    fn malformed_keys_are_refused_before_any_lookup() {
        assert!(check_key_format("Bearer").is_err());
        assert!(check_key_format("eai_live_short").is_err());
        assert!(check_key_format("eai_live_0123456789abcdef0123456789abcdef'--").is_err());
    }
}
