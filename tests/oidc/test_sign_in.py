"""Signing in with OpenID Connect against the real provider (npm ``oidc-provider``): the user
is created from the claims on the first sign-in, found again by ``sub`` afterwards, refused
when unknown and creation is off; their login works like a password login's."""
from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select

from labapp.db import db, transaction
from labapp.model import User
from labapp.users.service import create_user
from tests.conftest import ADMIN_PASSWORD, basic_header, csrf_of, login
from tests.oidc.conftest import NAME, OidcLab
from tests.oidc.provider_process import free_port


def _user(lab: OidcLab, user_id: str) -> User | None:
    with lab.app.app_context():
        user = db.session.get(User, user_id)
        if user is not None:
            db.session.expunge(user)
        return user


def test_the_first_sign_in_creates_the_user_from_the_claims(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    client = lab.app.test_client()
    answer = lab.sign_in("alice", client, next_path="/profile")
    assert answer.status_code == 303, answer.get_data(as_text=True)
    assert answer.headers["Location"] == "/profile"
    me = client.get("/api/user")
    assert me.status_code == 200, me.get_json()
    body = me.get_json()
    assert body["id"] == "alice"
    assert body["authSource"] == f"oidc:{NAME}"
    assert body["name"] == "Alice Anders"
    assert body["email"] == "alice@example.org"
    assert body["departmentID"] == lab.chemistry
    assert body["roles"] == ["DATA_MANAGER"]
    user = _user(lab, "alice")
    assert user is not None
    assert user.external_id == "a1b2c3-alice"
    assert user.password_hash is None  # no local password unless an admin gives one
    refused = lab.app.test_client().post("/api/auth/login",
                                         json={"username": "alice", "password": ""})
    assert refused.status_code in (400, 401)


def test_a_later_sign_in_finds_the_user_by_sub_and_refreshes_the_claims(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    # An administrator linked alice's provider account to the user "anders" beforehand: the
    # provider's sub decides, not the username it claims.
    with lab.app.app_context(), transaction():
        create_user(username="anders", name="Old Name", department_id="DEP00001",
                           password=None, roles=["DATA_MANAGER_PROJECT_WRITE"],
                           created_by="admin", auth_source=f"oidc:{NAME}",
                           external_id="a1b2c3-alice")
    for _ in range(2):
        client = lab.app.test_client()
        assert lab.sign_in("alice", client).status_code == 303
        me = client.get("/api/user").get_json()
        assert me["id"] == "anders"
        assert me["name"] == "Alice Anders"
        assert me["departmentID"] == lab.chemistry
        # The mapped role is added; the one an administrator gave stays.
        assert me["roles"] == ["DATA_MANAGER", "DATA_MANAGER_PROJECT_WRITE"]
    assert _user(lab, "alice") is None
    with lab.app.app_context():
        linked = db.session.scalars(select(User.id).where(
            User.external_id == "a1b2c3-alice")).all()
        assert linked == ["anders"]


def test_a_mapped_role_the_claims_no_longer_give_is_taken_away(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab(roles={"lab-managers": ["DATA_MANAGER"], "staff": []})
    with lab.app.app_context(), transaction():
        create_user(username="bob", name="Bob", department_id="DEP00001", password=None,
                    roles=["DATA_MANAGER"], created_by="admin", auth_source=f"oidc:{NAME}",
                    external_id="b2c3d4-bob")
    client = lab.app.test_client()
    assert lab.sign_in("bob", client).status_code == 303
    me = client.get("/api/user").get_json()
    assert me["roles"] == []
    # bob's department claim maps to nothing: his department stays.
    assert me["departmentID"] == "DEP00001"


def test_an_unknown_user_is_refused_when_creation_is_off(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab(createUsers=False)
    client = lab.app.test_client()
    answer = lab.sign_in("alice", client)
    assert answer.status_code == 401
    page = answer.get_data(as_text=True)
    assert "you have no account here; ask an administrator to add you" in page
    assert _user(lab, "alice") is None
    assert client.get("/api/user").status_code == 401


def test_a_deactivated_user_is_refused(oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    assert lab.sign_in("alice").status_code == 303
    admin = lab.app.test_client()
    changed = admin.put("/api/user", json={"userID": "alice", "isActive": False},
                        headers=basic_header("admin", ADMIN_PASSWORD))
    assert changed.status_code == 200, changed.get_json()
    answer = lab.sign_in("alice")
    assert answer.status_code == 401
    assert "Your account here is deactivated" in answer.get_data(as_text=True)


def test_a_claimed_username_that_is_taken_is_never_linked(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    client = lab.app.test_client()
    answer = lab.sign_in("mallory", client)  # claims the username "admin"
    assert answer.status_code == 401
    assert "belongs to another account here" in answer.get_data(as_text=True)
    assert client.get("/api/user").status_code == 401
    admin = _user(lab, "admin")
    assert admin is not None and admin.auth_source == "local" and admin.external_id is None


def test_a_username_the_application_cannot_hold_is_refused(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    answer = lab.sign_in("odd")
    assert answer.status_code == 401
    assert "gave no username this application can use" in answer.get_data(as_text=True)


def test_the_login_works_for_the_api_like_a_password_login(
        oidc_lab: Callable[..., OidcLab]) -> None:
    """Cookie, then a PAT made with it; the PAT stops when the user is deactivated."""
    lab = oidc_lab()
    browser = lab.app.test_client()
    assert lab.sign_in("alice", browser).status_code == 303
    created = browser.post("/api/user/pat", json={"name": "script"},
                           headers={"X-CSRF-Token": csrf_of(browser)})
    assert created.status_code == 201, created.get_json()
    pat = created.get_json()["value"]
    script = lab.app.test_client()
    assert script.get("/api/user", headers=basic_header("alice", pat)).status_code == 200
    # No password: Basic with an empty or guessed one is refused.
    assert script.get("/api/user", headers=basic_header("alice", "")).status_code == 401
    admin = lab.app.test_client()
    assert admin.put("/api/user", json={"userID": "alice", "isActive": False},
                     headers=basic_header("admin", ADMIN_PASSWORD)).status_code == 200
    assert script.get("/api/user", headers=basic_header("alice", pat)).status_code == 401


def test_an_unknown_provider_is_404(oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    client = lab.app.test_client()
    assert client.get("/login/oidc/nope").status_code == 404
    assert client.get("/login/oidc/nope/callback?code=x&state=y").status_code == 404


def test_a_provider_that_cannot_be_reached_is_a_clear_503(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab(discoveryUrl=f"http://127.0.0.1:{free_port()}/.well-known/"
                                "openid-configuration")
    answer = lab.app.test_client().get(f"/login/oidc/{NAME}")
    assert answer.status_code == 503
    assert "cannot be reached" in answer.get_data(as_text=True)


def test_markup_in_the_claims_is_stored_and_shown_as_text(
        oidc_lab: Callable[..., OidcLab]) -> None:
    """eve's name and e-mail hold markup; her department claim is a list whose first value
    maps to nothing and her groups a single string."""
    lab = oidc_lab()
    client = lab.app.test_client()
    assert lab.sign_in("eve", client).status_code == 303
    me = client.get("/api/user").get_json()
    assert me["name"] == "<img src=x onerror=alert(1)>Eve"
    assert me["departmentID"] == lab.chemistry
    assert me["roles"] == ["DATA_MANAGER"]
    page = client.get("/profile").get_data(as_text=True)
    assert "<img src=x" not in page and "<script>alert(2)" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;Eve" in page


def test_next_never_leads_off_the_site(oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        answer = lab.sign_in("alice", next_path=target)
        assert answer.status_code == 303
        assert answer.headers["Location"] == "/"


def test_the_profile_says_where_a_user_without_password_signs_in(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab()
    client = lab.app.test_client()
    assert lab.sign_in("alice", client).status_code == 303
    page = client.get("/profile").get_data(as_text=True)
    assert "You sign in with Test ID; no password" in page
    assert 'id="password-form"' not in page
    # An administrator gives her one: then she may change it.
    given = lab.app.test_client().put(
        "/api/user", json={"userID": "alice", "password": "a local password 1"},
        headers=basic_header("admin", ADMIN_PASSWORD))
    assert given.status_code == 200, given.get_json()
    again = lab.app.test_client()
    login(again, "alice", "a local password 1")
    assert 'id="password-form"' in again.get("/profile").get_data(as_text=True)


def test_a_discovery_document_of_another_issuer_is_refused(
        oidc_lab: Callable[..., OidcLab], issuer: str) -> None:
    """The configured issuer must be the one the discovery document names (and the one the
    tokens are checked against)."""
    lab = oidc_lab(issuer=f"{issuer}/elsewhere",
                   discoveryUrl=f"{issuer}/.well-known/openid-configuration")
    answer = lab.app.test_client().get(f"/login/oidc/{NAME}")
    assert answer.status_code == 503
    assert "its issuer differs" in answer.get_data(as_text=True)


def test_a_mapping_to_an_unknown_role_stops_the_creation_with_a_clear_message(
        oidc_lab: Callable[..., OidcLab]) -> None:
    lab = oidc_lab(roles={"lab-managers": ["NO_SUCH_ROLE"]})
    answer = lab.sign_in("alice")
    assert answer.status_code == 503
    assert "Unknown role(s): NO_SUCH_ROLE. Tell an administrator." in \
        answer.get_data(as_text=True)
    assert _user(lab, "alice") is None


def test_sign_ins_and_refusals_reach_the_sign_in_log_administrators_read(
        oidc_lab: Callable[..., OidcLab]) -> None:
    """Issue 35 §5: each OpenID Connect sign-in is in the sign-in log (method oidc, the
    provider, the outcome), which ADMIN reads through ``GET /api/auth/signins``."""
    lab = oidc_lab()
    assert lab.sign_in("alice").status_code == 303
    refusing = oidc_lab(createUsers=False)
    assert refusing.sign_in("bob").status_code == 401
    admin = basic_header("admin", ADMIN_PASSWORD)
    for app, expected in ((lab.app, (True, "alice", None)),
                          (refusing.app, (False, "", "unknown_user"))):
        answer = app.test_client().get("/api/auth/signins", headers=admin)
        assert answer.status_code == 200, answer.get_json()
        events = [event for event in answer.get_json()["items"] if event["method"] == "oidc"]
        assert [(event["succeeded"], event["username"], event["reason"]) for event in events] \
            == [expected]
        assert events[0]["provider"] == NAME
