/** What every list use case does with a cursor: decode it against its list, and make the next one; and the shapes of a list request and its answer. */
import { Effect } from "effect"
import * as Cursor from "./cursor.js"
import type { ValidationFailed } from "./errors.js"
import type { ListPosition, Page, PageRequest } from "./models.js"
import type { Crypto } from "./ports.js"

/** A list request as the client sent it: limit already range-checked, cursor still opaque. */
export interface ListQuery {
  readonly limit: number
  readonly cursor: string | null
}

export interface Listed<A> {
  readonly items: ReadonlyArray<A>
  readonly nextCursor: string | null
}

type CryptoService = typeof Crypto.Service

export const pageRequest = (
  crypto: CryptoService,
  list: string,
  query: ListQuery
): Effect.Effect<PageRequest, ValidationFailed> =>
  query.cursor === null
    ? Effect.succeed({ limit: query.limit, after: null })
    : Effect.map(Cursor.decodeCursor(list, query.cursor, crypto.sha256Hex), (after) => ({
        limit: query.limit,
        after
      }))

export const listed = <A extends ListPosition>(
  crypto: CryptoService,
  list: string,
  page: Page<A>
): Listed<A> => ({
  items: page.items,
  nextCursor: Cursor.nextCursor(list, page.items, page.hasMore, crypto.sha256Hex)
})
