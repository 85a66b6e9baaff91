"""Signed cards, checked by an official SDK's own verifier (1.x or 0.3.x,
whichever this Python has).

  python verify_card.py [--jwks FILE] BASE PATH...

For each PATH, the SDK's card resolver fetches BASE+PATH with a signature
verifier (`a2a.utils.signing.create_signature_verifier`) whose keys come
from BASE's /.well-known/jwks.json (or from the JWKS in FILE, for an agent
that signs its own card), and must succeed. Then copies of the
card with a member that SDK's reader keeps changed (the name, a skill's
tags, and the interfaces' URL for 1.x or the card's url for 0.3) must each
be refused. Prints one line per check; exits 1 if any check fails.
"""
import asyncio
import copy
import importlib.metadata
import json
import sys

import httpx
from jwt.api_jwk import PyJWK

from a2a.client.card_resolver import A2ACardResolver
from a2a.utils.signing import SignatureVerificationError, create_signature_verifier

V1 = not importlib.metadata.version("a2a-sdk").startswith("0.")
if V1:
    from a2a.client.card_resolver import parse_agent_card as read_card

    def move_url(c):
        c["supportedInterfaces"][0]["url"] = "http://attacker.invalid/"
else:
    from a2a.types import AgentCard

    read_card = AgentCard.model_validate

    def move_url(c):
        c["url"] = "http://attacker.invalid/"


def tampered(card: dict) -> list[tuple[str, dict]]:
    out = []
    for what, change in [
        ("name", lambda c: c.__setitem__("name", c.get("name", "") + " (changed)")),
        ("skill tags", lambda c: c["skills"][0].setdefault("tags", []).append("injected")),
        ("endpoint url", move_url),
    ]:
        copied = copy.deepcopy(card)
        change(copied)
        out.append((what, copied))
    return out


async def main(base: str, paths: list[str], jwks_file: str | None = None) -> int:
    failed = 0
    sdk = "a2a-sdk " + importlib.metadata.version("a2a-sdk")
    async with httpx.AsyncClient(timeout=10) as http:
        if jwks_file:
            with open(jwks_file) as f:
                jwks = json.load(f)
        else:
            jwks = (await http.get(base + "/.well-known/jwks.json")).json()

        def key_provider(kid, jku):
            for key in jwks["keys"]:
                if key["kid"] == kid:
                    return PyJWK(key)
            raise KeyError(kid)

        verify = create_signature_verifier(key_provider, ["ES256", "RS256", "EdDSA"])
        for path in paths:
            try:
                card = await A2ACardResolver(http, base).get_agent_card(
                    relative_card_path=path, signature_verifier=verify
                )
                print(f"ok      {sdk} {path}: verified ({card.name})")
            except Exception as e:  # noqa: BLE001 - any failure is the finding
                print(f"FAILED  {sdk} {path}: {type(e).__name__}: {e}")
                failed += 1
                continue
            raw = (await http.get(base + path)).json()
            for what, copied in tampered(raw):
                try:
                    verify(read_card(copied))
                    print(f"FAILED  {sdk} {path}: a changed {what} still verifies")
                    failed += 1
                except SignatureVerificationError:
                    print(f"ok      {sdk} {path}: a changed {what} is refused")
    return 1 if failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    jwks_file = None
    if args[:1] == ["--jwks"]:
        jwks_file, args = args[1], args[2:]
    sys.exit(asyncio.run(main(args[0].rstrip("/"), args[1:], jwks_file)))
