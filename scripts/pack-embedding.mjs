/**
 * `pnpm pack:embedding [destination]`: builds the packages an embedding service installs
 * (docs/embedding.md) to dist/ and packs each with `pnpm pack` into `destination` (default
 * examples/embedded-service/packs). pnpm applies each package's publishConfig (exports to
 * dist/) and turns its workspace:* dependencies into versions.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"

const root = join(import.meta.dirname, "..")

/** In dependency order: each one's build finds the declarations of those before it. */
export const embeddingPackages = ["domain", "node", "memory", "postgres", "redis", "delivery"]

export const packEmbedding = (destination) => {
  mkdirSync(destination, { recursive: true })
  // One incremental build of every package (project references), then packs that find it done.
  execFileSync(
    "pnpm",
    ["exec", "tsc", "-b", ...embeddingPackages.map((name) => `packages/${name}/tsconfig.build.json`)],
    { cwd: root, stdio: "inherit" }
  )
  // The build is done: one pnpm for every pack, without each package's prepack build.
  execFileSync(
    "pnpm",
    [
      "--config.ignore-scripts=true",
      "--recursive",
      ...embeddingPackages.flatMap((name) => ["--filter", `./packages/${name}`]),
      "pack",
      "--pack-destination",
      destination
    ],
    { cwd: root, stdio: ["ignore", "ignore", "inherit"] }
  )
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename))
  packEmbedding(resolve(process.argv[2] ?? join(root, "examples", "embedded-service", "packs")))
