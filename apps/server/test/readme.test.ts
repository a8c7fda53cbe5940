/**
 * The README's "Try it" script, run as written against a fresh `pnpm start` (the built server,
 * as the script runs it: process.ts), with the `export` lines the start banner prints pasted first.
 */
import { spawn } from "node:child_process"
import { existsSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { environment, freePort, startServer } from "./process.js"

const root = join(import.meta.dirname, "..", "..", "..")
const readme = readFileSync(join(root, "README.md"), "utf8")

/** The sh block right after the `<!-- try-it -->` marker. */
const tryIt = /<!-- try-it -->\n```sh\n([\s\S]*?)\n```\n/.exec(readme)?.[1] ?? ""

const runScript = (script: string, env: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() =>
      // A process group of its own, so that a receiver left behind by a failed run is stopped too.
      spawn("bash", ["-e", "-x", "-c", script], { cwd: root, env: environment(env), detached: true })
    ),
    (child) =>
      Effect.sync(() => {
        try {
          if (child.pid !== undefined) process.kill(-child.pid, "SIGTERM")
        } catch {}
        for (const file of ["receiver.mjs", "webhook.json"]) rmSync(join(root, file), { force: true })
      })
  ).pipe(
    Effect.flatMap((child) =>
      Effect.async<{ code: number | null; stdout: string; stderr: string }>((resume) => {
        let stdout = ""
        let stderr = ""
        child.stdout.on("data", (chunk: Buffer) => {
          stdout += chunk.toString("utf8")
        })
        child.stderr.on("data", (chunk: Buffer) => {
          stderr += chunk.toString("utf8")
        })
        child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
      })
    )
  )

it.live(
  "the README's Try it script runs as written: every command exits 0 and gets the answers it expects",
  () =>
    Effect.gen(function* () {
      expect(tryIt).toMatch(/^# list the intake bots/)
      // Every request uses the pasted variables and the PORT default.
      for (const line of tryIt.split("\n").filter((line) => line.includes("http://localhost"))) {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell expansion the README writes
        expect(line).toContain("http://localhost:${PORT:-3000}/v1/")
      }
      const server = yield* startServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true" })
      const banner = server.output().stdout
      const pasted = banner
        .split("\n")
        .filter((line) => /^ {2}export INTAKE_(KEY|BOT)=/.test(line))
        .map((line) => line.trim())
      expect(pasted).toHaveLength(2)
      const port = new URL(server.baseUrl).port
      const logStart = banner.length
      const result = yield* runScript(`${pasted.join("\n")}\n${tryIt}`, {
        PORT: port,
        RECEIVER_PORT: String(yield* freePort)
      })
      expect(result.code, `${result.stderr}\n${result.stdout}`).toBe(0)
      // The replayed create, shown with its headers by `curl -i`.
      expect(result.stdout).toMatch(/HTTP\/1\.1 201 Created\r?\n/)
      expect(result.stdout).toMatch(/^idempotent-replayed: true\r?$/im)
      // The receiver verified the delivery and printed it; the delivery log says it succeeded.
      expect(result.stdout).toMatch(/received submission\.completed sub_[a-z0-9]+\n/)
      expect(result.stdout).toMatch(/"status":"succeeded"/)
      // What the server answered, request by request, from its own log lines (the last one
      // may still be on its way).
      yield* server.waitForStdout(/"method":"DELETE","route":"\/v1\/webhooks\/:id"/, 5_000)
      const answered = server
        .output()
        .stdout.slice(logStart)
        .split("\n")
        .filter((line) => line.startsWith("{") && line.includes('"message":"request"'))
        .map((line) => JSON.parse(line) as { method: string; route: string; status: number })
        .map(({ method, route, status }) => `${method} ${route} ${status}`)
      expect(answered).toEqual([
        "GET /v1/intake-bots 200",
        "GET /v1/intake-bots/:id 200",
        "POST /v1/webhooks 200",
        "POST /v1/intake-bots/:id/submissions 201",
        "POST /v1/intake-bots/:id/submissions 201",
        "GET /v1/intake-bots/:id/submissions 200",
        "GET /v1/webhooks/:id/deliveries 200",
        "DELETE /v1/webhooks/:id 200"
      ])
      // It cleaned up after itself.
      expect(existsSync(join(root, "receiver.mjs"))).toBe(false)
      expect(existsSync(join(root, "webhook.json"))).toBe(false)
    }).pipe(Effect.scoped),
  120_000
)
