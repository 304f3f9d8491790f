"""Policies every rendered manifest must meet, and the wiring between them."""

from __future__ import annotations

import json
import re
from typing import Any

import helm_python
import pytest

from .conftest import (
    DATABASE_COMPONENTS,
    NAMESPACE,
    PYTHON_COMPONENTS,
    REPO,
    SCALABLE,
    SERVICES,
    Rendered,
    Renderer,
    SecretFile,
    env_of,
    name_of,
    secret_files,
)


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = spec.get("initContainers", []) + spec["containers"]
    return containers


def _where(doc: dict[str, Any], container: dict[str, Any]) -> str:
    return f"{doc['kind']}/{doc['metadata']['name']}:{container['name']}"


def test_every_container_is_locked_down(each_set: tuple[str, Rendered]) -> None:
    _, rendered = each_set
    problems = []
    for doc, spec in rendered.workloads():
        pod_ctx = spec.get("securityContext", {})
        if spec.get("automountServiceAccountToken") is not False:
            problems.append(f"{doc['kind']}/{doc['metadata']['name']}: service account token mounted")
        for c in _containers(spec):
            ctx = c.get("securityContext", {})
            where = _where(doc, c)
            if ctx.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: privilege escalation allowed")
            if ctx.get("readOnlyRootFilesystem") is not True:
                problems.append(f"{where}: writable root filesystem")
            if "ALL" not in ctx.get("capabilities", {}).get("drop", []) or ctx["capabilities"].get("add"):
                problems.append(f"{where}: capabilities not all dropped")
            if not (ctx.get("runAsNonRoot") or pod_ctx.get("runAsNonRoot")):
                problems.append(f"{where}: may run as root")
            if (ctx.get("runAsUser", pod_ctx.get("runAsUser")) or 0) < 1:
                problems.append(f"{where}: no non-root user id")
            seccomp = ctx.get("seccompProfile", pod_ctx.get("seccompProfile", {}))
            if seccomp.get("type") != "RuntimeDefault":
                problems.append(f"{where}: seccomp not RuntimeDefault")
            if ctx.get("privileged"):
                problems.append(f"{where}: privileged")
    assert problems == []


def test_every_container_has_resources(each_set: tuple[str, Rendered]) -> None:
    _, rendered = each_set
    problems = []
    for doc, spec in rendered.workloads():
        for c in _containers(spec):
            res = c.get("resources", {})
            if not {"cpu", "memory"} <= set(res.get("requests", {})):
                problems.append(f"{_where(doc, c)}: cpu and memory requests missing")
            if "memory" not in res.get("limits", {}):
                problems.append(f"{_where(doc, c)}: no memory limit")
    assert problems == []


def test_long_running_containers_have_all_three_probes(each_set: tuple[str, Rendered]) -> None:
    _, rendered = each_set
    problems = []
    for doc, spec in rendered.workloads():
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for c in spec["containers"]:
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                if probe not in c:
                    problems.append(f"{_where(doc, c)}: no {probe}")
    assert problems == []


def test_services_probe_their_health_endpoints(default: Rendered) -> None:
    for component in [*PYTHON_COMPONENTS, "frontend"]:
        (c,) = default.get("Deployment", name_of(component))["spec"]["template"]["spec"]["containers"]
        port_names = {p["name"] for p in c["ports"]}
        assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
        assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
        assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert c[probe]["httpGet"]["port"] in port_names


def test_writable_tmp_under_read_only_root(each_set: tuple[str, Rendered]) -> None:
    _, rendered = each_set
    for doc, spec in rendered.workloads():
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in spec["containers"]:
            if doc["kind"] == "Pod":
                continue  # helm test pods only run curl
            tmp = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/tmp"]  # noqa: S108
            assert tmp, f"{_where(doc, c)} has no /tmp"
            assert "emptyDir" in volumes[tmp[0]["name"]]


