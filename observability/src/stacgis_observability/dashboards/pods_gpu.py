"""Pods and GPU: process figures every service exports, plus Kubernetes and DCGM views in a cluster."""

from __future__ import annotations

from ..panels import DashboardSpec, PanelSpec, Query, Row, rising, sel, volume

SERVICES_JOB = 'job=~".*(chat-gateway|agent-orchestrator|raster-tools|vector-tools|knowledge-tools|memory-tools)"'
CONTAINERS = (
    'container=~"chat-gateway|agent-orchestrator|raster-tools|vector-tools|knowledge-tools|memory-tools'
    '|frontend|ollama|postgresql|redis"'
)
RATE = "[$__rate_interval]"
CPU = 'resource="cpu"'

processes = Row(
    "Service processes",
    (
        PanelSpec(
            title="CPU per service",
            description=(
                "CPU cores used by each service's Python processes, summed over replicas "
                "(process_cpu_seconds_total from prometheus_client). One core per replica is the ceiling of a "
                "single Python process."
            ),
            unit="short",
            queries=(Query(f"sum by (job) (rate({sel('process_cpu_seconds_total', SERVICES_JOB)}{RATE}))", "{{job}}"),),
            thresholds=rising(0.7, 0.9),
            width=8,
        ),
        PanelSpec(
            title="Resident memory per replica",
            description=(
                "Resident set size of each service replica (process_resident_memory_bytes). raster-tools grows "
                "with GDAL's block cache; a steady climb elsewhere suggests a leak."
            ),
            unit="bytes",
            queries=(Query(f"max by (job) ({sel('process_resident_memory_bytes', SERVICES_JOB)})", "{{job}}"),),
            thresholds=rising(768 * 2**20, 1536 * 2**20),
            width=8,
        ),
        PanelSpec(
            title="Open file descriptors",
            description=(
                "Open file descriptors over the limit, worst replica per service "
                "(process_open_fds / process_max_fds). Leaked sockets or files show up here first."
            ),
            unit="percentunit",
            queries=(
                Query(
                    f"max by (job) ({sel('process_open_fds', SERVICES_JOB)} / {sel('process_max_fds', SERVICES_JOB)})",
                    "{{job}}",
                ),
            ),
            thresholds=rising(0.5, 0.8),
            min=0,
            width=8,
        ),
    ),
)

pods = Row(
    "Pods",
    (
        PanelSpec(
            title="Container CPU over limit",
            description=(
                "CPU used by each container over its CPU limit (cAdvisor and kube-state-metrics). Near 100% the "
                "container is throttled; HPAs scale on requests, not limits."
            ),
            unit="percentunit",
            queries=(
                Query(
                    f"sum by (pod, container) (rate({sel('container_cpu_usage_seconds_total', CONTAINERS)}{RATE}))"
                    " / on (pod, container) group_left "
                    f"sum by (pod, container) ({sel('kube_pod_container_resource_limits', CONTAINERS, CPU)})",
                    "{{pod}}",
                ),
            ),
            thresholds=rising(0.8, 0.95),
            min=0,
            cluster_only="cAdvisor and kube-state-metrics",
        ),
        PanelSpec(
            title="Container memory working set",
            description=(
                "Working-set memory of each container (cAdvisor container_memory_working_set_bytes), the figure "
                "the kubelet compares to the limit before an OOM kill."
            ),
            unit="bytes",
            queries=(Query(f"sum by (pod) ({sel('container_memory_working_set_bytes', CONTAINERS)})", "{{pod}}"),),
            thresholds=rising(1 * 2**30, 2 * 2**30),
            cluster_only="cAdvisor",
        ),
        PanelSpec(
            title="Container restarts (last hour)",
            description=(
                "Restarts per container over the last hour (kube-state-metrics "
                "kube_pod_container_status_restarts_total). Repeated restarts are a crash loop: "
                "StacgisPodCrashLooping."
            ),
            unit="short",
            queries=(
                Query(
                    "sum by (pod, container) "
                    f"(increase({sel('kube_pod_container_status_restarts_total', CONTAINERS)}[1h]))",
                    "{{pod}} {{container}}",
                ),
            ),
            thresholds=rising(1, 3),
            decimals=0,
            cluster_only="kube-state-metrics",
        ),
        PanelSpec(
            title="Replicas: current vs desired",
            description=(
                "Each HorizontalPodAutoscaler's current and desired replica count (kube-state-metrics). Desired "
                "pinned at the maximum means the service needs a higher maxReplicas or more nodes."
            ),
            unit="short",
            queries=(
                Query(
                    f"sum by (horizontalpodautoscaler) ({sel('kube_horizontalpodautoscaler_status_current_replicas')})",
                    "{{horizontalpodautoscaler}} current",
                ),
                Query(
                    f"sum by (horizontalpodautoscaler) ({sel('kube_horizontalpodautoscaler_status_desired_replicas')})",
                    "{{horizontalpodautoscaler}} desired",
                ),
            ),
            thresholds=volume(10),
            decimals=0,
            cluster_only="kube-state-metrics",
        ),
    ),
)

gpu = Row(
    "GPU (Ollama)",
    (
        PanelSpec(
            title="GPU utilisation",
            description=(
                "Share of time each GPU was busy (DCGM exporter DCGM_FI_DEV_GPU_UTIL). Low utilisation with a "
                "high time to first token means requests queue elsewhere (OLLAMA_NUM_PARALLEL, the gate)."
            ),
            unit="percent",
            queries=(Query("max by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL)", "{{Hostname}} GPU {{gpu}}"),),
            thresholds=rising(80, 95),
            min=0,
            max=100,
            width=8,
            cluster_only="DCGM exporter",
        ),
        PanelSpec(
            title="GPU memory used",
            description=(
                "Frame-buffer memory in use over the total per GPU (DCGM_FI_DEV_FB_USED / (USED + FREE)). A model "
                "that does not fit is partly run on the CPU and becomes many times slower."
            ),
            unit="percentunit",
            queries=(
                Query(
                    "max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE))",
                    "{{Hostname}} GPU {{gpu}}",
                ),
            ),
            thresholds=rising(0.85, 0.95),
            min=0,
            max=1,
            width=8,
            cluster_only="DCGM exporter",
        ),
        PanelSpec(
            title="GPU temperature",
            description="GPU core temperature (DCGM_FI_DEV_GPU_TEMP); sustained values above 85 °C throttle clocks.",
            unit="celsius",
            queries=(Query("max by (Hostname, gpu) (DCGM_FI_DEV_GPU_TEMP)", "{{Hostname}} GPU {{gpu}}"),),
            thresholds=rising(75, 85),
            width=8,
            cluster_only="DCGM exporter",
        ),
    ),
)

DASHBOARD = DashboardSpec(
    uid="stacgis-pods-gpu",
    title="stacgis / Pods and GPU",
    description="Service processes, Kubernetes pods and the GPU running Ollama.",
    file_name="stacgis-pods-gpu.json",
    rows=(processes, pods, gpu),
)
