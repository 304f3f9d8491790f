"""The chart's trust boundaries at the ingress: bodies pass unbuffered to the gateway's deadlines, the
client address is believed only from the ingress, and in trusted-header mode the ingress sets or clears
every identity header the gateway reads."""

from __future__ import annotations

import base64
import json
from typing import Any

import helm_python
import pytest

from .conftest import DATABASE_COMPONENTS, RELEASE, Rendered, Renderer, env_of, name_of, secret_files


def gateway_config(rendered: Rendered) -> dict[str, str]:
    data: dict[str, str] = rendered.get("ConfigMap", name_of("chat-gateway"))["data"]
    return data


def ingress_annotations(rendered: Rendered) -> dict[str, str]:
    annotations: dict[str, str] = rendered.get("Ingress", f"{RELEASE}-stacgis")["metadata"]["annotations"]
    return annotations


TRUSTED_HEADER: dict[str, Any] = {
    "gateway": {
        "auth": {
            "mode": "trusted-header",
            "trustedProxies": ["10.42.0.0/16"],
            "authUrl": "http://oauth2-proxy.auth.svc/oauth2/auth",
            "signinUrl": "https://login.example.org/oauth2/start?rd=$escaped_request_uri",
        }
    }
}


def test_bodies_reach_the_gateway_unbuffered_with_its_deadlines(renderer: Renderer) -> None:
    for values in ({}, {"ingress": {"streaming": {"enabled": False}}}):
        rendered = renderer.render(values)
        assert ingress_annotations(rendered)["nginx.ingress.kubernetes.io/proxy-request-buffering"] == "off"
        config = gateway_config(rendered)
        assert config["GATEWAY_BODY_READ_TIMEOUT_SECONDS"] == "10"
        assert config["GATEWAY_BODY_DEADLINE_SECONDS"] == "30"


def test_the_client_address_is_believed_from_the_ingress_only(renderer: Renderer) -> None:
    # Only the ingress controller may reach the gateway (NetworkPolicy), so any peer is the ingress.
    default = gateway_config(renderer.render({}))
    assert json.loads(default["GATEWAY_TRUSTED_PROXIES"]) == ["0.0.0.0/0", "::/0"]
    # Without that policy nothing is believed unless listed.
    open_network = gateway_config(renderer.render({"networkPolicy": {"enabled": False}}))
    assert "GATEWAY_TRUSTED_PROXIES" not in open_network
    listed = gateway_config(renderer.render({"gateway": {"auth": {"trustedProxies": ["10.0.0.0/8"]}}}))
    assert json.loads(listed["GATEWAY_TRUSTED_PROXIES"]) == ["10.0.0.0/8"]


def test_trusted_header_mode_sets_or_clears_every_identity_header(renderer: Renderer) -> None:
    rendered = renderer.render(TRUSTED_HEADER)
    annotations = ingress_annotations(rendered)
    assert annotations["nginx.ingress.kubernetes.io/auth-url"] == "http://oauth2-proxy.auth.svc/oauth2/auth"
    headers = annotations["nginx.ingress.kubernetes.io/auth-response-headers"].split(",")
    assert sorted(headers) == ["X-Auth-Request-User", "X-Forwarded-User"]
    assert annotations["nginx.ingress.kubernetes.io/auth-signin"].startswith("https://login.example.org/")
    config = gateway_config(rendered)
    assert config["GATEWAY_AUTH_MODE"] == "trusted-header"
    assert json.loads(config["GATEWAY_TRUSTED_PROXIES"]) == ["10.42.0.0/16"]
    # A custom header is set (or cleared) by the ingress too.
    custom = {"gateway": {"auth": {**TRUSTED_HEADER["gateway"]["auth"], "trustedUserHeader": "X-Email"}}}
    headers = ingress_annotations(renderer.render(custom))["nginx.ingress.kubernetes.io/auth-response-headers"]
    assert sorted(headers.split(",")) == ["X-Auth-Request-User", "X-Email", "X-Forwarded-User"]


