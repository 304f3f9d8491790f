{{/*
Names and labels.
*/}}
{{- define "stacgis.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "stacgis.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "<fullname>-<component>", e.g. stacgis-chat-gateway. Args: (list $ "component") */}}
{{- define "stacgis.componentName" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%s" (include "stacgis.fullname" $root) (index . 1) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "stacgis.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "stacgis.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "stacgis.labels" -}}
{{- $root := index . 0 -}}
{{ include "stacgis.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/part-of: stacgis
{{- with $root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
The stacgis services rendered by services.yaml: values key -> component, settings
prefix, entry module and which backing stores each one uses.
*/}}
{{- define "stacgis.services" -}}
gateway:
  component: chat-gateway
  prefix: GATEWAY_
  module: stacgis_gateway
  python: true
  database: true
  redis: true
  metrics: true
orchestrator:
  component: agent-orchestrator
  prefix: ORCHESTRATOR_
  module: stacgis_orchestrator
  python: true
  redis: true
  llm: true
  embeddings: true
  metrics: true
rasterTools:
  component: raster-tools
  prefix: RASTER_
  module: stacgis_raster
  python: true
  mcp: true
  metrics: true
vectorTools:
  component: vector-tools
  prefix: VECTOR_
  module: stacgis_vector
  python: true
  mcp: true
  database: true
  embeddings: true
  metrics: true
knowledgeTools:
  component: knowledge-tools
  prefix: KNOWLEDGE_
  module: stacgis_knowledge
  python: true
  mcp: true
  database: true
  embeddings: true
  metrics: true
memoryTools:
  component: memory-tools
  prefix: MEMORY_
  module: stacgis_memory
  python: true
  mcp: true
  database: true
  embeddings: true
  metrics: true
frontend:
  component: frontend
{{- end -}}

{{/*
Image reference. Args: (list $ imageValues defaultsToAppVersion)
*/}}
{{- define "stacgis.image" -}}
{{- $root := index . 0 -}}
{{- $img := index . 1 -}}
{{- $own := index . 2 -}}
{{- $registry := "" -}}
{{- $tag := $img.tag -}}
{{- if $own -}}
{{- $registry = $root.Values.image.registry -}}
{{- $tag = $img.tag | default $root.Values.image.tag | default $root.Chart.AppVersion -}}
{{- end -}}
{{- $ref := $img.repository -}}
{{- if $registry -}}{{- $ref = printf "%s/%s" (trimSuffix "/" $registry) $ref -}}{{- end -}}
{{- $ref = printf "%s:%s" $ref (toString $tag) -}}
{{- if $img.digest -}}{{- $ref = printf "%s@%s" $ref $img.digest -}}{{- end -}}
{{- $ref -}}
{{- end -}}

{{- define "stacgis.pullPolicy" -}}
{{- $root := index . 0 -}}
{{- (index . 1).pullPolicy | default $root.Values.image.pullPolicy -}}
{{- end -}}

{{- define "stacgis.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Container security context shared by every container. */}}
{{- define "stacgis.containerSecurityContext" -}}
{{ toYaml .Values.securityContext }}
{{- end -}}

{{/* Pod security context. Args: (list $ uid) ; uid 0 means the default. */}}
{{- define "stacgis.podSecurityContext" -}}
{{- $root := index . 0 -}}
{{- $uid := index . 1 | int -}}
{{- $ctx := deepCopy $root.Values.podSecurityContext -}}
{{- if gt $uid 0 -}}
{{- $_ := set $ctx "runAsUser" $uid -}}
{{- $_ := set $ctx "runAsGroup" $uid -}}
{{- $_ := set $ctx "fsGroup" $uid -}}
{{- end -}}
{{ toYaml $ctx }}
{{- end -}}

{{/*
In-cluster URLs.
*/}}
{{- define "stacgis.svcHost" -}}
{{- $root := index . 0 -}}
{{- printf "%s.%s.svc.%s" (include "stacgis.componentName" .) $root.Release.Namespace $root.Values.clusterDomain -}}
{{- end -}}

{{- define "stacgis.ollamaUrl" -}}
{{- printf "http://%s:%v" (include "stacgis.componentName" (list . "ollama")) .Values.ollama.port -}}
{{- end -}}

{{- define "stacgis.llmBaseUrl" -}}
{{- if .Values.llm.baseUrl -}}{{ .Values.llm.baseUrl }}{{- else if .Values.ollama.enabled -}}{{ include "stacgis.ollamaUrl" . }}{{- else -}}
{{- fail "llm.baseUrl is required when ollama.enabled is false (point it at your Ollama or OpenAI-compatible server)" -}}
{{- end -}}
{{- end -}}

{{- define "stacgis.embeddingsBaseUrl" -}}
{{- if .Values.embeddings.baseUrl -}}{{ .Values.embeddings.baseUrl }}{{- else -}}{{ include "stacgis.llmBaseUrl" . }}{{- end -}}
{{- end -}}

{{/* Whether a component talks to Ollama in the release (for NetworkPolicies). */}}
{{- define "stacgis.usesBundledOllama" -}}
{{- if and .Values.ollama.enabled (or (not .Values.llm.baseUrl) (not .Values.embeddings.baseUrl)) -}}true{{- end -}}
{{- end -}}

{{- define "stacgis.serviceUrl" -}}
{{- $root := index . 0 -}}
{{- $key := index . 1 -}}
{{- $meta := index (include "stacgis.services" $root | fromYaml) $key -}}
{{- printf "http://%s:%v" (include "stacgis.componentName" (list $root $meta.component)) (index $root.Values $key).port -}}
{{- end -}}

{{/* Host header allow-list of an MCP server: its Service name in every DNS form, any port. */}}
{{- define "stacgis.allowedHosts" -}}
{{- $root := index . 0 -}}
{{- $name := include "stacgis.componentName" . -}}
{{- $ns := $root.Release.Namespace -}}
{{- $hosts := list -}}
{{- range (list $name (printf "%s.%s" $name $ns) (printf "%s.%s.svc" $name $ns) (printf "%s.%s.svc.%s" $name $ns $root.Values.clusterDomain)) -}}
{{- $hosts = append $hosts . -}}
{{- $hosts = append $hosts (printf "%s:*" .) -}}
{{- end -}}
{{- toJson $hosts -}}
{{- end -}}

{{/*
Secrets: names and generated values that survive upgrades (lookup finds the
live Secret; offline rendering generates a fresh value).
Args: (dict "root" $ "secret" name "key" key "value" explicit)
*/}}
{{- define "stacgis.secretValue" -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .secret -}}
{{- if .value -}}
{{- .value | b64enc -}}
{{- else if and $existing $existing.data (hasKey $existing.data .key) -}}
{{- index $existing.data .key -}}
{{- else -}}
{{- randAlphaNum 40 | b64enc -}}
{{- end -}}
{{- end -}}

{{- define "stacgis.appSecretName" -}}
{{- .Values.secrets.existingSecret | default (include "stacgis.fullname" .) -}}
{{- end -}}

{{- define "stacgis.postgresSecretName" -}}
{{- if .Values.postgresql.enabled -}}
{{- .Values.postgresql.auth.existingSecret | default (include "stacgis.componentName" (list . "postgresql")) -}}
{{- else -}}
{{- .Values.postgresql.external.existingSecret | default (include "stacgis.componentName" (list . "postgresql")) -}}
{{- end -}}
{{- end -}}

{{- define "stacgis.redisSecretName" -}}
{{- if .Values.redis.enabled -}}
{{- .Values.redis.auth.existingSecret | default (include "stacgis.componentName" (list . "redis")) -}}
{{- else -}}
{{- .Values.redis.external.existingSecret | default (include "stacgis.componentName" (list . "redis")) -}}
{{- end -}}
{{- end -}}

{{- define "stacgis.validate" -}}
{{- if and (not .Values.postgresql.enabled) (not .Values.postgresql.external.url) (not .Values.postgresql.external.existingSecret) -}}
{{- fail "postgresql.external.url or postgresql.external.existingSecret is required when postgresql.enabled is false" -}}
{{- end -}}
{{- $ext := .Values.postgresql.external -}}
{{- if and (not .Values.postgresql.enabled) $ext.appUsername -}}
{{- if and (not $ext.ownerUrl) (not $ext.existingSecret) -}}
{{- fail "postgresql.external.ownerUrl (or postgresql.external.existingSecret holding it under postgresql.external.ownerUrlKey) is required when postgresql.external.appUsername is set" -}}
{{- end -}}
{{- if eq $ext.ownerUrlKey $ext.urlKey -}}
{{- fail "postgresql.external.ownerUrlKey must differ from postgresql.external.urlKey: the owner's URL and the application role's are two entries" -}}
{{- end -}}
{{- if not $ext.existingSecret -}}
{{- /* The literal URLs are checked here; an existing Secret's are checked by the grants script (it refuses the owner as the application role). */ -}}
{{- $app := (urlParse $ext.url).userinfo | splitList ":" | first -}}
{{- $owner := (urlParse $ext.ownerUrl).userinfo | splitList ":" | first -}}
{{- if and $app (ne $app $ext.appUsername) -}}
{{- fail (printf "postgresql.external.url connects as %q, not as postgresql.external.appUsername %q" $app $ext.appUsername) -}}
{{- end -}}
{{- if and $owner (eq $owner $ext.appUsername) -}}
{{- fail "postgresql.external.ownerUrl must connect as the owner of the schemas, not as postgresql.external.appUsername" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (not .Values.postgresql.enabled) (not $ext.appUsername) $ext.ownerUrl -}}
{{- fail "postgresql.external.ownerUrl is used only with postgresql.external.appUsername: set it (services then connect as that role) or leave ownerUrl empty" -}}
{{- end -}}
{{- if and (not .Values.redis.enabled) (not .Values.redis.external.url) (not .Values.redis.external.existingSecret) -}}
{{- fail "redis.external.url or redis.external.existingSecret is required when redis.enabled is false" -}}
{{- end -}}
{{- if and (eq .Values.gateway.auth.mode "jwt") (not .Values.gateway.auth.jwksUrl) -}}
{{- fail "gateway.auth.jwksUrl is required when gateway.auth.mode is jwt" -}}
{{- end -}}
{{- if and (eq .Values.gateway.auth.mode "trusted-header") (not .Values.gateway.auth.trustedProxies) -}}
{{- fail "gateway.auth.trustedProxies must name the auth proxy's (or ingress controller's) addresses when gateway.auth.mode is trusted-header" -}}
{{- end -}}
{{- if and .Values.httpRoute.enabled (not .Values.httpRoute.parentRefs) -}}
{{- fail "httpRoute.parentRefs must name the Gateway the route attaches to" -}}
{{- end -}}
{{- if and .Values.ingress.tls.enabled (not .Values.ingress.hosts) -}}
{{- fail "ingress.hosts must name at least one host when ingress.tls.enabled is true" -}}
{{- end -}}
{{- $_ := include "stacgis.llmBaseUrl" . -}}
{{- end -}}

{{/*
Environment entries for the database and Redis URLs of the bundled stores, without their passwords: those are
files in the secrets directory (stacgis.secretVolume), which stacgis_common.settings puts into the URLs. An
external store's whole URL is such a file, so it has no entry here. The services get the application role, the
migrations and loads (third argument "owner") the owner. Args: (list $ prefix [role])
*/}}
{{- define "stacgis.databaseEnv" -}}
{{- $root := index . 0 -}}
{{- $prefix := index . 1 -}}
{{- $owner := and (gt (len .) 2) (eq (index . 2) "owner") -}}
{{- if $root.Values.postgresql.enabled }}
{{- $auth := $root.Values.postgresql.auth }}
- name: {{ $prefix }}DATABASE_URL
  value: {{ printf "postgresql://%s@%s:%v/%s" (ternary $auth.username $auth.appUsername $owner) (include "stacgis.componentName" (list $root "postgresql")) $root.Values.postgresql.port $auth.database | quote }}
{{- end }}
{{- end -}}

{{- define "stacgis.redisEnv" -}}
{{- $root := index . 0 -}}
{{- $prefix := index . 1 -}}
{{- if $root.Values.redis.enabled }}
- name: {{ $prefix }}REDIS_URL
  value: {{ printf "redis://%s:%v/%v" (include "stacgis.componentName" (list $root "redis")) $root.Values.redis.port $root.Values.redis.database | quote }}
{{- end }}
{{- end -}}

{{/*
The secrets of one python container as files, each named as the setting's environment variable: the internal
token key, the cookie key (gateway), the LLM / embedding API key (when the Secret has one), and the bundled
stores' passwords or the external stores' URLs (Redis for the services only, the database owner's for the
Jobs). Mounted read-only at secrets.mountPath, which STACGIS_SECRETS_DIR names (stacgis.secretsDirEnv).
Args: (list $ key volumeName [role])
*/}}
{{- define "stacgis.secretVolume" -}}
{{- $root := index . 0 -}}
{{- $key := index . 1 -}}
{{- $owner := and (gt (len .) 3) (eq (index . 3) "owner") -}}
{{- $meta := index (include "stacgis.services" $root | fromYaml) $key -}}
{{- $p := $meta.prefix -}}
{{- $pg := $root.Values.postgresql -}}
{{- $redis := $root.Values.redis -}}
- name: {{ index . 2 }}
  projected:
    # Read by the owner and the pod's fsGroup only.
    defaultMode: 0440
    sources:
      - secret:
          name: {{ include "stacgis.appSecretName" $root }}
          items:
            - key: internal-token-secret
              path: {{ $p }}INTERNAL_TOKEN_SECRET
            {{- if eq $key "gateway" }}
            - key: cookie-secret
              path: {{ $p }}COOKIE_SECRET
            {{- end }}
      {{- if or $meta.llm $meta.embeddings }}
      - secret:
          name: {{ include "stacgis.appSecretName" $root }}
          # The key exists only when secrets.llmApiKey (or the existing Secret) gives one.
          optional: true
          items:
            {{- if $meta.llm }}
            - key: llm-api-key
              path: {{ $p }}LLM_API_KEY
            {{- end }}
            {{- if $meta.embeddings }}
            - key: llm-api-key
              path: {{ $p }}EMBEDDING_API_KEY
            {{- end }}
      {{- end }}
      {{- if $meta.database }}
      - secret:
          name: {{ include "stacgis.postgresSecretName" $root }}
          items:
            {{- if $pg.enabled }}
            - key: {{ ternary $pg.auth.passwordKey $pg.auth.appPasswordKey $owner }}
              path: {{ $p }}DATABASE_PASSWORD
            {{- else }}
            - key: {{ ternary $pg.external.ownerUrlKey $pg.external.urlKey (and $owner (ne $pg.external.appUsername "")) }}
              path: {{ $p }}DATABASE_URL
            {{- end }}
      {{- end }}
      {{- if and $meta.redis (not $owner) }}
      - secret:
          name: {{ include "stacgis.redisSecretName" $root }}
          items:
            - key: {{ ternary $redis.auth.passwordKey $redis.external.urlKey $redis.enabled }}
              path: {{ $p }}{{ ternary "REDIS_PASSWORD" "REDIS_URL" $redis.enabled }}
      {{- end }}
{{- end -}}

{{- define "stacgis.secretsDirEnv" -}}
- name: STACGIS_SECRETS_DIR
  value: {{ .Values.secrets.mountPath | quote }}
{{- end -}}

{{- define "stacgis.secretMount" -}}
{{- $root := index . 0 -}}
- name: {{ index . 1 }}
  mountPath: {{ $root.Values.secrets.mountPath }}
  readOnly: true
{{- end -}}

{{/*
A volume of one Secret's keys as files, read by the owner and the pod's fsGroup only (the store's user's
group): the bundled stores' own passwords, psql's in the migrations Job. Args: (list name secretName (dict path key))
*/}}
{{- define "stacgis.secretFilesVolume" -}}
- name: {{ index . 0 }}
  secret:
    secretName: {{ index . 1 }}
    items:
      {{- range $path, $key := index . 2 }}
      - key: {{ $key }}
        path: {{ $path }}
      {{- end }}
    defaultMode: 0440
{{- end -}}

{{/*
Settings of one python service as a map of env name -> string: chart-computed
values first, then the service's `config` map on top. Args: (list $ key)
*/}}
{{- define "stacgis.configData" -}}
{{- $root := index . 0 -}}
{{- $key := index . 1 -}}
{{- $meta := index (include "stacgis.services" $root | fromYaml) $key -}}
{{- $svc := index $root.Values $key -}}
{{- $d := dict "HOST" "0.0.0.0" "PORT" $svc.port "LOG_LEVEL" $root.Values.logLevel "INTERNAL_TOKEN_AUDIENCE" $root.Values.internalToken.audience -}}
{{- if $root.Values.observability.otlpEndpoint -}}{{- $_ := set $d "OTLP_ENDPOINT" $root.Values.observability.otlpEndpoint -}}{{- end -}}
{{- if $meta.mcp -}}
{{- $_ := set $d "ALLOWED_HOSTS" (include "stacgis.allowedHosts" (list $root $meta.component) | fromJsonArray) -}}
{{- else -}}
{{- $_ := set $d "ALLOWED_HOSTS" (list "*") -}}
{{- end -}}
{{- if $meta.embeddings -}}
{{- $_ := set $d "EMBEDDING_PROVIDER" $root.Values.embeddings.provider -}}
{{- $_ := set $d "EMBEDDING_BASE_URL" (include "stacgis.embeddingsBaseUrl" $root) -}}
{{- $_ := set $d "EMBEDDING_MODEL" $root.Values.embeddings.model -}}
{{- $_ := set $d "EMBEDDING_DIMENSION" $root.Values.embeddings.dimension -}}
{{- end -}}
{{- if eq $key "gateway" -}}
{{- $_ := set $d "ORCHESTRATOR_URL" (include "stacgis.serviceUrl" (list $root "orchestrator")) -}}
{{- /* Outside MCP clients reach the tool servers through the gateway (/mcp/<name>). */ -}}
{{- $mcp := dict -}}
{{- range $name, $k := dict "raster" "rasterTools" "vector" "vectorTools" "knowledge" "knowledgeTools" "memory" "memoryTools" -}}
{{- $_ := set $mcp $name (printf "%s/mcp" (include "stacgis.serviceUrl" (list $root $k))) -}}
{{- end -}}
{{- $_ := set $d "MCP_SERVERS" $mcp -}}
{{- $_ := set $d "AUTH_MODE" $svc.auth.mode -}}
{{- $_ := set $d "MAX_CONCURRENT_RUNS" $svc.maxConcurrentRuns -}}
{{- $_ := set $d "MAX_CONCURRENT_RUNS_PER_USER" $svc.maxConcurrentRunsPerUser -}}
{{- $_ := set $d "SESSION_TTL_SECONDS" $svc.sessionTtlSeconds -}}
{{- $_ := set $d "BODY_READ_TIMEOUT_SECONDS" $svc.bodyReadTimeoutSeconds -}}
{{- $_ := set $d "BODY_DEADLINE_SECONDS" $svc.bodyDeadlineSeconds -}}
{{- /* What the UI shows as "answered by". */ -}}
{{- $_ := set $d "MODEL_LABEL" $root.Values.llm.model -}}
{{- $_ := set $d "PROVIDER_LABEL" $root.Values.llm.provider -}}
{{- if $svc.auth.jwksUrl }}{{ $_ := set $d "JWKS_URL" $svc.auth.jwksUrl }}{{ end -}}
{{- if $svc.auth.jwtIssuer }}{{ $_ := set $d "JWT_ISSUER" $svc.auth.jwtIssuer }}{{ end -}}
{{- if $svc.auth.jwtAudience }}{{ $_ := set $d "JWT_AUDIENCE" $svc.auth.jwtAudience }}{{ end -}}
{{- if eq $svc.auth.mode "trusted-header" -}}
{{- $_ := set $d "TRUSTED_USER_HEADER" $svc.auth.trustedUserHeader -}}
{{- end -}}
{{- /* Whose X-Forwarded-For (and user header) the gateway believes; see gateway.auth.trustedProxies. */ -}}
{{- if $svc.auth.trustedProxies -}}
{{- $_ := set $d "TRUSTED_PROXIES" $svc.auth.trustedProxies -}}
{{- else if $root.Values.networkPolicy.enabled -}}
{{- $_ := set $d "TRUSTED_PROXIES" (list "0.0.0.0/0" "::/0") -}}
{{- end -}}
{{- else if eq $key "orchestrator" -}}
{{- $_ := set $d "LLM_PROVIDER" $root.Values.llm.provider -}}
{{- $_ := set $d "LLM_BASE_URL" (include "stacgis.llmBaseUrl" $root) -}}
{{- $_ := set $d "LLM_MODEL" $root.Values.llm.model -}}
{{- $_ := set $d "MAX_STEPS" $svc.maxSteps -}}
{{- $_ := set $d "TOOL_TOP_K" $svc.toolTopK -}}
{{- $_ := set $d "APPROVAL_TOOLS" $svc.approvalTools -}}
{{- $_ := set $d "MAP_STYLE_HOSTS" $svc.mapStyleHosts -}}
{{- $servers := dict -}}
{{- range $name, $k := dict "raster" "rasterTools" "vector" "vectorTools" "knowledge" "knowledgeTools" "memory" "memoryTools" -}}
{{- $_ := set $servers $name (printf "%s/mcp" (include "stacgis.serviceUrl" (list $root $k))) -}}
{{- end -}}
{{- $_ := set $d "MCP_SERVERS" $servers -}}
{{- else if eq $key "rasterTools" -}}
{{- $mount := $svc.data.mountPath -}}
{{- $_ := set $d "STAC_URL" ($svc.stac.url | default (printf "%s/demo/stac/catalog.json" $mount)) -}}
{{- $_ := set $d "ALLOWED_LOCAL_ROOTS" (list $mount) -}}
{{- $_ := set $d "ALLOWED_REMOTE_HOSTS" $svc.stac.allowedRemoteHosts -}}
{{- $_ := set $d "VECTOR_TOOLS_URL" (include "stacgis.serviceUrl" (list $root "vectorTools")) -}}
{{- /* TileJSON carries the origin each browser used (Host / X-Forwarded-* from the ingress), so every
host works; a fixed URL only when asked for: one fixed host broke the others with CORS errors. */ -}}
{{- if $svc.publicBaseUrl }}{{ $_ := set $d "PUBLIC_BASE_URL" $svc.publicBaseUrl }}{{ end -}}
{{- $_ := set $d "TRUSTED_PROXIES" $svc.trustedProxies -}}
{{- end -}}
{{- range $k, $v := $svc.config -}}
{{- $_ := set $d (upper $k) $v -}}
{{- end -}}
{{- range $k, $v := $d }}
{{ printf "%s%s" $meta.prefix $k }}: {{ if or (kindIs "slice" $v) (kindIs "map" $v) }}{{ toJson $v | quote }}{{ else if and (kindIs "float64" $v) (eq (float64 (int64 $v)) $v) }}{{ int64 $v | toString | quote }}{{ else }}{{ toString $v | quote }}{{ end }}
{{- end }}
{{- end -}}

{{/* Probes on the real endpoints. Args: (list probesValues portName) */}}
{{- define "stacgis.probes" -}}
{{- $p := index . 0 -}}
{{- $port := index . 1 -}}
startupProbe:
  httpGet:
    path: /healthz
    port: {{ $port }}
  periodSeconds: {{ $p.startup.periodSeconds }}
  failureThreshold: {{ $p.startup.failureThreshold }}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ $port }}
  periodSeconds: {{ $p.liveness.periodSeconds }}
  timeoutSeconds: {{ $p.liveness.timeoutSeconds }}
  failureThreshold: {{ $p.liveness.failureThreshold }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ $port }}
  periodSeconds: {{ $p.readiness.periodSeconds }}
  timeoutSeconds: {{ $p.readiness.timeoutSeconds }}
  failureThreshold: {{ $p.readiness.failureThreshold }}
{{- end -}}

{{/* Default topology spread: nodes then zones, best effort. Args: (list $ component) */}}
{{- define "stacgis.topologySpread" -}}
{{- range (list "kubernetes.io/hostname" "topology.kubernetes.io/zone") }}
- maxSkew: 1
  topologyKey: {{ . }}
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "stacgis.selectorLabels" $ | nindent 6 }}
{{- end }}
{{- end -}}

{{/* Whether ServiceMonitor / PrometheusRule are rendered. */}}
{{- define "stacgis.monitoringEnabled" -}}
{{- if or .Values.monitoring.force (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") -}}true{{- end -}}
{{- end -}}

{{/* The stacgis service keys whose databases are migrated. */}}
{{- define "stacgis.databaseServices" -}}
{{- $out := list -}}
{{- range $key, $meta := (include "stacgis.services" . | fromYaml) -}}
{{- if $meta.database -}}{{- $out = append $out $key -}}{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* A service's settings as inline env entries (for hook Jobs, which may run before the ConfigMaps exist). Args: (list $ key) */}}
{{- define "stacgis.configEnv" -}}
{{- range $k, $v := (include "stacgis.configData" . | fromYaml) }}
- name: {{ $k }}
  value: {{ $v | quote }}
{{- end }}
{{- end -}}

{{/* Hook phases of the migrations Job: before install only when the database and its URL Secret exist before the release. */}}
{{- define "stacgis.migrationsHook" -}}
{{- if and (not .Values.postgresql.enabled) .Values.postgresql.external.existingSecret -}}
pre-install,pre-upgrade
{{- else -}}
post-install,pre-upgrade
{{- end -}}
{{- end -}}

{{/* The frontend's Content-Security-Policy: frontend/csp.conf's policy plus orchestrator.mapStyleHosts in img-src and connect-src. */}}
{{- define "stacgis.contentSecurityPolicy" -}}
{{- $hosts := join " " .Values.orchestrator.mapStyleHosts -}}
{{- $extra := ternary (printf " %s" $hosts) "" (gt (len $hosts) 0) -}}
default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:{{ $extra }}; font-src 'self' data:; connect-src 'self'{{ $extra }}; worker-src 'self' blob:; child-src 'self' blob:; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'
{{- end -}}