@pytest.mark.parametrize("values_set", ["default", "prod"])
def test_each_scalable_service_has_hpa_and_pdb(renderer: Renderer, values_set: str) -> None:
    rendered = renderer.values_set(values_set)
    for component in SCALABLE.values():
        name = name_of(component)
        deployment = rendered.get("Deployment", name)
        assert "replicas" not in deployment["spec"], f"{name}: replicas fight the HPA"
        hpa = rendered.get("HorizontalPodAutoscaler", name)
        assert hpa["apiVersion"] == "autoscaling/v2"
        assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
        assert hpa["spec"]["metrics"], name
        pdb = rendered.get("PodDisruptionBudget", name)
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        # A PDB of one replica with minAvailable would block every node drain.
        assert "minAvailable" not in pdb["spec"] and pdb["spec"]["maxUnavailable"] >= 1
    assert len(rendered.kinds("HorizontalPodAutoscaler")) == len(SCALABLE)


def test_tool_servers_scale_independently(default: Rendered) -> None:
    targets = [h["spec"]["scaleTargetRef"]["name"] for h in default.kinds("HorizontalPodAutoscaler")]
    assert len(targets) == len(set(targets))
    for key in ("rasterTools", "vectorTools", "knowledgeTools", "memoryTools"):
        assert name_of(SERVICES[key][0]) in targets


def test_dev_runs_one_replica_each(dev: Rendered) -> None:
    assert dev.kinds("HorizontalPodAutoscaler") == [] and dev.kinds("PodDisruptionBudget") == []
    for deployment in dev.kinds("Deployment"):
        assert deployment["spec"]["replicas"] == 1, deployment["metadata"]["name"]


def test_spread_over_nodes_and_zones(default: Rendered) -> None:
    for component in SCALABLE.values():
        deployment = default.get("Deployment", name_of(component))
        constraints = deployment["spec"]["template"]["spec"]["topologySpreadConstraints"]
        keys = {c["topologyKey"] for c in constraints}
        assert keys == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        for c in constraints:
            assert c["labelSelector"]["matchLabels"].items() <= pod_labels.items()


def test_service_accounts_do_not_mount_tokens(each_set: tuple[str, Rendered]) -> None:
    _, rendered = each_set
    accounts = rendered.kinds("ServiceAccount")
    assert accounts
    assert all(a["automountServiceAccountToken"] is False for a in accounts)


IMAGE_RE = re.compile(r"^(?P<repo>[^@\s]+?):(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})(@sha256:[a-f0-9]{64})?$")


def test_every_image_is_pinned(each_set: tuple[str, Rendered]) -> None:
    _, rendered = each_set
    for doc, spec in rendered.workloads():
        for c in _containers(spec):
            match = IMAGE_RE.match(c["image"])
            assert match, f"{_where(doc, c)}: {c['image']} has no tag"
            assert match["tag"] != "latest", f"{_where(doc, c)}: latest tag"
            assert c.get("imagePullPolicy") in ("IfNotPresent", "Always", "Never")


def test_registry_and_digest_compose(renderer: Renderer) -> None:
    digest = "sha256:" + "a" * 64
    rendered = renderer.render(
        {"image": {"registry": "registry.example.com/team", "tag": "1.2.3"}, "gateway": {"image": {"digest": digest}}}
    )
    gateway = rendered.get("Deployment", name_of("chat-gateway"))["spec"]["template"]["spec"]["containers"][0]
    assert gateway["image"] == f"registry.example.com/team/stacgis/chat-gateway:1.2.3@{digest}"
    ollama = rendered.get("Deployment", name_of("ollama"))["spec"]["template"]["spec"]["containers"][0]
    assert ollama["image"].startswith("ollama/ollama:")  # third-party images keep their own registry


def _config(rendered: Rendered, component: str) -> dict[str, str]:
    data: dict[str, str] = rendered.get("ConfigMap", name_of(component))["data"]
    return data


