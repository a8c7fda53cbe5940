/** Keyset paging in SQL, in the order every list promises: created_at desc, id desc. */
import type { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import type { ListPosition, Page } from "@intake/domain"
import { toDate } from "./storage.js"

/** The condition "strictly after `after`": one row comparison, which the list indexes serve. */
export const afterPosition = (
  sql: SqlClient.SqlClient,
  alias: string,
  after: ListPosition | null
): ReadonlyArray<Fragment> =>
  after === null
    ? []
    : [sql`(${sql(alias)}.created_at, ${sql(alias)}.id) < (${toDate(after.createdAt)}, ${after.id})`]

/** The page of rows fetched with `LIMIT limit + 1`: the extra row only says there is more. */
export const pageFrom = <R, A>(rows: ReadonlyArray<R>, limit: number, f: (row: R) => A): Page<A> => ({
  items: rows.slice(0, limit).map(f),
  hasMore: rows.length > limit
})
