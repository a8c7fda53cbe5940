/**
 * @intake/client as it is published: `pnpm pack` (its prepack script builds dist/ for ES
 * modules and CommonJS) from a copy of the package outside the workspace, `npm install` of the
 * tarball into an empty project (offline: the client has no dependencies), then `import` and
 * `require` from there against a loopback server, and TypeScript's resolution of its types
 * from an ES module and a CommonJS file under node16 and nodenext, and under bundler.
 */
import { execFile } from "node:child_process"
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync
} from "node:fs"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { promisify } from "node:util"
import { afterAll, expect, it } from "vitest"

const run = promisify(execFile)
const packageDir = join(import.meta.dirname, "..")
const root = join(packageDir, "..", "..")
const tsc = join(root, "node_modules", ".bin", "tsc")
const work = mkdtempSync(join(tmpdir(), "intake-client-package-"))
afterAll(() => rmSync(work, { recursive: true, force: true }))

/** The package's sources in a folder of this test's own, laid out as in the repository. */
const stagePackage = () => {
  const stage = join(work, "stage", "packages", "client")
  mkdirSync(stage, { recursive: true })
  for (const entry of [
    "package.json",
    "README.md",
    "src",
    "scripts",
    "tsconfig.build.json",
    "tsconfig.cjs.json"
  ])
    cpSync(join(packageDir, entry), join(stage, entry), { recursive: true })
  cpSync(join(root, "tsconfig.base.json"), join(work, "stage", "tsconfig.base.json"))
  return stage
}

/** Uses the client both ways and prints what it saw as one JSON line. */
const RUNTIME_CHECK = `
import { createRequire } from "node:module"
import * as esm from "@intake/client"
const require = createRequire(import.meta.url)
const cjs = require("@intake/client")
const seen = {}
for (const [kind, client] of [["esm", esm], ["cjs", cjs]]) {
  const intake = new client.IntakeClient({ apiKey: "svc_live_test", baseUrl: process.env.INTAKE_URL })
  const deleted = await intake.deleteWebhook("wh_" + kind)
  const refused = await client.verifyWebhook("{}", {}, "whsec_a").catch((error) => error)
  seen[kind] = {
    deleted,
    version: client.VERSION,
    refusedTyped: refused instanceof client.WebhookVerificationError,
    exports: Object.keys(client).filter((name) => name !== "default").sort()
  }
}
seen.resolved = { cjs: require.resolve("@intake/client"), esm: import.meta.resolve("@intake/client") }
seen.separateBuilds = esm.IntakeClient !== cjs.IntakeClient
console.log(JSON.stringify(seen))
`

/** Type-checked only: what a TypeScript integrator writes, with `strict` and no casts. */
const TYPED_USE = `
import { IntakeClient, IntakeError, IntakeTimeoutError, type RetryInfo, type WebhookEvent, verifyWebhook } from "@intake/client"

const retries: Array<RetryInfo["reason"]> = []
const intake = new IntakeClient({
  apiKey: "svc_live_test",
  timeoutMs: 5_000,
  signal: new AbortController().signal,
  userAgent: "acme/1",
  maxRetryAfterSeconds: 10,
  onRetry: (retry) => {
    retries.push(retry.reason)
  }
})
export const first = async (): Promise<string | undefined> => {
  try {
    const page = await intake.listIntakeBots({ limit: 1 }, { timeoutMs: 1_000 })
    return page.intake_bots[0]?.id
  } catch (error) {
    if (error instanceof IntakeError && error.error.code === "rate_limit_exceeded") return String(error.error.details.retry_after)
    if (error instanceof IntakeTimeoutError) return String(error.timeoutMs)
    throw error
  }
}
export const verified = async (body: string, headers: Record<string, string>): Promise<string> => {
  const event: WebhookEvent = await verifyWebhook(body, headers, "whsec_c2VjcmV0", { toleranceSeconds: 60 })
  return event.type === "submission.completed" ? event.data.submission.id : event.id
}
`

const compilerOptions = (module: string, moduleResolution: string) => ({
  strict: true,
  noEmit: true,
  target: "ES2022",
  module,
  moduleResolution,
  // No @types/node: the client's types stand on the standard library and the DOM's fetch types.
  lib: ["ES2022", "DOM"],
  types: []
})