def test_settings_reach_each_service(default: Rendered) -> None:
    for _key, (component, prefix, _, port) in SERVICES.items():
        config = _config(default, component)
        assert config[f"{prefix}HOST"] == "0.0.0.0"
        assert config[f"{prefix}PORT"] == str(port)
        assert config[f"{prefix}LOG_LEVEL"] == "INFO"
        assert config[f"{prefix}INTERNAL_TOKEN_AUDIENCE"] == "stacgis-internal"
        assert isinstance(json.loads(config[f"{prefix}ALLOWED_HOSTS"]), list)
        assert all(k.startswith(prefix) for k in config), component
        deployment = default.get("Deployment", name_of(component))
        (c,) = deployment["spec"]["template"]["spec"]["containers"]
        assert c["ports"][0]["containerPort"] == port
        assert c["envFrom"] == [{"configMapRef": {"name": name_of(component)}}]
        env = env_of(c)
        _, files = secret_files(deployment["spec"]["template"]["spec"], c)
        assert files[f"{prefix}INTERNAL_TOKEN_SECRET"] == SecretFile("demo-stacgis", "internal-token-secret", False)
        assert (f"{prefix}DATABASE_URL" in env) == (component in DATABASE_COMPONENTS)
        assert (f"{prefix}DATABASE_PASSWORD" in files) == (component in DATABASE_COMPONENTS)
    gateway = _config(default, "chat-gateway")
    assert gateway["GATEWAY_ORCHESTRATOR_URL"] == f"http://{name_of('agent-orchestrator')}:8001"
    assert gateway["GATEWAY_AUTH_MODE"] == "anonymous"
    orchestrator = _config(default, "agent-orchestrator")
    servers = json.loads(orchestrator["ORCHESTRATOR_MCP_SERVERS"])
    assert json.loads(gateway["GATEWAY_MCP_SERVERS"]) == servers  # outside MCP clients: the same servers
    assert servers == {
        "raster": f"http://{name_of('raster-tools')}:8011/mcp",
        "vector": f"http://{name_of('vector-tools')}:8012/mcp",
        "knowledge": f"http://{name_of('knowledge-tools')}:8013/mcp",
        "memory": f"http://{name_of('memory-tools')}:8014/mcp",
    }
    assert orchestrator["ORCHESTRATOR_LLM_BASE_URL"] == f"http://{name_of('ollama')}:11434"
    raster = _config(default, "raster-tools")
    # Tile URLs follow the host each browser used: no fixed origin unless asked for.
    assert "RASTER_PUBLIC_BASE_URL" not in raster
    assert json.loads(raster["RASTER_TRUSTED_PROXIES"]) == ["0.0.0.0/0", "::/0"]
    assert json.loads(raster["RASTER_ALLOWED_LOCAL_ROOTS"]) == ["/data"]
    assert raster["RASTER_VECTOR_TOOLS_URL"] == f"http://{name_of('vector-tools')}:8012"
    assert raster["RASTER_STAC_URL"] == "/data/demo/stac/catalog.json"
    for component in ("vector-tools", "knowledge-tools", "memory-tools"):
        prefix = component.split("-")[0].upper() + "_"
        config = _config(default, component)
        assert config[f"{prefix}EMBEDDING_MODEL"] == "nomic-embed-text"
        assert config[f"{prefix}EMBEDDING_DIMENSION"] == "768"


def test_mcp_servers_accept_their_service_host_names(default: Rendered) -> None:
    for component in ("raster-tools", "vector-tools", "knowledge-tools", "memory-tools"):
        prefix = component.split("-")[0].upper() + "_"
        hosts = json.loads(_config(default, component)[f"{prefix}ALLOWED_HOSTS"])
        name = name_of(component)
        for form in (name, f"{name}.{NAMESPACE}", f"{name}.{NAMESPACE}.svc.cluster.local"):
            assert form in hosts and f"{form}:*" in hosts
        assert "*" not in hosts


