/** What the composition root asks the database directly: is it answering, and is it empty. */
import { SqlClient } from "@effect/sql"
import type { StorageUnavailable } from "@intake/domain"
import { Duration, Effect } from "effect"
import { storageFailure, stored } from "./storage.js"

/** Succeeds when the database answers `SELECT 1` within two seconds. */
export const pingDatabase: Effect.Effect<void, StorageUnavailable, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    stored("ping")(sql`SELECT 1`).pipe(
      Effect.timeoutFail({
        duration: Duration.seconds(2),
        onTimeout: () => storageFailure("ping", "timeout")
      }),
      Effect.asVoid
    )
)

/** True when no workspace exists yet (a first start: the demo may be seeded). */
export const databaseIsEmpty: Effect.Effect<boolean, StorageUnavailable, SqlClient.SqlClient> =
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    stored("isEmpty")(
      Effect.map(
        sql<{ found: unknown }>`SELECT EXISTS (SELECT 1 FROM workspaces) AS found`,
        (rows) => rows[0]?.found !== true
      )
    )
  )
