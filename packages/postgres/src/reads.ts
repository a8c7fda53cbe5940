/**
 * Reads on the pg pool directly, as named prepared statements. `@effect/sql` costs about as
 * much CPU again as the driver for a page of fifty rows (measured: 510 against 250 us per
 * query); the hot list reads go through here on PostgreSQL. They run outside transactions
 * only (a transaction's statements must use its connection, which `@effect/sql` tracks):
 * the repositories call this for reads that never run inside a unit of work. PGlite has one
 * session, shared with any open transaction, so there these reads go through SqlClient.
 */
import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Option } from "effect"
import type { Pool } from "pg"
import type { Row } from "./storage.js"

export interface SqlText {
  readonly text: string
  readonly values: ReadonlyArray<unknown>
}

export class PgReads extends Context.Tag("@intake/postgres/PgReads")<
  PgReads,
  { readonly rows: (statement: SqlText) => Effect.Effect<ReadonlyArray<Row>, SqlError> }
>() {}

export const makePgReads = (pool: Pool): PgReads["Type"] => {
  // One name per statement text: pg prepares it once per connection, then only binds.
  const names = new Map<string, string>()
  const nameOf = (text: string) => {
    let name = names.get(text)
    if (name === undefined) {
      name = `intake_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`
      names.set(text, name)
    }
    return name
  }
  return {
    rows: ({ text, values }) =>
      Effect.tryPromise({
        try: () => pool.query({ name: nameOf(text), text, values: values as Array<unknown> }),
        catch: (cause) => new SqlError({ cause, message: "Failed to execute statement" })
      }).pipe(Effect.map((result) => result.rows as ReadonlyArray<Row>))
  }
}

/**
 * The rows of a read that runs outside transactions: on the pool as a prepared statement
 * when there is one (PostgreSQL), else through SqlClient (PGlite).
 */
export const readRows = Effect.gen(function* () {
  const reads = yield* Effect.serviceOption(PgReads)
  const sql = yield* SqlClient.SqlClient
  return Option.isSome(reads)
    ? reads.value.rows
    : (statement: SqlText) => sql.unsafe<Row>(statement.text, statement.values as Array<unknown>)
})
