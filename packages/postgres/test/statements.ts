/**
 * Counts the statements a piece of work sends to the database, at the drivers, as
 * bench/round-trips.ts does for `pnpm bench`: `pg`'s Client.query, PGlite's query and
 * exec, and the BEGIN … COMMIT of a PGlite transaction (sent inside PGlite, not through
 * its methods). One statement is one round trip, a statement sent with its COMMIT too
 * (recorded as "… + COMMIT"), and one sent with the statements deferred to it (recorded as
 * "deferred + … + statement"). Only what runs for the work counts
 * (an AsyncLocalStorage scope), not what other fibers do meanwhile.
 */
import { AsyncLocalStorage, AsyncResource } from "node:async_hooks"
import { PGlite, type Transaction } from "@electric-sql/pglite"
import pg from "pg"
import { carriesCommit } from "../src/driver/committing-query.js"
import { carriedStatements } from "../src/driver/prepared-query.js"

type Method = (...args: Array<unknown>) => unknown

interface Recording {
  readonly statements: Array<string>
  /** pg statements sent without a name, so parsed and planned again on every call. */
  readonly unprepared: Array<string>
}

const recording = new AsyncLocalStorage<Recording>()

/** Enough of a statement to recognize it (its parameters are not in the text). */
const shortened = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 90)

const record = (text: string, into = recording.getStore()) => {
  into?.statements.push(shortened(text))
}

// pg calls back from its socket's events: each callback keeps the scope of its caller.
const bound = (args: Array<unknown>) =>
  args.map((arg) => (typeof arg === "function" ? AsyncResource.bind(arg as Method) : arg))

let installed = false
const install = () => {
  if (installed) return
  installed = true
  const query = pg.Client.prototype.query as unknown as Method
  pg.Client.prototype.query = function (this: unknown, ...args: Array<unknown>) {
    const config = args[0] as string | { text?: string; name?: string } | undefined
    const text = typeof config === "string" ? config : (config?.text ?? "?")
    // Statements carried ahead of this one, and a COMMIT sent with it (src/driver/transaction-client.ts): one round trip for all.
    const carried = carriedStatements(config).map((carriedText) => `${shortened(carriedText)} + `)
    const sent = `${carried.join("")}${shortened(text)}`
    recording.getStore()?.statements.push(carriesCommit(config) ? `${sent} + COMMIT` : sent)
    if (typeof config === "string" || config?.name === undefined)
      recording.getStore()?.unprepared.push(shortened(text))
    return query.apply(this, bound(args))
  } as typeof pg.Client.prototype.query
  const connect = pg.Pool.prototype.connect as unknown as Method
  pg.Pool.prototype.connect = function (this: unknown, ...args: Array<unknown>) {
    return connect.apply(this, bound(args))
  } as typeof pg.Pool.prototype.connect

  const lite = PGlite.prototype as unknown as Record<"query" | "exec", Method>
  for (const name of ["query", "exec"] as const) {
    const method = lite[name]
    lite[name] = function (this: unknown, ...args: Array<unknown>) {
      record(String(args[0]))
      return method.apply(this, args)
    }
  }
  // A transaction's statements run in PGlite's queue, outside the caller's scope: they are
  // charged to the scope that opened it.
  const transaction = PGlite.prototype.transaction
  PGlite.prototype.transaction = function <T>(this: PGlite, callback: (tx: Transaction) => Promise<T>) {
    const into = recording.getStore()
    record("BEGIN", into)
    let rolledBack = false
    const counted = (tx: Transaction): Transaction =>
      Object.assign(Object.create(tx), {
        query: (...args: Parameters<Transaction["query"]>) => {
          record(String(args[0]), into)
          return tx.query(...args)
        },
        exec: (...args: Parameters<Transaction["exec"]>) => {
          record(String(args[0]), into)
          return tx.exec(...args)
        },
        rollback: () => {
          rolledBack = true
          record("ROLLBACK", into)
          return tx.rollback()
        }
      })
    return transaction
      .call(this, (tx) => callback(counted(tx)))
      .then(
        (value) => {
          if (!rolledBack) record("COMMIT", into)
          return value
        },
        (error: unknown) => {
          if (!rolledBack) record("ROLLBACK", into)
          throw error
        }
      ) as Promise<T>
  }
}

/**
 * Runs `work` and answers its value with the statements it sent, in order, and those of
 * them that went to `pg` without a name (not prepared statements).
 */
export const statementsOf = async <A>(
  work: () => Promise<A>
): Promise<{
  readonly value: A
  readonly statements: ReadonlyArray<string>
  readonly unprepared: ReadonlyArray<string>
}> => {
  install()
  const into: Recording = { statements: [], unprepared: [] }
  const value = await recording.run(into, work)
  return { value, ...into }
}
