/**
 * The embedding surface from outside the workspace (docs/embedding.md): the packages packed
 * with `pnpm pack`, installed with npm into an empty folder beside a copy of
 * examples/embedded-service, which type-checks under strict and runs its scenario on the
 * memory layers, on PGlite, and on PostgreSQL (a fresh database; required under CI).
 */
import { execFile } from "node:child_process"
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { freshDatabaseUrl, probeTestServer, testServerUrl } from "@intake/postgres/testing"
import { Effect, Exit, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { packEmbedding } from "../../scripts/pack-embedding.mjs"

const run = promisify(execFile)
const exampleDir = join(import.meta.dirname, "..", "embedded-service")

/** The fresh database's URL when PostgreSQL answers; under CI a missing server fails the run. */
const postgresDatabase = async (scope: Scope.CloseableScope): Promise<string | undefined> => {
  const probe = await probeTestServer()
  if (probe._tag === "Left") {
    const message = `PostgreSQL is unreachable at ${testServerUrl()} (${probe.left})`
    if (process.env.CI === "true") throw new Error(`${message}; CI needs it.`)
    console.warn(`${message}: the example runs on memory and PGlite only.`)
    return undefined
  }
  const database = await Effect.runPromise(Scope.extend(freshDatabaseUrl(), scope))
  return database.url
}

describe("examples/embedded-service on the packed packages", () => {
  const host = mkdtempSync(join(tmpdir(), "intake-embedding-"))
  const scope = Effect.runSync(Scope.make())

  beforeAll(async () => {
    packEmbedding(join(host, "packs"))
    for (const entry of ["package.json", "tsconfig.json", "src"])
      cpSync(join(exampleDir, entry), join(host, entry), { recursive: true })
    // Offline for whatever npm's cache already holds; the tarballs themselves are local files.
    await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], {
      cwd: host
    })
  })

  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    rmSync(host, { recursive: true, force: true })
  })

  it("type-checks under strict and runs on memory, PGlite and PostgreSQL, receiving each signed delivery", async () => {
    await run(
      process.execPath,
      [join(host, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"],
      {
        cwd: host
      }
    )
    const databaseUrl = await postgresDatabase(scope)
    const { stdout } = await run(process.execPath, ["dist/main.js"], {
      cwd: host,
      env: { ...process.env, DATABASE_URL: databaseUrl ?? "" }
    })
    const stores = databaseUrl === undefined ? ["memory", "PGlite"] : ["memory", "PGlite", "PostgreSQL"]
    for (const store of stores)
      expect(stdout).toMatch(
        new RegExp(
          `${store}: submission sub_\\w+ read back; submission.completed delivered, signature verified`
        )
      )
  })

  it("resolves one copy of effect, the host's: every Intake package has effect and @effect/* as peers", async () => {
    const { stdout } = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { createRequire } = await import("node:module")
const paths = ["@intake/domain", "@intake/postgres", "@intake/delivery"].map((name) =>
  createRequire(createRequire(import.meta.url).resolve(name + "/package.json")).resolve("effect"))
console.log(JSON.stringify([...new Set([createRequire(import.meta.url).resolve("effect"), ...paths])]))`
      ],
      { cwd: host }
    )
    expect(JSON.parse(stdout)).toHaveLength(1)
    for (const name of ["delivery", "domain", "memory", "node", "postgres"]) {
      const manifest = JSON.parse(
        readFileSync(join(host, "node_modules", "@intake", name, "package.json"), "utf8")
      ) as { dependencies?: Record<string, string>; peerDependencies?: Record<string, string> }
      expect(
        Object.keys(manifest.dependencies ?? {}).filter((dependency) => /^@?effect\b/.test(dependency))
      ).toEqual([])
      expect(manifest.peerDependencies?.effect).toBe("^3.22.4")
    }
  })
})