def test_config_values_override_and_extend(renderer: Renderer, default: Rendered) -> None:
    rendered = renderer.render(
        {"orchestrator": {"config": {"max_steps": 12, "TOOL_TIMEOUT_SECONDS": 2.5, "EXTRA_HEADERS": {"x-team": "geo"}}}}
    )
    config = _config(rendered, "agent-orchestrator")
    assert config["ORCHESTRATOR_MAX_STEPS"] == "12"
    assert config["ORCHESTRATOR_TOOL_TIMEOUT_SECONDS"] == "2.5"
    assert json.loads(config["ORCHESTRATOR_EXTRA_HEADERS"]) == {"x-team": "geo"}

    def checksum(r: Rendered, component: str) -> str:
        annotations = r.get("Deployment", name_of(component))["spec"]["template"]["metadata"]["annotations"]
        return str(annotations["checksum/config"])

    # The changed service rolls; the others keep their pods.
    assert checksum(rendered, "agent-orchestrator") != checksum(default, "agent-orchestrator")
    assert checksum(rendered, "chat-gateway") == checksum(default, "chat-gateway")


def test_pods_carry_checksums_of_their_config_and_secrets(default: Rendered) -> None:
    for component in PYTHON_COMPONENTS:
        annotations = default.get("Deployment", name_of(component))["spec"]["template"]["metadata"]["annotations"]
        assert re.fullmatch(r"[0-9a-f]{64}", annotations["checksum/config"])
        assert re.fullmatch(r"[0-9a-f]{64}", annotations["checksum/secret"])


def test_references_resolve(each_set: tuple[str, Rendered]) -> None:
    """Every Secret, ConfigMap, ServiceAccount, claim and Service a pod names is rendered,
    unless the values declare it as provided by the user."""
    name, rendered = each_set
    external_secrets = {"prod": {"stacgis-app", "stacgis-postgresql-url", "stacgis-redis-url"}}.get(name, set())
    problems = []
    for _doc, spec in rendered.workloads():
        if (sa := spec.get("serviceAccountName")) and not rendered.has("ServiceAccount", sa):
            problems.append(f"service account {sa}")
        for v in spec.get("volumes", []):
            if "configMap" in v and not rendered.has("ConfigMap", v["configMap"]["name"]):
                problems.append(f"configmap {v['configMap']['name']}")
            claim = v.get("persistentVolumeClaim", {}).get("claimName")
            if claim and not rendered.has("PersistentVolumeClaim", claim):
                problems.append(f"claim {claim}")
        for c in _containers(spec):
            for e in c.get("envFrom", []):
                if not rendered.has("ConfigMap", e["configMapRef"]["name"]):
                    problems.append(f"configmap {e['configMapRef']['name']}")
            refs = [
                e["valueFrom"]["secretKeyRef"] for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})
            ]
            if "STACGIS_SECRETS_DIR" in env_of(c):
                files = secret_files(spec, c)[1].values()
                refs += [{"name": f.secret, "key": f.key, "optional": f.optional} for f in files]
            for ref in refs:
                if ref.get("optional") or ref["name"] in external_secrets:
                    continue
                if not rendered.has("Secret", ref["name"]):
                    problems.append(f"secret {ref['name']}")
                elif ref["key"] not in rendered.get("Secret", ref["name"])["data"]:
                    problems.append(f"secret key {ref['name']}/{ref['key']}")
    for service in rendered.kinds("Service"):
        selector = service["spec"]["selector"]
        matching = [
            d
            for d, _ in rendered.workloads()
            if d["kind"] in ("Deployment", "StatefulSet")
            and selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]
        if len(matching) != 1:
            problems.append(f"service {service['metadata']['name']} selects {len(matching)} workloads")
            continue
        ports = {p["name"] for p in matching[0]["spec"]["template"]["spec"]["containers"][0]["ports"]}
        for p in service["spec"]["ports"]:
            if p["targetPort"] not in ports:
                problems.append(f"service {service['metadata']['name']} targets missing port {p['targetPort']}")
    assert problems == []


