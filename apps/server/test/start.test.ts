/** `pnpm start`'s entry point, run as a child process the way the script runs it. */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { join } from "node:path"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"

const serverDir = join(import.meta.dirname, "..")
const tsx = join(serverDir, "node_modules/.bin/tsx")

const freePort = Effect.promise(
  () =>
    new Promise<number>((resolve) => {
      const probe = createServer()
      probe.listen(0, "127.0.0.1", () => {
        const address = probe.address()
        probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
      })
    })
)

const cleanEnv = (extra: Record<string, string>) => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !["DATABASE_URL", "REDIS_URL", "INTAKE_ADMIN_TOKEN", "PORT"].includes(name)) {
      env[name] = value
    }
  }
  return { ...env, ...extra }
}

const start = (env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => spawn(tsx, ["src/main.ts"], { cwd: serverDir, env: cleanEnv(env) })),
    (child) => Effect.sync(() => child.exitCode === null && child.kill("SIGTERM"))
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
  "starts on a free port with an empty store, prints a key and a curl that answers 200",
  () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const child = yield* start({ PORT: String(port) })
      const { stdout } = yield* output(child, /curl .*\/v1\/intake-bots\n/)
      const curl =
        /curl -H "Authorization: Bearer (svc_live_[A-Za-z0-9]+)" (http:\/\/localhost:(\d+)\/v1\/intake-bots)/.exec(
          stdout
        )
      expect(curl, stdout).not.toBeNull()
      const [, key, url, printedPort] = curl!
      expect(Number(printedPort)).toBe(port)
      // The key appears in the one-time print only (its line and the curl), in no log line.
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
    }).pipe(Effect.scoped),
  60_000
)

it.live(
  "refuses a bad PORT with one line naming it and a non-zero exit code",
  () =>
    Effect.gen(function* () {
      const child = yield* start({ PORT: "abc" })
      const result = yield* output(child, /$^/)
      expect(result.code).not.toBe(0)
      expect(result.stderr.trim().split("\n")).toHaveLength(1)
      expect(result.stderr).toMatch(/PORT/)
      expect(result.stdout).not.toMatch(/svc_live_/)
    }).pipe(Effect.scoped),
  60_000
)

it.live(
  "refuses DATABASE_URL clearly, without creating a demo key",
  () =>
    Effect.gen(function* () {
      const port = yield* freePort
      const child = yield* start({ PORT: String(port), DATABASE_URL: "postgres://localhost/intake" })
      const result = yield* output(child, /$^/)
      expect(result.code).not.toBe(0)
      expect(result.stderr).toMatch(
        /DATABASE_URL is set but the PostgreSQL adapter is not part of this build/
      )
      expect(result.stdout).not.toMatch(/svc_live_/)
    }).pipe(Effect.scoped),
  60_000
)
