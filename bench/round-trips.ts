/**
 * Loaded into the server under benchmark with `--import` (never in production): counts
 * the round trips each request makes to the stores, at the drivers the adapters use
 * (`pg` clients, PGlite, `ioredis`), so nothing in the server changes to be measured.
 *
 * Every request runs inside an AsyncLocalStorage scope labelled by its `x-bench-label`
 * header; a statement or command is charged to the label of the request it ran for, and
 * to "background" when it ran for no request (the dispatcher's polls, the purge job).
 * The bench asks for the figures and resets them over the fork's IPC channel.
 */
import { AsyncLocalStorage, AsyncResource } from "node:async_hooks"
import http from "node:http"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { pathToFileURL } from "node:url"

export interface RoundTripCounts {
  requests: number
  sql: number
  redis: number
  /** Each statement's first words (or each Redis command's name), with how often it ran. */
  calls: Record<string, number>
}

export type RoundTripMessage = { readonly type: "round-trips:reset" } | { readonly type: "round-trips:read" }

const BACKGROUND = "background"
const requestLabel = new AsyncLocalStorage<string>()
let counts = new Map<string, RoundTripCounts>()

const countsOf = (label: string) => {
  let entry = counts.get(label)
  if (entry === undefined) {
    entry = { requests: 0, sql: 0, redis: 0, calls: {} }
    counts.set(label, entry)
  }
  return entry
}

/** Enough of a statement to recognize it, never its parameters (they are not in the text). */
const shortened = (text: string, length = 70) => text.replace(/\s+/g, " ").trim().slice(0, length)

const record = (kind: "sql" | "redis", what: string, label = requestLabel.getStore(), length = 70) => {
  const entry = countsOf(label ?? BACKGROUND)
  entry[kind]++
  const call = `${kind}: ${shortened(what, length)}`
  entry.calls[call] = (entry.calls[call] ?? 0) + 1
}

// Requests: one scope per request, entered before any listener runs.
const emit = http.Server.prototype.emit as (
  this: http.Server,
  event: string | symbol,
  ...args: Array<unknown>
) => boolean
http.Server.prototype.emit = function (this: http.Server, event: string | symbol, ...args: Array<unknown>) {
  if (event !== "request") return emit.call(this, event, ...args)
  const request = args[0] as http.IncomingMessage
  const header = request.headers["x-bench-label"]
  const label = typeof header === "string" ? header : "unlabelled"
  countsOf(label).requests++
  return requestLabel.run(label, () => {
    // The body's events come from the socket, outside this scope: what the request does
    // after reading its body is still its own.
    request.emit = AsyncResource.bind(request.emit.bind(request)) as typeof request.emit
    return emit.call(this, event, ...args)
  })
} as typeof http.Server.prototype.emit

// The drivers, resolved from the packages that use them, so they are the same instances.
const root = join(import.meta.dirname, "..")
const requireFrom = (packageDir: string) => createRequire(join(root, packageDir, "package.json"))

type Method = (...args: Array<unknown>) => unknown
const pg = requireFrom("packages/postgres")("pg") as {
  Client: { prototype: { query: Method } }
  Pool: { prototype: { connect: Method } }
}
// pg calls back from its socket's events, outside the request's scope: bind each callback to
// the scope of its caller, so that what the request does next is still charged to it.
const boundCallbacks = (args: Array<unknown>) =>
  args.map((arg) => (typeof arg === "function" ? AsyncResource.bind(arg as Method) : arg))