def test_existing_secret_replaces_the_chart_secret(renderer: Renderer) -> None:
    rendered = renderer.render({"secrets": {"existingSecret": "my-app-secrets"}})
    assert not rendered.has("Secret", "demo-stacgis")
    spec = rendered.get("Deployment", name_of("chat-gateway"))["spec"]["template"]["spec"]
    _, files = secret_files(spec, spec["containers"][0])
    for var in ("GATEWAY_INTERNAL_TOKEN_SECRET", "GATEWAY_COOKIE_SECRET"):
        assert files[var].secret == "my-app-secrets"


def test_explicit_secrets_are_used(renderer: Renderer) -> None:
    import base64

    rendered = renderer.render({"secrets": {"internalTokenSecret": "k" * 40, "llmApiKey": "sk-test"}})
    data = rendered.get("Secret", "demo-stacgis")["data"]
    assert base64.b64decode(data["internal-token-secret"]).decode() == "k" * 40
    assert base64.b64decode(data["llm-api-key"]).decode() == "sk-test"
    assert len(base64.b64decode(data["cookie-secret"])) == 40


def test_bundled_stores_give_urls_without_passwords_and_the_passwords_as_files(default: Rendered) -> None:
    spec = default.get("Deployment", name_of("chat-gateway"))["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    env = env_of(c)
    _, files = secret_files(spec, c)
    # The services connect as the application role (its password under its own key), which
    # stacgis_common.settings puts into the URL.
    assert env["GATEWAY_DATABASE_URL"]["value"] == f"postgresql://stacgis_app@{name_of('postgresql')}:5432/stacgis"
    assert files["GATEWAY_DATABASE_PASSWORD"] == SecretFile(name_of("postgresql"), "app-password", False)
    assert env["GATEWAY_REDIS_URL"]["value"] == f"redis://{name_of('redis')}:6379/0"
    assert files["GATEWAY_REDIS_PASSWORD"] == SecretFile(name_of("redis"), "password", False)
    postgres = default.get("StatefulSet", name_of("postgresql"))
    assert postgres["spec"]["template"]["spec"]["containers"][0]["image"].startswith("pgvector/pgvector:")
    assert postgres["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "20Gi"
    redis = default.get("StatefulSet", name_of("redis"))
    assert "--appendonly yes" in redis["spec"]["template"]["spec"]["containers"][0]["command"][2]


def test_external_stores_replace_the_bundled_ones(prod: Rendered) -> None:
    assert not prod.kinds("StatefulSet")
    spec = prod.get("Deployment", name_of("chat-gateway"))["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    # Their whole URLs are files; nothing about them in the environment.
    assert not {"GATEWAY_DATABASE_URL", "GATEWAY_REDIS_URL"} & set(env_of(c))
    _, files = secret_files(spec, c)
    assert files["GATEWAY_DATABASE_URL"] == SecretFile("stacgis-postgresql-url", "database-url", False)
    assert files["GATEWAY_REDIS_URL"] == SecretFile("stacgis-redis-url", "redis-url", False)
    assert not {"GATEWAY_DATABASE_PASSWORD", "GATEWAY_REDIS_PASSWORD"} & set(files)


def test_external_store_urls_are_required(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmError, match=r"postgresql\.external\.url"):
        chart.render(values={"postgresql": {"enabled": False}}, name="demo", namespace=NAMESPACE)
    with pytest.raises(helm_python.HelmError, match=r"redis\.external"):
        chart.render(values={"redis": {"enabled": False}}, name="demo", namespace=NAMESPACE)


def _ollama(rendered: Rendered) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = rendered.get("Deployment", name_of("ollama"))["spec"]["template"]["spec"]
    return spec, spec["containers"][0]


@pytest.mark.parametrize("values_set", ["default", "prod"])
def test_ollama_runs_on_a_gpu_node(renderer: Renderer, values_set: str) -> None:
    spec, c = _ollama(renderer.values_set(values_set))
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"  # a string quantity, as the API server returns it
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert spec["nodeSelector"]["nvidia.com/gpu.present"] == "true"
    env = env_of(c)
    assert env["OLLAMA_KEEP_ALIVE"]["value"] and int(env["OLLAMA_NUM_PARALLEL"]["value"]) >= 1
    assert env["OLLAMA_MODELS"]["value"] == "/models"
    assert c["startupProbe"]["httpGet"]["path"] == "/api/version"
    assert rendered_claim(spec) == name_of("ollama")


def rendered_claim(spec: dict[str, Any]) -> str | None:
    models = next(v for v in spec["volumes"] if v["name"] == "models")
    claim: str | None = models.get("persistentVolumeClaim", {}).get("claimName")
    return claim


def test_ollama_mig_slice_and_runtime_class(renderer: Renderer) -> None:
    rendered = renderer.render(
        {"ollama": {"runtimeClassName": "nvidia", "gpu": {"resourceName": "nvidia.com/mig-1g.10gb", "count": 2}}}
    )
    spec, c = _ollama(rendered)
    assert c["resources"]["limits"]["nvidia.com/mig-1g.10gb"] == "2"
    assert "nvidia.com/gpu" not in c["resources"]["limits"]
    assert spec["runtimeClassName"] == "nvidia"


def test_ollama_cpu_mode_on_dev(dev: Rendered) -> None:
    spec, c = _ollama(dev)
    assert not any("gpu" in k for k in c["resources"].get("limits", {}))
    assert "tolerations" not in spec and "nodeSelector" not in spec
    assert dev.get("Deployment", name_of("ollama"))["spec"]["strategy"]["type"] == "Recreate"


def test_ollama_model_volume_survives_uninstall(default: Rendered) -> None:
    claim = default.get("PersistentVolumeClaim", name_of("ollama"))
    assert claim["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert "helm.sh/hook" not in claim["metadata"].get("annotations", {})


def test_external_llm_replaces_ollama(renderer: Renderer, chart: helm_python.Chart) -> None:
    rendered = renderer.render(
        {"ollama": {"enabled": False}, "llm": {"provider": "openai", "baseUrl": "https://llm.example.com/v1"}}
    )
    assert not rendered.has("Deployment", name_of("ollama"))
    assert not rendered.has("Job", name_of("model-pull"))
    config = _config(rendered, "agent-orchestrator")
    assert config["ORCHESTRATOR_LLM_PROVIDER"] == "openai"
    assert config["ORCHESTRATOR_LLM_BASE_URL"] == "https://llm.example.com/v1"
    assert _config(rendered, "memory-tools")["MEMORY_EMBEDDING_BASE_URL"] == "https://llm.example.com/v1"
    with pytest.raises(helm_python.HelmError, match=r"llm\.baseUrl"):
        chart.render(values={"ollama": {"enabled": False}}, name="demo", namespace=NAMESPACE)


def test_model_pull_is_a_hook_for_the_configured_models(default: Rendered, prod: Rendered) -> None:
    job = default.get("Job", name_of("model-pull"))
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    env = env_of(job["spec"]["template"]["spec"]["containers"][0])
    assert env["MODELS"]["value"] == "qwen3:8b nomic-embed-text"
    assert env["OLLAMA_HOST"]["value"] == f"http://{name_of('ollama')}:11434"
    prod_env = env_of(prod.get("Job", name_of("model-pull"))["spec"]["template"]["spec"]["containers"][0])
    assert prod_env["MODELS"]["value"] == "qwen3:8b nomic-embed-text"


def test_ingress_streams_sse(each_set: tuple[str, Rendered]) -> None:
    name, rendered = each_set
    (ingress,) = rendered.kinds("Ingress")
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert annotations["nginx.ingress.kubernetes.io/proxy-request-buffering"] == "off"
    assert annotations["nginx.ingress.kubernetes.io/proxy-http-version"] == "1.1"
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-send-timeout"]) >= 3600
    assert ingress["spec"]["ingressClassName"] == "nginx"
    for rule in ingress["spec"]["rules"]:
        routes = {p["path"]: p["backend"]["service"]["name"] for p in rule["http"]["paths"]}
        assert routes == {
            "/": name_of("frontend"),
            "/api": name_of("chat-gateway"),
            "/mcp": name_of("chat-gateway"),
            "/.well-known/oauth-protected-resource": name_of("chat-gateway"),
            "/tiles": name_of("raster-tools"),
        }
    if name == "prod":
        assert ingress["spec"]["tls"] == [{"secretName": "stacgis-tls", "hosts": ["stacgis.example.com"]}]
        assert annotations["cert-manager.io/cluster-issuer"] == "letsencrypt"


def _csp_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith("add_header"))


def test_frontend_serves_the_content_security_policy(default: Rendered, renderer: Renderer) -> None:
    # The image's nginx includes the policy from the folder the chart mounts its ConfigMap on.
    server = (REPO / "frontend" / "nginx.conf").read_text()
    assert server.count("include /etc/nginx/stacgis/csp.conf;") == 2
    deployment = default.get("Deployment", name_of("frontend"))
    spec = deployment["spec"]["template"]["spec"]
    (mount,) = [m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "csp"]
    assert mount["mountPath"] == "/etc/nginx/stacgis"
    (volume,) = [v for v in spec["volumes"] if v["name"] == "csp"]
    config = default.get("ConfigMap", volume["configMap"]["name"])["data"]["csp.conf"]
    # Without extra style hosts the chart's policy is the image's own (frontend/csp.conf).
    assert _csp_line(config) == _csp_line((REPO / "frontend" / "csp.conf").read_text())

    hosts = ["tiles.example.org", "*.maptiler.com"]
    rendered = renderer.render({"orchestrator": {"mapStyleHosts": hosts}})
    config = rendered.get("ConfigMap", f"{name_of('frontend')}-csp")["data"]["csp.conf"]
    directives = dict(d.strip().split(" ", 1) for d in _csp_line(config).split('"')[1].split(";"))
    assert directives["img-src"].split()[-2:] == hosts
    assert directives["connect-src"] == "'self' " + " ".join(hosts)
    assert directives["script-src"] == "'self'"
    assert json.loads(_config(rendered, "agent-orchestrator")["ORCHESTRATOR_MAP_STYLE_HOSTS"]) == hosts
    # A policy change rolls the frontend pods.
    before = deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    after = rendered.get("Deployment", name_of("frontend"))["spec"]["template"]["metadata"]["annotations"]
    assert after["checksum/config"] != before


def test_tiles_follow_the_browsers_host_unless_a_public_url_is_set(prod: Rendered, renderer: Renderer) -> None:
    # Behind the TLS ingress raster-tools builds https URLs from X-Forwarded-Proto/-Host.
    assert "RASTER_PUBLIC_BASE_URL" not in _config(prod, "raster-tools")
    fixed = renderer.render({"rasterTools": {"publicBaseUrl": "https://tiles.example.com"}})
    assert _config(fixed, "raster-tools")["RASTER_PUBLIC_BASE_URL"] == "https://tiles.example.com"


def test_gateway_api_route(renderer: Renderer, chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmError, match=r"httpRoute\.parentRefs"):
        chart.render(values={"httpRoute": {"enabled": True}}, name="demo", namespace=NAMESPACE)
    rendered = renderer.render(
        {
            "ingress": {"enabled": False},
            "httpRoute": {
                "enabled": True,
                "hostnames": ["stacgis.example.com"],
                "parentRefs": [{"name": "public", "namespace": "gateways"}],
            },
        }
    )
    assert not rendered.kinds("Ingress")
    (route,) = rendered.kinds("HTTPRoute")
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"
    backends = {r["matches"][0]["path"]["value"]: r["backendRefs"][0]["name"] for r in route["spec"]["rules"]}
    assert backends == {
        "/": name_of("frontend"),
        "/api": name_of("chat-gateway"),
        "/mcp": name_of("chat-gateway"),
        "/tiles": name_of("raster-tools"),
    }
    mcp_rule = next(r for r in route["spec"]["rules"] if r["matches"][0]["path"]["value"] == "/mcp")
    assert [m["path"]["value"] for m in mcp_rule["matches"]] == ["/mcp", "/.well-known/oauth-protected-resource"]
    api_rule = next(r for r in route["spec"]["rules"] if r["matches"][0]["path"]["value"] == "/api")
    assert api_rule["timeouts"]["request"] == "3600s"


def test_migrations_run_as_a_hook_per_database_service(default: Rendered, prod: Rendered) -> None:
    job = default.get("Job", name_of("migrations"))
    # Bundled Postgres does not exist before the first install.
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,pre-upgrade"
    containers = job["spec"]["template"]["spec"]["containers"]
    assert {c["name"] for c in containers} == DATABASE_COMPONENTS
    for c in containers:
        module = next(v[2] for v in SERVICES.values() if v[0] == c["name"])
        assert c["command"] == ["python", "-m", f"{module}.migrate"]
        prefix = next(v[1] for v in SERVICES.values() if v[0] == c["name"])
        assert f"{prefix}DATABASE_URL" in env_of(c)
        assert f"{prefix}DATABASE_PASSWORD" in secret_files(job["spec"]["template"]["spec"], c)[1]
        assert env_of(c).get(f"{prefix}EMBEDDING_DIMENSION", {"value": "768"})["value"] == "768"
    prod_job = prod.get("Job", name_of("migrations"))
    assert prod_job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"


def test_demo_data_builds_before_raster_tools_start(default: Rendered, prod: Rendered) -> None:
    job = default.get("Job", name_of("data-builder"))
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install"
    claim = default.get("PersistentVolumeClaim", name_of("raster-data"))
    assert claim["metadata"]["annotations"]["helm.sh/hook"] == "pre-install"
    assert int(claim["metadata"]["annotations"]["helm.sh/hook-weight"]) < int(
        job["metadata"]["annotations"]["helm.sh/hook-weight"]
    )
    (c,) = job["spec"]["template"]["spec"]["containers"]
    assert "python -m stacgis_raster.demo_data" in c["command"][2]
    assert c["args"][c["args"].index("--out") + 1] == "/data/demo"
    raster = default.get("Deployment", name_of("raster-tools"))["spec"]["template"]["spec"]
    mount = next(m for m in raster["containers"][0]["volumeMounts"] if m["mountPath"] == "/data")
    assert mount["readOnly"] is True
    assert prod.get("PersistentVolumeClaim", name_of("raster-data"))["spec"]["accessModes"] == ["ReadWriteMany"]


def test_dataset_loaders_run_after_models_are_pulled(default: Rendered, prod: Rendered) -> None:
    pull = int(default.get("Job", name_of("model-pull"))["metadata"]["annotations"]["helm.sh/hook-weight"])
    for component, module in (("vector-load", "stacgis_vector.load"), ("knowledge-ingest", "stacgis_knowledge.ingest")):
        job = default.get("Job", name_of(component))
        assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
        assert int(job["metadata"]["annotations"]["helm.sh/hook-weight"]) > pull
        assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["python", "-m", module]
        assert not prod.has("Job", name_of(component))


def test_helm_tests_check_every_service_and_capacity(default: Rendered) -> None:
    pods = default.kinds("Pod")
    assert all(p["metadata"]["annotations"]["helm.sh/hook"] == "test" for p in pods)
    urls = {p["spec"]["containers"][0]["command"][-1] for p in pods}
    expected = {f"http://{name_of(c)}:{port}/readyz" for c, _, _, port in SERVICES.values()}
    expected.add(f"http://{name_of('frontend')}:8080/readyz")
    expected.add(f"http://{name_of('chat-gateway')}:8000/api/v1/chat/capacity")
    assert urls == expected
    for p in pods:
        assert "--fail-with-body" in p["spec"]["containers"][0]["command"]
