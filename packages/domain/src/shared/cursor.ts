/**
 * Keyset cursors: an opaque token holding the last item's position, bound to the list it
 * came from (e.g. "submissions:bot_…") by a MAC over both, so that an edited token or one
 * from another list is refused. Cursors carry nothing secret: only a position in a list
 * the caller may read anyway.
 */
import { Either } from "effect"
import { invalid, type ValidationFailed } from "./errors.js"
import type { ListPosition } from "./models.js"

/** A keyed hash; the caller supplies it (HMAC-SHA256 through the Crypto port). */
export type Mac = (message: string) => string

const MAC_LENGTH = 16

const toBase64Url = (text: string): string => {
  const bytes = new TextEncoder().encode(text)
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")
}

const fromBase64Url = (token: string): string | null => {
  if (!/^[A-Za-z0-9_-]*$/.test(token)) return null
  try {
    const binary = atob(token.replace(/-/g, "+").replace(/_/g, "/"))
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)))
  } catch {
    return null
  }
}

export const encodeCursor = (list: string, position: ListPosition, mac: Mac): string => {
  const body = `${position.createdAt}.${position.id}`
  return toBase64Url(`${body}.${mac(`${list}|${body}`).slice(0, MAC_LENGTH)}`)
}

const badCursor = (): ValidationFailed =>
  invalid([{ path: "cursor", message: "is not a cursor of this list" }])

export const decodeCursor = (
  list: string,
  token: string,
  mac: Mac
): Either.Either<ListPosition, ValidationFailed> => {
  const text = fromBase64Url(token)
  const match = text === null ? null : /^(\d{1,15})\.([a-z]{2,4}_[0-9a-z]{1,64})\.([0-9a-f]+)$/.exec(text)
  if (match === null) return Either.left(badCursor())
  const [, millis, id, tag] = match as unknown as [string, string, string, string]
  const body = `${millis}.${id}`
  if (tag !== mac(`${list}|${body}`).slice(0, MAC_LENGTH)) return Either.left(badCursor())
  return Either.right({ createdAt: Number(millis), id })
}

/** The cursor of the page after `items`, or null when there is none. */
export const nextCursor = <A extends ListPosition>(
  list: string,
  items: ReadonlyArray<A>,
  hasMore: boolean,
  mac: Mac
): string | null => {
  const last = items[items.length - 1]
  return hasMore && last !== undefined
    ? encodeCursor(list, { createdAt: last.createdAt, id: last.id }, mac)
    : null
}

/** Newest-first order: created_at desc, then id desc. */
export const newestFirst = (a: ListPosition, b: ListPosition): number =>
  b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

/** True when `item` comes strictly after `position` in newest-first order. */
export const isAfter = (item: ListPosition, position: ListPosition | null): boolean =>
  position === null ||
  item.createdAt < position.createdAt ||
  (item.createdAt === position.createdAt && item.id < position.id)