def test_outside_mcp_clients_bypass_the_auth_proxy_only_on_their_paths(renderer: Renderer) -> None:
    """Their bearer tokens mean nothing to the auth proxy; the gateway checks them and, on /mcp, reads
    no identity header, so those paths (and only those) get an Ingress without auth-url."""

    def paths(ingress: dict[str, Any]) -> set[str]:
        return {p["path"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]}

    mcp_paths = {"/mcp", "/.well-known/oauth-protected-resource"}
    rendered = renderer.render(TRUSTED_HEADER)
    main = rendered.get("Ingress", f"{RELEASE}-stacgis")
    outside = rendered.get("Ingress", f"{RELEASE}-stacgis-mcp")
    assert paths(main) == {"/api", "/tiles", "/"} and paths(outside) == mcp_paths
    assert not any("auth-" in key for key in outside["metadata"]["annotations"])
    assert outside["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    # Without an auth proxy one Ingress holds every path.
    (single,) = renderer.render({}).kinds("Ingress")
    assert paths(single) == {"/api", "/tiles", "/"} | mcp_paths


def test_trusted_header_mode_needs_the_proxys_addresses(chart: helm_python.Chart) -> None:
    values = {"gateway": {"auth": {"mode": "trusted-header"}}}
    with pytest.raises(Exception, match=r"gateway\.auth\.trustedProxies"):
        chart.render(values=values, name="demo", namespace="stacgis")


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"gateway": {"auth": {"trustedProxies": ["everyone"]}}}, "trustedProxies"),
        ({"gateway": {"auth": {"authUrl": "not a url"}}}, "authUrl"),
        ({"gateway": {"bodyDeadlineSeconds": 0}}, "bodyDeadlineSeconds"),
        ({"postgresql": {"external": {"appUsername": "app; DROP ROLE x"}}}, "appUsername"),
        ({"postgresql": {"external": {"ownerUrl": "db.internal:5432"}}}, "ownerUrl"),
    ],
)
def test_schema_refuses_bad_trust_values(chart: helm_python.Chart, values: dict[str, Any], field: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as caught:
        chart.render(values=values, name="demo", namespace="stacgis")
    assert field in str(caught.value)


def test_services_connect_as_the_application_role_and_jobs_as_the_owner(renderer: Renderer) -> None:
    rendered = renderer.render({})
    secret = rendered.get("Secret", name_of("postgresql"))
    assert set(secret["data"]) == {"password", "app-password"}
    for component in ("chat-gateway", "vector-tools", "knowledge-tools", "memory-tools"):
        spec = rendered.get("Deployment", name_of(component))["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        url = next(entry["value"] for name, entry in env_of(container).items() if name.endswith("_DATABASE_URL"))
        assert url.startswith("postgresql://stacgis_app@"), component
        (password,) = [f for name, f in secret_files(spec, container)[1].items() if name.endswith("_DATABASE_PASSWORD")]
        assert (password.secret, password.key) == (name_of("postgresql"), "app-password")
    job = rendered.get("Job", name_of("migrations"))["spec"]["template"]["spec"]
    (roles,) = job["initContainers"]
    script = roles["command"][2]
    assert roles["command"][:2] == ["sh", "-ec"] and "exec psql " in script and "app_role=stacgis_app" in script
    # The owner's and the application role's passwords come from files of the Postgres Secret, not the env.
    assert not any("valueFrom" in e for e in roles["env"])
    assert {
        "PGPASSWORD=$(cat /run/secrets/postgresql/password)",
        "APP_PASSWORD=$(cat /run/secrets/postgresql/app-password)",
    } <= {line.split(";")[0] for line in script.splitlines()}
    (volume,) = [v for v in job["volumes"] if v["name"] == "roles-secrets"]
    assert volume["secret"]["secretName"] == name_of("postgresql")
    assert {i["key"]: i["path"] for i in volume["secret"]["items"]} == {
        "password": "password",
        "app-password": "app-password",
    }
    for container in job["containers"]:
        url = next(entry["value"] for name, entry in env_of(container).items() if name.endswith("_DATABASE_URL"))
        assert url.startswith("postgresql://stacgis@"), container["name"]
        (password,) = [f for name, f in secret_files(job, container)[1].items() if name.endswith("_DATABASE_PASSWORD")]
        assert (password.secret, password.key) == (name_of("postgresql"), "password")
    sql = rendered.get("ConfigMap", f"{name_of('postgresql')}-roles")["data"]["app-role.sql"]
    assert "NOSUPERUSER" in sql and "ALTER DEFAULT PRIVILEGES" in sql
    assert_roles_script_runs_before_the_job(rendered)
    # Nothing runs the script without the Job.
    assert not renderer.render({"migrations": {"enabled": False}}).has("ConfigMap", f"{name_of('postgresql')}-roles")


def assert_roles_script_runs_before_the_job(rendered: Rendered) -> dict[str, Any]:
    """The roles ConfigMap is a hook of the Job's own phases with a lower weight: with an existing Secret the
    Job runs before install, when the release's plain resources do not exist yet. Returns the init container."""
    job = rendered.get("Job", name_of("migrations"))
    roles = rendered.get("ConfigMap", f"{name_of('postgresql')}-roles")
    job_hook, roles_hook = job["metadata"]["annotations"], roles["metadata"]["annotations"]
    assert roles_hook["helm.sh/hook"] == job_hook["helm.sh/hook"]
    assert int(roles_hook["helm.sh/hook-weight"]) < int(job_hook["helm.sh/hook-weight"])
    spec = job["spec"]["template"]["spec"]
    (init,) = spec["initContainers"]
    (volume,) = [v for v in spec["volumes"] if v.get("configMap", {}).get("name") == roles["metadata"]["name"]]
    (mount,) = [m for m in init["volumeMounts"] if m["name"] == volume["name"]]
    # psql reads the script the ConfigMap holds, where the volume puts it.
    (key,) = roles["data"]
    psql = init["command"][2].split("exec psql ", 1)[1].split()
    assert psql[psql.index("-f") + 1] == f"{mount['mountPath']}/{key}"
    assert "ON_ERROR_STOP=1" in psql
    (secrets,) = [m for m in init["volumeMounts"] if m["name"] == "roles-secrets"]
    assert secrets["readOnly"] is True and secrets["mountPath"] == "/run/secrets/postgresql"
    return dict(init)


def database_url_keys(rendered: Rendered, kind: str) -> dict[str, set[tuple[str, str]]]:
    """(Secret, key) of every *_DATABASE_URL secret file of each workload of a kind, by workload name."""
    found: dict[str, set[tuple[str, str]]] = {}
    for doc, spec in rendered.workloads():
        if doc["kind"] != kind:
            continue
        for container in spec["containers"]:
            assert not any(name.endswith("_DATABASE_URL") for name in env_of(container)), container["name"]
            if "STACGIS_SECRETS_DIR" not in env_of(container):
                continue
            for name, file in secret_files(spec, container)[1].items():
                if name.endswith("_DATABASE_URL"):
                    found.setdefault(doc["metadata"]["name"], set()).add((file.secret, file.key))
    return found


APP_URL = "postgresql://stacgis_app:app-secret@db.internal:5432/stacgis?sslmode=require"
OWNER_URL = "postgresql://stacgis_owner:owner-secret@db.internal:5432/stacgis?sslmode=require"
EXTERNAL_APP_ROLE: dict[str, Any] = {
    "postgresql": {
        "enabled": False,
        "external": {"url": APP_URL, "ownerUrl": OWNER_URL, "appUsername": "stacgis_app"},
    }
}


@pytest.mark.parametrize(
    "external",
    [
        EXTERNAL_APP_ROLE["postgresql"]["external"],
        {"existingSecret": "db-urls", "urlKey": "app-url", "ownerUrlKey": "owner-url", "appUsername": "svc_rows"},
    ],
    ids=["literal-urls", "existing-secret"],
)
def test_an_external_server_with_an_application_role_gives_services_its_url_and_jobs_the_owners(
    renderer: Renderer, external: dict[str, Any]
) -> None:
    rendered = renderer.render({"postgresql": {"enabled": False, "external": external}})
    secret_name = external.get("existingSecret") or name_of("postgresql")
    url_key, owner_key = external.get("urlKey", "database-url"), external.get("ownerUrlKey", "database-owner-url")
    if "existingSecret" in external:
        assert not rendered.has("Secret", name_of("postgresql"))
    else:
        data = rendered.get("Secret", name_of("postgresql"))["data"]
        decoded = {key: base64.b64decode(value).decode() for key, value in data.items()}
        assert decoded == {url_key: external["url"], owner_key: external["ownerUrl"]}

    services = database_url_keys(rendered, "Deployment")
    assert set(services) == {name_of(c) for c in DATABASE_COMPONENTS}
    assert all(refs == {(secret_name, url_key)} for refs in services.values()), services
    jobs = database_url_keys(rendered, "Job")
    assert {name_of("migrations"), name_of("vector-load"), name_of("knowledge-ingest")} <= set(jobs)
    assert all(refs == {(secret_name, owner_key)} for refs in jobs.values()), jobs

    init = assert_roles_script_runs_before_the_job(rendered)
    assert init["name"] == "database-roles"
    # psql connects with the owner's URL, read from the Secret's file.
    script = init["command"][2]
    assert "url=$(cat /run/secrets/postgresql/owner-url)" in script and 'exec psql "$url" ' in script
    assert f"app_role={external['appUsername']}" in script
    spec = rendered.get("Job", name_of("migrations"))["spec"]["template"]["spec"]
    (volume,) = [v for v in spec["volumes"] if v["name"] == "roles-secrets"]
    assert volume["secret"]["secretName"] == secret_name
    assert volume["secret"]["items"] == [{"key": owner_key, "path": "owner-url"}]
    # The operator's role keeps the password they gave it: the script gets none, so it only grants.
    assert "env" not in init and "APP_PASSWORD" not in script
    hook = rendered.get("Job", name_of("migrations"))["metadata"]["annotations"]["helm.sh/hook"]
    assert hook == ("pre-install,pre-upgrade" if "existingSecret" in external else "post-install,pre-upgrade")


def test_an_external_server_without_an_application_role_keeps_one_url(renderer: Renderer) -> None:
    rendered = renderer.render({"postgresql": {"enabled": False, "external": {"url": OWNER_URL}}})
    data = rendered.get("Secret", name_of("postgresql"))["data"]
    assert {key: base64.b64decode(value).decode() for key, value in data.items()} == {"database-url": OWNER_URL}
    one_url = {(name_of("postgresql"), "database-url")}
    for kind in ("Deployment", "Job"):
        found = database_url_keys(rendered, kind)
        assert found and all(refs == one_url for refs in found.values()), (kind, found)
    job = rendered.get("Job", name_of("migrations"))["spec"]["template"]["spec"]
    assert "initContainers" not in job
    assert not [v for v in job["volumes"] if "configMap" in v]  # no roles script
    assert not rendered.has("ConfigMap", f"{name_of('postgresql')}-roles")


@pytest.mark.parametrize(
    ("external", "message"),
    [
        ({"url": APP_URL, "appUsername": "stacgis_app"}, r"postgresql\.external\.ownerUrl .*required"),
        (
            {"url": OWNER_URL, "ownerUrl": OWNER_URL, "appUsername": "stacgis_app"},
            r"postgresql\.external\.url connects as",
        ),
        ({"url": APP_URL, "ownerUrl": APP_URL, "appUsername": "stacgis_app"}, r"ownerUrl must connect as the owner"),
        ({"url": OWNER_URL, "ownerUrl": OWNER_URL}, r"used only with postgresql\.external\.appUsername"),
        (
            {"existingSecret": "db-urls", "appUsername": "stacgis_app", "ownerUrlKey": "database-url"},
            r"postgresql\.external\.ownerUrlKey must differ",
        ),
    ],
    ids=["no-owner-url", "url-of-another-role", "owner-is-the-app-role", "owner-url-alone", "one-key-for-both"],
)
def test_an_incomplete_application_role_setup_is_refused(
    chart: helm_python.Chart, external: dict[str, Any], message: str
) -> None:
    with pytest.raises(helm_python.HelmError, match=message):
        chart.render(values={"postgresql": {"enabled": False, "external": external}}, name="demo", namespace="stacgis")


def test_the_gateway_api_route_never_passes_a_clients_identity_header(
    renderer: Renderer, chart: helm_python.Chart
) -> None:
    route_values = {
        "ingress": {"enabled": False},
        "httpRoute": {"enabled": True, "parentRefs": [{"name": "public", "namespace": "gateways"}]},
    }

    def removed(rendered: Rendered) -> dict[str, list[str]]:
        (route,) = rendered.kinds("HTTPRoute")
        out = {}
        for rule in route["spec"]["rules"]:
            names = [
                name
                for f in rule.get("filters", [])
                if f["type"] == "RequestHeaderModifier"
                for name in f["requestHeaderModifier"].get("remove", [])
            ]
            out[rule["matches"][0]["path"]["value"]] = sorted(names)
        return out

    identity = ["X-Auth-Request-User", "X-Forwarded-User"]
    # Cookie mode: whatever a client sends as an identity header is dropped before the gateway.
    plain = removed(renderer.render(route_values))
    assert plain["/api"] == identity and plain["/mcp"] == identity
    # Trusted-header mode: only the Gateway's auth policy can set the header, so the chart asks the
    # operator to say it does, and then leaves /api's headers to it (outside MCP clients never need one).
    trusted = {
        **route_values,
        "gateway": {"auth": {**TRUSTED_HEADER["gateway"]["auth"], "trustedUserHeader": "X-Email"}},
    }
    with pytest.raises(helm_python.HelmError, match=r"httpRoute\.identityHeadersFromGateway"):
        chart.render(values=trusted, name="demo", namespace="stacgis")
    trusted["httpRoute"] = {**route_values["httpRoute"], "identityHeadersFromGateway": True}
    acknowledged = removed(renderer.render(trusted))
    assert acknowledged["/api"] == [] and acknowledged["/mcp"] == sorted([*identity, "X-Email"])
