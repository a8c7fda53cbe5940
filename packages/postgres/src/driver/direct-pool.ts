/** The pg pool this driver sends statements on, and what sits between it and PostgreSQL. */

import { Context } from "effect"
import type { Pool } from "pg"

/**
 * What sits between Intake and PostgreSQL (docs/deploy-postgres.md, PgBouncer): `session`, a
 * direct connection or a session-mode pooler, where a connection keeps its session; or
 * `transaction`, a transaction-mode pooler (PgBouncer), which may give each transaction, and
 * each statement outside one, another server session. There no statement is named: a
 * statement prepared under a name on one session is not prepared on the next.
 */
export type PoolMode = "session" | "transaction"

/** The pg pool of a PostgreSQL database, for statements sent to it directly, and what is between them. */
export class PgReads extends Context.Tag("@intake/postgres/PgReads")<
  PgReads,
  { readonly pool: Pool; readonly poolMode: PoolMode }
>() {}

export const makePgReads = (pool: Pool, poolMode: PoolMode = "session"): PgReads["Type"] => ({
  pool,
  poolMode
})
