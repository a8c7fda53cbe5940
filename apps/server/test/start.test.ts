/** `pnpm start`'s entry point, run as a child process the way the script runs it. */
import type { ChildProcess } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { expect, it } from "@effect/vitest"
import { databaseIsEmpty, layerPostgres } from "@intake/postgres"
import { freshDatabaseUrl, probeTestServer, testServerUrl } from "@intake/postgres/testing"
import { Effect, Redacted } from "effect"
import { environment, freePort, spawnedServer, temporaryDataDir } from "./process.js"

/**
 * The server as `pnpm start` runs it, on a fresh data directory unless `env` names one (no
 * test writes into the work tree); the scope stops it, then removes that directory.
 */
const start = (env: Record<string, string>) =>
  Effect.flatMap(
    env.INTAKE_DATA_DIR === undefined ? temporaryDataDir : Effect.succeed(env.INTAKE_DATA_DIR),
    (dataDir) => spawnedServer(environment({ ...env, INTAKE_DATA_DIR: dataDir }))
  )

/** Resolves with stdout once `pattern` appears in it, or with everything once the process exits. */
const output = (child: ChildProcess, pattern: RegExp) =>
  Effect.async<{ stdout: string; stderr: string; code: number | null }>((resume) => {
    let stdout = ""
    let stderr = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
      if (pattern.test(stdout)) resume(Effect.succeed({ stdout, stderr, code: null }))
    })
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
    })
    child.on("exit", (code) => resume(Effect.succeed({ stdout, stderr, code })))
  })

it.live(
  "starts on a free port with an empty store, prints a key and a curl that answers 200, and keeps no memory of creating the store",
  () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const child = yield* start({ PORT: String(port) })
      const { stdout } = yield* output(child, /curl .*\/v1\/intake-bots\n/)
      const curl =
        /curl -H "Authorization: Bearer \$INTAKE_KEY" (http:\/\/localhost:(\d+)\/v1\/intake-bots)/.exec(
          stdout
        )
      expect(curl, stdout).not.toBeNull()
      const [, url, printedPort] = curl!
      // The lines to paste: the key and the demo bot, as the README's "Try it" uses them.
      const key = /^ {2}export INTAKE_KEY=(svc_live_[A-Za-z0-9]+)$/m.exec(stdout)?.[1]
      expect(stdout).toMatch(/^ {2}export INTAKE_BOT=bot_[a-z0-9]+$/m)
      expect(Number(printedPort)).toBe(port)
      // The key appears in the one-time print only (its line and the export line), in no log line.
      expect(stdout.split(key!).length - 1).toBe(2)
      expect(stdout).toMatch(/Intake listening on http:\/\/localhost:\d+\/v1/)
      const response = yield* Effect.promise(() =>
        fetch(url!, { headers: { authorization: `Bearer ${key}` } })
      )
      expect(response.status).toBe(200)
      const body = (yield* Effect.promise(() => response.json())) as {
        data: { intake_bots: Array<{ name: string }> }
      }
      expect(body.data.intake_bots.map((bot) => bot.name)).toEqual(["Contact form"])
      // Creating the database is done with: its memory does not stay with the server, which
      // fits an instance of 512 MB (docs/rules.md, Overload). Linux's figure; elsewhere none.
      if (existsSync(`/proc/${child.pid}/status`)) {
        const status = readFileSync(`/proc/${child.pid}/status`, "utf8")
        const residentMb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024
        expect(residentMb).toBeLessThan(512)
      }
    }).pipe(Effect.scoped),
  60_000
)

it.live.each<readonly [string, string]>([
  ["PORT", "abc"],
  ["REQUEST_TIMEOUT", "0s"],
  ["INTAKE_KEY_CACHE_TTL", "soon"],
  ["WEBHOOK_RETRY_SCHEDULE", "5s,never"],
  ["INTAKE_TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal"]
])(
  "refuses a bad %s with one line naming it and a non-zero exit code",
  ([name, value]) =>
    Effect.gen(function* () {
      const child = yield* start({ [name]: value })
      const result = yield* output(child, /$^/)
      expect(result.code).not.toBe(0)
      expect(result.stderr.trim().split("\n")).toHaveLength(1)
      expect(result.stderr).toMatch(new RegExp(`^Invalid configuration: ${name}: `))
      expect(result.stdout).not.toMatch(/svc_live_/)
    }).pipe(Effect.scoped),
  60_000
)

