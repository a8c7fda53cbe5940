/**
 * A PgBouncer of the tests' own (docs/deploy-postgres.md, PgBouncer): Debian's pgbouncer on a
 * free loopback port, in front of the test server, in transaction pooling mode with a small
 * pool, its configuration in a temporary directory removed when its scope closes. Where
 * pgbouncer is missing the suite is skipped with a message, except under CI=true, where that
 * fails the run.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { chmodSync, writeFileSync } from "node:fs"
import net from "node:net"
import { join } from "node:path"
import { describe, it } from "@effect/vitest"
import { temporaryDirectory } from "@intake/testing"
import { Effect, Option, Schedule } from "effect"
import { Client } from "pg"
import { testServerUrl, withDatabase } from "./testing.js"

/** Debian installs it in /usr/sbin, which a user's PATH may not hold. */
const binary = ["/usr/sbin/pgbouncer", "pgbouncer"].find(
  (command) => spawnSync(command, ["--version"], { stdio: "ignore" }).status === 0
)
if (binary === undefined && process.env.CI === "true")
  throw new Error("CI=true: the PgBouncer tests need pgbouncer (Debian: apt-get install pgbouncer)")

/** Declares `suite` when pgbouncer is installed; otherwise skips it, saying why. */
export const withPgBouncer = (name: string, suite: () => void) => {
  if (binary !== undefined) suite()
  else
    describe.skip(`${name} (skipped: pgbouncer not installed)`, () => {
      it("needs pgbouncer", () => {})
    })
}

export interface PgBouncer {
  readonly port: number
  /** The URL of `database` through this PgBouncer, as the test server's user. */
  readonly urlOf: (database: string) => string
}

const freePort = Effect.promise(
  () =>
    new Promise<number>((resolve, reject) => {
      const probe = net.createServer()
      probe.once("error", reject)
      probe.listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as net.AddressInfo
        probe.close(() => resolve(port))
      })
    })
)

/** Whether `url` answers a statement. */
const answers = (url: string) =>
  Effect.promise(async () => {
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 1_000 })
    client.on("error", () => {})
    try {
      await client.connect()
      await client.query("SELECT 1")
      return true
    } catch {
      return false
    } finally {
      await client.end().catch(() => undefined)
    }
  })

/**
 * Starts PgBouncer for the scope, in front of the test server (every database on it, as
 * its user, trusted), `pool_mode = transaction` and `default_pool_size = poolSize`: that
 * many server sessions per database, shared by every client. `ignoreStartupParameters`:
 * the startup parameters it lets through and drops (it refuses a client that sends any
 * other it does not know). Killed when the scope closes.
 */
export const startPgBouncer = (
  options: {
    readonly poolSize?: number
    readonly serverUrl?: string
    readonly ignoreStartupParameters?: ReadonlyArray<string>
  } = {}
) =>
  Effect.gen(function* () {
    const server = new URL(options.serverUrl ?? testServerUrl())
    const user = decodeURIComponent(server.username) || "postgres"
    const dir = yield* temporaryDirectory("intake-pgbouncer-")
    const port = yield* freePort
    const ini = join(dir, "pgbouncer.ini")
    const userlist = join(dir, "userlist.txt")
    writeFileSync(userlist, `"${user}" ""\n`)
    writeFileSync(
      ini,
      [
        "[databases]",
        `* = host=${server.hostname.replace(/^\[|\]$/g, "")} port=${server.port || "5432"}`,
        "[pgbouncer]",
        "listen_addr = 127.0.0.1",
        `listen_port = ${port}`,
        "unix_socket_dir =",
        "auth_type = trust",
        `auth_file = ${userlist}`,
        "pool_mode = transaction",
        `default_pool_size = ${options.poolSize ?? 2}`,
        "max_client_conn = 200",
        `ignore_startup_parameters = ${(options.ignoreStartupParameters ?? []).join(",")}`,
        ""
      ].join("\n")
    )
    // PgBouncer refuses to run as root: there it is told to run as nobody, who must read these.
    const asRoot = process.getuid?.() === 0
    if (asRoot) for (const path of [dir, ini, userlist]) chmodSync(path, path === dir ? 0o755 : 0o644)
    const output: Array<string> = []
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(binary ?? "pgbouncer", [...(asRoot ? ["-u", "nobody"] : []), ini], {
          stdio: ["ignore", "pipe", "pipe"]
        })
        child.stdout.on("data", (chunk) => output.push(String(chunk)))
        child.stderr.on("data", (chunk) => output.push(String(chunk)))
        return child
      }),
      (child: ChildProcess) =>
        Effect.async<void>((resume) => {
          if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
          child.once("exit", () => resume(Effect.void))
          child.kill("SIGKILL")
        })
    )
    const urlOf = (database: string) => {
      const url = new URL(withDatabase(server.toString(), database))
      url.hostname = "127.0.0.1"
      url.port = String(port)
      return url.toString()
    }
    const database = server.pathname.slice(1) || "postgres"
    const up = yield* answers(urlOf(database)).pipe(
      Effect.filterOrFail(
        (up) => up || child.exitCode !== null,
        () => "not yet"
      ),
      Effect.retry(Schedule.spaced("50 millis")),
      Effect.timeoutOption("10 seconds")
    )
    if (!Option.getOrElse(up, () => false))
      return yield* Effect.dieMessage(`pgbouncer did not answer on 127.0.0.1:${port}:\n${output.join("")}`)
    return { port, urlOf } satisfies PgBouncer
  })
