//! `bench-upstream secrets DIR`: what the TLS + JWT rows of bench/run.sh
//! need, made fresh for each run so nothing secret is committed:
//!
//!   DIR/cert.pem, DIR/key.pem   a self-signed certificate for 127.0.0.1
//!                               and localhost (the gateway's and nginx's)
//!   DIR/jwt-public.pem          the ES256 public key the gateway verifies
//!                               tokens with
//!   DIR/token                   a token signed with its private key (the
//!                               private key itself is not kept), valid for
//!                               a day: iss "bench", aud "a2a-gateway"

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::json;

pub fn main(args: &[String]) -> i32 {
    let Some(dir) = args.first() else {
        eprintln!("usage: bench-upstream secrets DIR");
        return 2;
    };
    match write(Path::new(dir)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("bench-upstream secrets: {e}");
            1
        }
    }
}

fn write(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    let tls = rcgen::generate_simple_self_signed(names).map_err(|e| format!("certificate: {e}"))?;
    save(dir, "cert.pem", &tls.cert.pem())?;
    save(dir, "key.pem", &tls.key_pair.serialize_pem())?;

    // rcgen's default key is ECDSA P-256: an ES256 signing key.
    let signer = rcgen::KeyPair::generate().map_err(|e| format!("signing key: {e}"))?;
    save(dir, "jwt-public.pem", &signer.public_key_pem())?;
    let key = EncodingKey::from_ec_pem(signer.serialize_pem().as_bytes())
        .map_err(|e| format!("signing key: {e}"))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let claims = json!({
        "sub": "bench", "iss": "bench", "aud": "a2a-gateway",
        "iat": now, "exp": now + 24 * 3600,
    });
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("bench".into());
    let token = encode(&header, &claims, &key).map_err(|e| format!("token: {e}"))?;
    save(dir, "token", &token)
}

fn save(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}
