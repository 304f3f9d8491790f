// Validates custom resources against their CRD schemas (kubernetes-models), for tests/chart.
// stdin: a JSON array of manifests. stdout: a JSON array with, per manifest, the list of errors (empty: valid).
// A kind without a known schema is an error, so a new custom resource cannot pass unchecked.
import { readFileSync } from "node:fs";

const MODELS = {
  "monitoring.coreos.com/v1": ["@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1", ["ServiceMonitor", "PrometheusRule", "PodMonitor"]],
  "gateway.networking.k8s.io/v1": ["@kubernetes-models/gateway-api/gateway.networking.k8s.io/v1", ["HTTPRoute", "GRPCRoute", "Gateway"]],
};

async function check(manifest) {
  const known = MODELS[manifest.apiVersion];
  if (!known || !known[1].includes(manifest.kind)) {
    return [`no schema for ${manifest.apiVersion} ${manifest.kind}`];
  }
  const module = await import(`${known[0]}/${manifest.kind}`);
  try {
    new module[manifest.kind](manifest).validate();
    return [];
  } catch (error) {
    return [String(error.message)];
  }
}

const manifests = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const manifest of manifests) {
  results.push(await check(manifest));
}
process.stdout.write(JSON.stringify(results));
