/**
 * Keyset paging over rows in memory, in the order and with the bounds every adapter
 * must honour: newest first (created_at desc, id desc), strictly after the cursor's
 * position, created_after / created_before inclusive. The filters and the cursor
 * compose: a page of a filtered list is the filtered list's page.
 */

import { isAfter, newestFirst } from "./cursor.js"
import type { ValidationIssue } from "./errors.js"
import type { CreatedRange, EpochMillis, ListPosition, Page, PageRequest } from "./models.js"

export const noRange: CreatedRange = { createdAfter: null, createdBefore: null }

/** True when `createdAt` lies within the inclusive bounds. */
export const inRange = (createdAt: number, range: CreatedRange): boolean =>
  (range.createdAfter === null || createdAt >= range.createdAfter) &&
  (range.createdBefore === null || createdAt <= range.createdBefore)

/** The page of `rows` that `page` asks for, within `range`. */
export const pageOf = <A extends ListPosition>(
  rows: Iterable<A>,
  page: PageRequest,
  range: CreatedRange = noRange
): Page<A> => {
  const matching = [...rows]
    .filter((row) => inRange(row.createdAt, range) && isAfter(row, page.after))
    .sort(newestFirst)
  return { items: matching.slice(0, page.limit), hasMore: matching.length > page.limit }
}

/** One end of a time range as the request names it: the parameter's name and its value, if given. */
export interface RangeEnd {
  readonly name: string
  readonly at: EpochMillis | null | undefined
}

/**
 * The issue of a range that starts after it ends (docs/rules.md, Conventions and envelope):
 * an empty answer would hide the client's mistake, so it is 400 `validation_failed` naming
 * the start, in the words recover uses for `since` and `until`. Equal ends are a range of
 * one instant (both bounds are inclusive).
 */
export const invertedRangeIssues = (start: RangeEnd, end: RangeEnd): ReadonlyArray<ValidationIssue> =>
  start.at !== null && start.at !== undefined && end.at !== null && end.at !== undefined && start.at > end.at
    ? [{ path: start.name, message: `must not be after ${end.name}` }]
    : []
