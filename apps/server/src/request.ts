/**
 * A request as the pipeline sees it: node's message, its method and headers, and its path
 * exactly as sent. The path is not resolved as a URL would be: `/v1/%2e%2e/admin/...`
 * stays under /v1 (and matches no route there) instead of becoming `/admin/...`.
 */
import type { IncomingHttpHeaders, IncomingMessage } from "node:http"
import { ClientAddress } from "@intake/domain/internal"

export interface IncomingRequest {
  readonly method: string
  readonly headers: IncomingHttpHeaders
  /** The path as sent: percent-escapes kept, dot segments not resolved. */
  readonly pathname: string
  /** What follows "?" ("" when nothing does). */
  readonly search: string
  /** The peer's address, undefined once the socket is gone. */
  readonly remoteAddress: string | undefined
  readonly message: IncomingMessage
}

/** The path and query of a request target: origin-form as sent; absolute-form keeps its path. */
const splitTarget = (target: string): { pathname: string; search: string } => {
  let path = target
  if (!path.startsWith("/")) {
    // Absolute-form (`GET http://host/path`), which proxies send: only its path counts.
    const schemeEnd = path.indexOf("://")
    const pathStart = schemeEnd < 0 ? -1 : path.indexOf("/", schemeEnd + 3)
    path = pathStart < 0 ? "/" : path.slice(pathStart)
  }
  const query = path.indexOf("?")
  return query < 0
    ? { pathname: path, search: "" }
    : { pathname: path.slice(0, query), search: path.slice(query + 1) }
}

export const toIncomingRequest = (message: IncomingMessage): IncomingRequest => {
  const { pathname, search } = splitTarget(message.url ?? "/")
  return {
    method: message.method ?? "GET",
    headers: message.headers,
    pathname,
    search,
    remoteAddress: message.socket.remoteAddress,
    message
  }
}

/** The client's address: the socket's, or X-Forwarded-For's past trusted proxies only. */
export const clientIp = (
  request: IncomingRequest,
  trusted: ReadonlyArray<ClientAddress.AddressRange> = []
) => {
  const forwarded = request.headers["x-forwarded-for"]
  return ClientAddress.clientAddress(
    request.remoteAddress ?? "unknown",
    Array.isArray(forwarded) ? forwarded.join(", ") : forwarded,
    trusted
  )
}

/** The client's address when all that was read is the socket (node's parser refused the request). */
export const socketClientIp = (remoteAddress: string | undefined) => remoteAddress ?? "unknown"

/**
 * The query's parameters, the last of a repeated name winning (as `Object.fromEntries(new
 * URLSearchParams(search))`, which this is). Names and values with neither "%" nor "+"
 * need no decoding and are taken as they are; any other query (or one starting with "?",
 * which URLSearchParams drops) goes to URLSearchParams.
 */
export const queryParams = (search: string): Record<string, string> => {
  if (search.includes("%") || search.includes("+") || search.startsWith("?"))
    return Object.fromEntries(new URLSearchParams(search))
  const entries: Array<[string, string]> = []
  for (const pair of search.split("&")) {
    if (pair === "") continue
    const equals = pair.indexOf("=")
    entries.push(equals < 0 ? [pair, ""] : [pair.slice(0, equals), pair.slice(equals + 1)])
  }
  return Object.fromEntries(entries)
}
