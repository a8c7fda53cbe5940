// Builds dist/ twice from src/: ES modules in dist/ and CommonJS in dist/cjs/, whose
// package.json says so, for `import` and `require` alike (package.json "exports").
import { spawnSync } from "node:child_process"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const dist = join(root, "dist")
rmSync(dist, { recursive: true, force: true })
for (const config of ["tsconfig.build.json", "tsconfig.cjs.json"]) {
  // tsc comes from the PATH the package manager's `run` sets (the workspace's typescript).
  const built = spawnSync("tsc", ["-p", join(root, config)], { stdio: "inherit", shell: true })
  if (built.status !== 0) process.exit(built.status ?? 1)
}
mkdirSync(join(dist, "cjs"), { recursive: true })
writeFileSync(join(dist, "cjs", "package.json"), `${JSON.stringify({ type: "commonjs" })}\n`)
