import type { ListPosition, Page, PageRequest, StorageUnavailable } from "@intake/domain"
import { Effect } from "effect"

/** Walks a keyset list page by page from the start, answering every item in the order received. */
export const walkPages = <A extends ListPosition>(
  fetch: (page: PageRequest) => Effect.Effect<Page<A>, StorageUnavailable>,
  limit: number
): Effect.Effect<{ readonly items: ReadonlyArray<A>; readonly pages: number }, StorageUnavailable> =>
  Effect.gen(function* () {
    const items: Array<A> = []
    let after: ListPosition | null = null
    let pages = 0
    for (;;) {
      const page: Page<A> = yield* fetch({ limit, after })
      pages++
      items.push(...page.items)
      const last = page.items[page.items.length - 1]
      if (!page.hasMore || last === undefined) return { items, pages }
      after = { createdAt: last.createdAt, id: last.id }
    }
  })

/** The newest-first order every list promises: created_at desc, then id desc. */
export const inNewestFirstOrder = (items: ReadonlyArray<ListPosition>): boolean =>
  items.every(
    (item, i) =>
      i === 0 ||
      items[i - 1]!.createdAt > item.createdAt ||
      (items[i - 1]!.createdAt === item.createdAt && items[i - 1]!.id > item.id)
  )