it("packs into a tarball that installs with npm outside the workspace, and imports, requires and type-checks there", async () => {
  const stage = stagePackage()
  // From the repository's folder, so the pinned pnpm runs; -C packs the staged copy.
  const path = [join(root, "node_modules", ".bin"), process.env.PATH ?? ""].join(delimiter)
  await run("pnpm", ["-C", stage, "pack", "--pack-destination", work], {
    cwd: packageDir,
    env: { ...process.env, PATH: path }
  })
  const tarball = readdirSync(work).find((name) => name.endsWith(".tgz"))
  expect(tarball).toBe("intake-client-1.0.0.tgz")

  const consumer = join(work, "consumer")
  mkdirSync(consumer)
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true }))
  await run(
    "npm",
    [
      "install",
      "--offline",
      "--no-audit",
      "--no-fund",
      "--cache",
      join(work, "npm-cache"),
      join(work, tarball!)
    ],
    { cwd: consumer }
  )
  const installed = join(consumer, "node_modules", "@intake", "client")
  const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"))
  expect(manifest).not.toHaveProperty("private")
  expect(manifest).not.toHaveProperty("devDependencies")
  expect(manifest).not.toHaveProperty("dependencies")
  expect(existsSync(join(installed, "README.md"))).toBe(true)
  expect(readdirSync(installed).sort()).toEqual(["README.md", "dist", "package.json"])

  // At run time: ES module and CommonJS, each calling a loopback server.
  const server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "application/json" })
    response.end(
      JSON.stringify({ success: true, data: { id: request.url?.split("/").at(-1), deleted: true } })
    )
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  writeFileSync(join(consumer, "check.mjs"), RUNTIME_CHECK)
  const { stdout } = await run(process.execPath, ["check.mjs"], {
    cwd: consumer,
    env: { ...process.env, INTAKE_URL: `http://127.0.0.1:${port}` }
  }).finally(() => server.close())
  const seen = JSON.parse(stdout.trim())
  for (const kind of ["esm", "cjs"]) {
    expect(seen[kind].deleted).toEqual({ id: `wh_${kind}`, deleted: true })
    expect(seen[kind].version).toBe(manifest.version)
    expect(seen[kind].refusedTyped).toBe(true)
    expect(seen[kind].exports).toEqual(
      expect.arrayContaining(["IntakeClient", "IntakeError", "verifyWebhook"])
    )
  }
  expect(seen.cjs.exports).toEqual(seen.esm.exports)
  expect(seen.resolved.cjs).toMatch(/dist[\\/]cjs[\\/]index\.js$/)
  expect(seen.resolved.esm).toMatch(/\/dist\/index\.js$/)
  expect(seen.separateBuilds).toBe(true)

  // Types: an ES module (.mts) and a CommonJS file (.cts) under node16 and nodenext, a .ts under bundler.
  writeFileSync(join(consumer, "use-esm.mts"), TYPED_USE)
  writeFileSync(join(consumer, "use-cjs.cts"), TYPED_USE)
  writeFileSync(join(consumer, "use-bundler.ts"), TYPED_USE)
  const projects = [
    ["node16", ["use-esm.mts", "use-cjs.cts"], compilerOptions("node16", "node16")],
    ["nodenext", ["use-esm.mts", "use-cjs.cts"], compilerOptions("nodenext", "nodenext")],
    ["bundler", ["use-bundler.ts"], compilerOptions("esnext", "bundler")]
  ] as const
  for (const [name, files, options] of projects) {
    writeFileSync(
      join(consumer, `tsconfig.${name}.json`),
      JSON.stringify({ compilerOptions: options, files })
    )
    const { stdout: explained } = await run(tsc, ["-p", `tsconfig.${name}.json`, "--explainFiles"], {
      cwd: consumer
    }).catch((error: { stdout?: string }) => {
      throw new Error(`tsc (${name}) failed:\n${error.stdout ?? String(error)}`)
    })
    // Each kind of file reads the declarations of its own build.
    expect(explained, name).toMatch(/node_modules\/@intake\/client\/dist\/index\.d\.ts/)
    if (name !== "bundler")
      expect(explained, name).toMatch(/node_modules\/@intake\/client\/dist\/cjs\/index\.d\.ts/)
  }
}, 180_000)