const pgQuery = pg.Client.prototype.query
pg.Client.prototype.query = function (this: unknown, ...args: Array<unknown>) {
  const config = args[0] as
    | string
    | { text?: string; carriesCommit?: boolean; carried?: ReadonlyArray<{ text: string }> }
    | undefined
  const text = typeof config === "string" ? config : (config?.text ?? "?")
  // Statements deferred to this one, and a COMMIT sent with it (packages/postgres/src/driver/transaction-client.ts):
  // one round trip for all.
  const carried =
    typeof config === "string"
      ? ""
      : (config?.carried ?? []).map((statement) => `${shortened(statement.text, 24)}… + `).join("")
  const length = 70 + carried.length
  if (typeof config !== "string" && config?.carriesCommit === true)
    record("sql", `${carried}${shortened(text).slice(0, 60)} + COMMIT`, undefined, length)
  else record("sql", `${carried}${text}`, undefined, length)
  return pgQuery.apply(this, boundCallbacks(args))
}
const poolConnect = pg.Pool.prototype.connect
pg.Pool.prototype.connect = function (this: unknown, ...args: Array<unknown>) {
  return poolConnect.apply(this, boundCallbacks(args))
}

const ioredis = requireFrom("packages/redis")("ioredis") as {
  Redis: { prototype: { sendCommand: (command: { name: string }, ...rest: Array<unknown>) => unknown } }
}
const sendCommand = ioredis.Redis.prototype.sendCommand
ioredis.Redis.prototype.sendCommand = function (
  this: unknown,
  command: { name: string },
  ...rest: Array<unknown>
) {
  record("redis", command.name)
  return sendCommand.call(this, command, ...rest)
}

// PGlite is ESM only: import the file the adapter's `import` resolves to.
type Runner = Record<"query" | "exec" | "sql" | "rollback", (...args: Array<unknown>) => Promise<unknown>>
// (`require.resolve` finds its CommonJS build, dist/index.cjs; the ESM build is beside it.)
const pgliteCommonJs = requireFrom("packages/postgres").resolve("@electric-sql/pglite")
const { PGlite } = (await import(pathToFileURL(join(dirname(pgliteCommonJs), "index.js")).href)) as {
  PGlite: {
    prototype: Runner & { transaction: (callback: (tx: Runner) => Promise<unknown>) => Promise<unknown> }
  }
}
// A transaction's statements run in PGlite's own queue, outside the request's scope: they
// are charged to the request that opened the transaction.
const counted = (run: Runner["query"], label?: () => string | undefined) =>
  function (this: unknown, ...args: Array<unknown>) {
    record("sql", String(args[0]), label?.() ?? requestLabel.getStore())
    return run.apply(this, args)
  }
PGlite.prototype.query = counted(PGlite.prototype.query)
PGlite.prototype.exec = counted(PGlite.prototype.exec)
const transaction = PGlite.prototype.transaction
PGlite.prototype.transaction = function (this: unknown, callback) {
  const label = requestLabel.getStore()
  const opener = () => label
  record("sql", "BEGIN", label)
  let rolledBack = false
  return transaction
    .call(this, (tx) => {
      const countedTx: Runner = {
        query: counted(tx.query, opener),
        exec: counted(tx.exec, opener),
        sql: (...args) => {
          record("sql", String((args[0] as ReadonlyArray<string>).join("?")), label)
          return tx.sql(...args)
        },
        rollback: () => {
          rolledBack = true
          record("sql", "ROLLBACK", label)
          return tx.rollback()
        }
      }
      return callback(Object.assign(Object.create(tx), countedTx))
    })
    .then(
      (value) => {
        if (!rolledBack) record("sql", "COMMIT", label)
        return value
      },
      (error: unknown) => {
        if (!rolledBack) record("sql", "ROLLBACK", label)
        throw error
      }
    )
}

/** The counts so far, by label (for a bench that imports this module in its own process). */
export const roundTripCounts = (): ReadonlyMap<string, RoundTripCounts> => counts

/** Starts the counts again from zero. */
export const resetRoundTripCounts = () => {
  counts = new Map()
}

process.on("message", (message: RoundTripMessage) => {
  if (message.type === "round-trips:reset") {
    counts = new Map()
    process.send?.({ type: "round-trips:reset" })
  } else if (message.type === "round-trips:read") {
    process.send?.({ type: "round-trips", counts: Object.fromEntries(counts) })
  }
})
