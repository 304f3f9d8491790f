import time

import jwt
import pytest

from stacgis_common.auth import InvalidInternalToken, mint_internal_token, verify_internal_token

SECRET = "unit-test-secret-that-is-long-enough-for-hs256"


def test_round_trip_carries_user_and_session() -> None:
    token = mint_internal_token(SECRET, "user-1", "session-9")
    identity = verify_internal_token(token, SECRET)
    assert identity.user_id == "user-1"
    assert identity.session_id == "session-9"


def test_expired_token_rejected() -> None:
    token = mint_internal_token(SECRET, "user-1", ttl_seconds=-60)
    with pytest.raises(InvalidInternalToken, match=r"(?i)expired"):
        verify_internal_token(token, SECRET)


def test_tampered_token_rejected() -> None:
    token = mint_internal_token(SECRET, "user-1")
    header, payload, signature = token.split(".")
    forged_payload = jwt.utils.base64url_encode(
        jwt.utils.base64url_decode(payload).replace(b"user-1", b"user-2")
    ).decode()
    with pytest.raises(InvalidInternalToken):
        verify_internal_token(f"{header}.{forged_payload}.{signature}", SECRET)


def test_wrong_secret_rejected() -> None:
    token = mint_internal_token("another-secret-another-secret-another", "user-1")
    with pytest.raises(InvalidInternalToken):
        verify_internal_token(token, SECRET)


def test_wrong_audience_rejected() -> None:
    token = mint_internal_token(SECRET, "user-1", audience="someone-else")
    with pytest.raises(InvalidInternalToken, match=r"(?i)audience"):
        verify_internal_token(token, SECRET)


def test_unsigned_token_rejected() -> None:
    now = int(time.time())
    token = jwt.encode(
        {"sub": "user-1", "aud": "stacgis-internal", "iss": "stacgis-gateway", "iat": now, "exp": now + 60},
        key=None,
        algorithm="none",
    )
    with pytest.raises(InvalidInternalToken):
        verify_internal_token(token, SECRET)


def _signed(claims: dict[str, object]) -> str:
    base: dict[str, object] = {"iss": "stacgis-gateway", "aud": "stacgis-internal", "sub": "user-1"}
    return jwt.encode({**base, **claims}, SECRET, algorithm="HS256")


def test_long_lived_token_rejected() -> None:
    # A validly signed ten-year token is what a leaked secret or a forged mint looks like.
    now = int(time.time())
    with pytest.raises(InvalidInternalToken, match="lifetime"):
        verify_internal_token(_signed({"iat": now, "exp": now + 10 * 365 * 86400}), SECRET)
    assert verify_internal_token(_signed({"iat": now, "exp": now + 900}), SECRET).user_id == "user-1"


def test_token_issued_in_the_future_rejected() -> None:
    now = int(time.time())
    with pytest.raises(InvalidInternalToken, match="not yet valid"):
        verify_internal_token(_signed({"iat": now + 600, "exp": now + 900}), SECRET)
