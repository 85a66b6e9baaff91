"""ES256 keys for the signed-card interop step (run with .venv1's python).

  python keys.py pem OUT.pem
      writes a fresh ES256 (P-256) private key, PKCS#8 PEM, unencrypted
      (the form the gateway's [card.signing] keys and the agents' --sign-key
      read).
  python keys.py jwks OUT.json KID=PEM [KID=PEM ...]
      writes a JWKS, {"keys": [...]}, with each PEM's public key as an EC JWK
      with that kid, "alg": "ES256" and "use": "sig". A PEM may hold the
      private key or just the public key.
"""
import json
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm


def write_pem(out: str) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    with open(out, 'wb') as f:
        f.write(pem)


def public_key(path: str) -> ec.EllipticCurvePublicKey:
    with open(path, 'rb') as f:
        pem = f.read()
    try:
        key = serialization.load_pem_private_key(pem, password=None).public_key()
    except ValueError:
        key = serialization.load_pem_public_key(pem)
    if not isinstance(key, ec.EllipticCurvePublicKey) or key.curve.name != 'secp256r1':
        raise SystemExit(f'{path}: not a P-256 (ES256) key')
    return key


def write_jwks(out: str, pairs: list[str]) -> None:
    keys = []
    for pair in pairs:
        kid, sep, path = pair.partition('=')
        if not sep or not kid or not path:
            raise SystemExit(f'expected KID=PEM, got {pair!r}')
        jwk = ECAlgorithm.to_jwk(public_key(path), as_dict=True)
        keys.append({**jwk, 'kid': kid, 'alg': 'ES256', 'use': 'sig'})
    with open(out, 'w') as f:
        json.dump({'keys': keys}, f, indent=2)
        f.write('\n')


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == 'pem':
        write_pem(argv[1])
    elif len(argv) >= 3 and argv[0] == 'jwks':
        write_jwks(argv[1], argv[2:])
    else:
        raise SystemExit(__doc__)


if __name__ == '__main__':
    main(sys.argv[1:])
