/**
 * Server processes for tests that need more than one instance: the built server the way
 * `pnpm start` runs it (`node dist/main.js`, built once per test project
 * by global-setup.ts), on a free port, stopped when the test's scope closes.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { temporaryDirectory } from "@intake/testing"
import { Effect } from "effect"
import { inject } from "vitest"

const serverDir = join(import.meta.dirname, "..")

/** Starts the built server as `pnpm start` does (apps/server/package.json), with `env` only. */
export const spawnServer = (env: NodeJS.ProcessEnv) =>
  spawn(process.execPath, [inject("serverEntry")], { cwd: serverDir, env })

export const freePort = Effect.promise(
  () =>
    new Promise<number>((resolve) => {
      const probe = createServer()
      probe.listen(0, "127.0.0.1", () => {
        const address = probe.address()
        probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
      })
    })
)

/**
 * The environment without the variables a test sets itself. A stopping server does not
 * drain unless the test asks (INTAKE_SHUTDOWN_DRAIN), so each test's teardown stays quick.
 */
export const environment = (extra: Record<string, string>) => {
  const env: Record<string, string> = {}
  const own = [
    "DATABASE_URL",
    "REDIS_URL",
    "REDIS_CLUSTER_NODES",
    "REDIS_KEY_PREFIX",
    "INTAKE_ADMIN_TOKEN",
    "INTAKE_KEY_CACHE_TTL",
    "REQUEST_TIMEOUT",
    "INTAKE_TRUSTED_PROXIES",
    "INTAKE_BODY_TIMEOUT",
    "INTAKE_SHUTDOWN_DRAIN",
    "INTAKE_HEADERS_TIMEOUT",
    "INTAKE_IDLE_TIMEOUT",
    "INTAKE_MAX_CONNECTIONS",
    "INTAKE_MAX_REQUESTS_IN_FLIGHT",
    "INTAKE_MAX_BODY_BYTES_IN_FLIGHT",
    "PORT"
  ]
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !own.includes(name)) env[name] = value
  }
  return { ...env, INTAKE_SHUTDOWN_DRAIN: "0s", ...extra }
}

export interface ServerProcess {
  readonly baseUrl: string
  readonly child: ChildProcess
  /** Everything the process wrote so far. */
  readonly output: () => { readonly stdout: string; readonly stderr: string }
  /** The demo key the embedded store printed at start, if it printed one. */
  readonly demoKey: string | undefined
  /**
   * Waits until stdout matches `pattern` (true), or `withinMs` passes (false): log lines
   * leave the process up to 50 ms after they are logged (docs/performance.md, Logging).
   */
  readonly waitForStdout: (pattern: RegExp, withinMs: number) => Effect.Effect<boolean>
}

/** A data directory of its own for the embedded database, removed when the scope closes. */
export const temporaryDataDir = temporaryDirectory("intake-process-")

/**
 * The built server started with `env` (as spawnServer), stopped when the scope closes: the
 * scope waits for it to exit (SIGTERM, then SIGKILL after 5 s), so that what it used, a data
 * directory, can go after it.
 */
export const spawnedServer = (env: NodeJS.ProcessEnv) =>
  Effect.acquireRelease(
    Effect.sync(() => spawnServer(env)),
    (child) => stopped(child)
  )

/** Stops `child` (SIGTERM, then SIGKILL after 5 s) and waits until it has exited. */
export const stopped = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGTERM")
    // A process that ignores SIGTERM is not left behind.
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    return Effect.sync(() => clearTimeout(timer))
  })

/**
 * Starts a server with `env` and waits until it listens; killed when the scope closes.
 * Without DATABASE_URL it runs on the embedded database in a temporary directory.
 */
export const startServer = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const port = yield* freePort
    if (env.DATABASE_URL === undefined) env = { INTAKE_DATA_DIR: yield* temporaryDataDir, ...env }
    const child = yield* spawnedServer(environment({ ...env, PORT: String(port) }))
    let stdout = ""
    let stderr = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
    })
    const waitFor = (pattern: RegExp, withinMs: number) =>
      Effect.gen(function* () {
        const started = performance.now()
        while (!pattern.test(stdout)) {
          if (child.exitCode !== null) return yield* Effect.dieMessage(`server exited: ${stderr}${stdout}`)
          if (performance.now() - started > withinMs) return false
          yield* Effect.sleep("20 millis")
        }
        return true
      })
    // Generous: a first start on PGlite compiles WebAssembly and creates a database, slow on a busy machine.
    if (!(yield* waitFor(/Intake listening on/, 90_000))) {
      return yield* Effect.dieMessage(`server did not start: ${stderr}${stdout}`)
    }
    // An empty store gets the demo workspace, printed right after the listening line.
    yield* waitFor(/curl .*\n/, 2_000)
    const demoKey = /API key \(shown once\): (svc_live_[A-Za-z0-9]+)/.exec(stdout)?.[1]
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      child,
      output: () => ({ stdout, stderr }),
      demoKey,
      waitForStdout: waitFor
    } satisfies ServerProcess
  })

/** One request, timed on the client side; `sentAt` and `receivedAt` in epoch ms bracket the server's now. */
export const timedGet = (baseUrl: string, path: string, key?: string) =>
  Effect.promise(async () => {
    const sentAt = Date.now()
    const started = performance.now()
    const response = await fetch(`${baseUrl}${path}`, {
      headers: key === undefined ? {} : { authorization: `Bearer ${key}` }
    })
    const body = await response.text()
    const ms = performance.now() - started
    return { status: response.status, headers: response.headers, body, ms, sentAt, receivedAt: Date.now() }
  })