it.live(
  "a restart on the same data directory keeps the demo workspace, its key and its data; a second start on it fails clearly",
  () =>
    Effect.gen(function* () {
      const dataDir = yield* temporaryDataDir
      const { key, botId } = yield* Effect.scoped(
        Effect.gen(function* () {
          const port = yield* freePort
          const first = yield* start({ PORT: String(port), INTAKE_DATA_DIR: dataDir })
          const { stdout } = yield* output(first, /curl .*\/v1\/intake-bots\n/)
          const key = /export INTAKE_KEY=(svc_live_[A-Za-z0-9]+)/.exec(stdout)![1]!
          const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" }
          const bots = yield* Effect.promise(() =>
            fetch(`http://localhost:${port}/v1/intake-bots`, { headers: auth }).then(
              (r) => r.json() as Promise<{ data: { intake_bots: Array<{ id: string }> } }>
            )
          )
          const botId = bots.data.intake_bots[0]!.id
          const created = yield* Effect.promise(() =>
            fetch(`http://localhost:${port}/v1/intake-bots/${botId}/submissions`, {
              method: "POST",
              headers: auth,
              body: JSON.stringify({ data: { name: "Ada", email: "ada@example.com" } })
            })
          )
          expect(created.status).toBe(201)

          const second = yield* start({ PORT: String(yield* freePort), INTAKE_DATA_DIR: dataDir })
          const refused = yield* output(second, /$^/)
          expect(refused.code).not.toBe(0)
          expect(refused.stderr).toMatch(/is in use by another Intake process/)
          expect(refused.stdout).not.toMatch(/svc_live_/)

          first.kill("SIGTERM")
          yield* output(first, /$^/)
          return { key, botId }
        })
      )
      yield* Effect.scoped(
        Effect.gen(function* () {
          const port = yield* freePort
          const again = yield* start({ PORT: String(port), INTAKE_DATA_DIR: dataDir })
          const { stdout } = yield* output(again, /existing data/)
          expect(stdout).not.toMatch(/svc_live_/)
          const listed = yield* Effect.promise(() =>
            fetch(`http://localhost:${port}/v1/intake-bots/${botId}/submissions`, {
              headers: { authorization: `Bearer ${key}` }
            }).then((r) => r.json() as Promise<{ data: { submissions: Array<{ data: unknown }> } }>)
          )
          expect(listed.data.submissions.map((submission) => submission.data)).toEqual([
            { name: "Ada", email: "ada@example.com" }
          ])
        })
      )
    }).pipe(Effect.scoped),
  120_000
)

it.live(
  "a busy port stops the start with one line naming the port and what to do",
  () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const occupant = createServer()
      yield* Effect.acquireRelease(
        Effect.promise(() => new Promise<void>((resolve) => occupant.listen(port, resolve))),
        () => Effect.sync(() => occupant.close())
      )
      const child = yield* start({ PORT: String(port) })
      const result = yield* output(child, /$^/)
      expect(result.code).not.toBe(0)
      expect(result.stderr.trim().split("\n")).toEqual([
        `Port ${port} is already in use (EADDRINUSE): stop what is listening on it, or start on another port, e.g. PORT=${port + 1} pnpm start`
      ])
    }).pipe(Effect.scoped),
  60_000
)

/** Under CI a missing PostgreSQL fails the run; elsewhere the PostgreSQL start tests are skipped. */
const postgresAvailable: boolean = await (async () => {
  const probe = await probeTestServer()
  if (probe._tag === "Right") return true
  const message = `PostgreSQL is unreachable at ${testServerUrl()} (${probe.left})`
  if (process.env.CI === "true") throw new Error(`${message}; CI needs it.`)
  console.warn(`${message}: skipping the PostgreSQL start tests.`)
  return false
})()

/** Whether the database at `url` holds no workspace. */
const holdsNoWorkspace = (url: string) =>
  Effect.scoped(Effect.provide(databaseIsEmpty, layerPostgres({ url: Redacted.make(url) })))

it.live.skipIf(!postgresAvailable)(
  "on an empty PostgreSQL database it creates no demo and prints no key, unless INTAKE_DEMO=true",
  () =>
    Effect.gen(function* () {
      const database = yield* freshDatabaseUrl()
      const plain = yield* start({ PORT: String(yield* freePort), DATABASE_URL: database.url })
      const { stdout } = yield* output(plain, /holds no workspace yet/)
      expect(stdout).toMatch(/INTAKE_DEMO=true/)
      expect(stdout).not.toMatch(/svc_live_/)
      expect(yield* holdsNoWorkspace(database.url)).toBe(true)
      plain.kill("SIGTERM")
      yield* output(plain, /$^/)

      const asked = yield* start({
        PORT: String(yield* freePort),
        DATABASE_URL: database.url,
        INTAKE_DEMO: "true"
      })
      const demo = yield* output(asked, /curl .*\/v1\/intake-bots\n/)
      expect(demo.stdout).toMatch(/Demo workspace created in the PostgreSQL/)
      expect(demo.stdout).toMatch(/svc_live_/)
      expect(yield* holdsNoWorkspace(database.url)).toBe(false)
    }).pipe(Effect.scoped),
  90_000
)
