/** List calls: awaited for a page, iterated for every item (cursor pagination, docs/rules.md). */
import type { DeliveryListParams, Pagination } from "./types.js"

/**
 * A list call: `await` it for the first page, or `for await` over it for every item of every
 * page (it follows `next_cursor` until `has_more` is false). `pages()` iterates the pages.
 */
export class ListRequest<Page extends { readonly pagination: Pagination }, Item>
  implements PromiseLike<Page>, AsyncIterable<Item>
{
  #first: Promise<Page> | undefined
  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page>,
    private readonly itemsOf: (page: Page) => ReadonlyArray<Item>,
    private readonly cursor: string | undefined
  ) {}

  // biome-ignore lint/suspicious/noThenProperty: a list call is awaited for its first page, by design
  then<A = Page, B = never>(
    onFulfilled?: ((page: Page) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null
  ): Promise<A | B> {
    this.#first ??= this.fetchPage(this.cursor)
    return this.#first.then(onFulfilled, onRejected)
  }

  async *pages(): AsyncGenerator<Page, void, undefined> {
    let cursor = this.cursor
    for (;;) {
      const page = await this.fetchPage(cursor)
      yield page
      if (!page.pagination.has_more || page.pagination.next_cursor === null) return
      cursor = page.pagination.next_cursor
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.pages()) yield* this.itemsOf(page)
  }
}

/** A list's parameters as a query string ("" when none is set). */
export const query = (params: DeliveryListParams) => {
  const entries = Object.entries(params).flatMap(
    ([name, value]): Array<[string, string]> => (value === undefined ? [] : [[name, String(value)]])
  )
  return entries.length === 0 ? "" : `?${new URLSearchParams(entries).toString()}`
}
