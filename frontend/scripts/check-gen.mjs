// Regenerates the TypeScript types from proto/ into a temporary folder and
// compares them with the committed src/gen: any difference fails.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

export function diffGenerated() {
  const out = mkdtempSync(join(tmpdir(), "stacgis-gen-"));
  try {
    const buf = join(root, "node_modules", ".bin", "buf");
    execFileSync(buf, ["generate", join(root, "..", "proto"), "--template", join(root, "buf.gen.yaml"), "-o", out], {
      cwd: root,
      env: { ...process.env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}` },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const committed = join(root, "src", "gen");
    const fresh = join(out, "src", "gen");
    const names = new Set([...files(committed).map((f) => relative(committed, f)), ...files(fresh).map((f) => relative(fresh, f))]);
    const problems = [];
    for (const name of [...names].sort()) {
      let a = null;
      let b = null;
      try {
        a = readFileSync(join(committed, name), "utf8");
      } catch {
        /* missing */
      }
      try {
        b = readFileSync(join(fresh, name), "utf8");
      } catch {
        /* missing */
      }
      if (a === null) problems.push(`${name}: generated but not committed`);
      else if (b === null) problems.push(`${name}: committed but no longer generated`);
      else if (a !== b) problems.push(`${name}: differs from what the proto generates`);
    }
    return problems;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const problems = diffGenerated();
  if (problems.length > 0) {
    console.error(`src/gen is stale; run \`npm run gen\`:\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log("src/gen matches proto/");
}
