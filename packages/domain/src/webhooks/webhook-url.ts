/**
 * Which receiver URLs a webhook endpoint may have (docs/rules.md, Webhooks and deliveries): an absolute
 * https URL of at most 2,048 characters, without user or password, with a host; and an
 * address that is public. `allowPrivateNetworks` (development and tests) admits http and
 * every address.
 *
 * Syntax problems are 400; an address in a forbidden range (an IP literal, or what a
 * name resolves to) is 422. The address check runs again at every delivery, so that a
 * name re-pointed after creation (DNS rebinding) is caught.
 */
import type { ValidationIssue } from "../shared/errors.js"

import { parseIPv4, parseIPv6 } from "../shared/ip-address.js"
export const URL_MAX_LENGTH = 2048

export type AddressClass =
  | "public"
  | "loopback"
  | "private"
  | "link-local"
  | "multicast"
  | "reserved"
  | "unspecified"

// ---------------------------------------------------------------- address literals

export { parseIPv4, parseIPv6 } from "../shared/ip-address.js"

const inV4 = (bytes: ReadonlyArray<number>, prefix: ReadonlyArray<number>, bits: number): boolean => {
  for (let bit = 0; bit < bits; bit++) {
    const byte = bit >> 3
    const mask = 0x80 >> (bit & 7)
    if ((bytes[byte]! & mask) !== (prefix[byte]! & mask)) return false
  }
  return true
}

const classifyIPv4 = (b: ReadonlyArray<number>): AddressClass => {
  const ranges: ReadonlyArray<readonly [ReadonlyArray<number>, number, AddressClass]> = [
    [[0, 0, 0, 0], 32, "unspecified"],
    [[0, 0, 0, 0], 8, "reserved"], // "this network"
    [[10, 0, 0, 0], 8, "private"],
    [[100, 64, 0, 0], 10, "private"], // shared address space (carrier-grade NAT)
    [[127, 0, 0, 0], 8, "loopback"],
    [[169, 254, 0, 0], 16, "link-local"],
    [[172, 16, 0, 0], 12, "private"],
    [[192, 0, 0, 0], 24, "reserved"], // IETF protocol assignments
    [[192, 0, 2, 0], 24, "reserved"], // TEST-NET-1
    [[192, 88, 99, 0], 24, "reserved"], // 6to4 relay anycast (deprecated)
    [[192, 168, 0, 0], 16, "private"],
    [[198, 18, 0, 0], 15, "reserved"], // benchmarking
    [[198, 51, 100, 0], 24, "reserved"], // TEST-NET-2
    [[203, 0, 113, 0], 24, "reserved"], // TEST-NET-3
    [[224, 0, 0, 0], 4, "multicast"],
    [[240, 0, 0, 0], 4, "reserved"] // includes the broadcast 255.255.255.255
  ]
  for (const [prefix, bits, kind] of ranges) if (inV4(b, prefix, bits)) return kind
  return "public"
}

const startsWith = (bytes: ReadonlyArray<number>, prefix: ReadonlyArray<number>): boolean =>
  prefix.every((byte, i) => bytes[i] === byte)

const classifyIPv6 = (b: ReadonlyArray<number>): AddressClass => {
  const zeros = (n: number) => Array<number>(n).fill(0)
  if (b.every((byte) => byte === 0)) return "unspecified"
  if (startsWith(b, [...zeros(15), 1])) return "loopback"
  // IPv4-mapped ::ffff:0:0/96 and IPv4-compatible ::/96: the embedded IPv4 address decides.
  if (startsWith(b, [...zeros(10), 0xff, 0xff]) || startsWith(b, zeros(12))) return classifyIPv4(b.slice(12))
  // NAT64 well-known prefix 64:ff9b::/96 reaches the embedded IPv4 address.
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b, ...zeros(8)])) return classifyIPv4(b.slice(12))
  // Local-use NAT64 64:ff9b:1::/48 translates into a private network.
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b, 0x00, 0x01])) return "private"
  // 6to4 2002::/16 carries the IPv4 address of its relay in bytes 2 to 5.
  if (startsWith(b, [0x20, 0x02])) return classifyIPv4(b.slice(2, 6))
  if (b[0] === 0xff) return "multicast"
  if ((b[0]! & 0xfe) === 0xfc) return "private" // unique local fc00::/7
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return "link-local" // fe80::/10
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return "private" // site-local fec0::/10 (deprecated)
  // Inside global unicast 2000::/3: IETF protocol assignments 2001::/23 (Teredo,
  // benchmarking, ORCHID), documentation 2001:db8::/32 and 3fff::/20.
  if (b[0] === 0x20 && b[1] === 0x01 && (b[2]! & 0xfe) === 0x00) return "reserved"
  if (startsWith(b, [0x20, 0x01, 0x0d, 0xb8])) return "reserved"
  if (b[0] === 0x3f && b[1] === 0xff && (b[2]! & 0xf0) === 0x00) return "reserved"
  // Everything outside 2000::/3 is not assigned for global unicast.
  return (b[0]! & 0xe0) === 0x20 ? "public" : "reserved"
}

/** True when `text` is an IPv4 or IPv6 literal (IPv6 without brackets). */
export const isIpLiteral = (text: string): boolean => parseIPv4(text) !== null || parseIPv6(text) !== null

/**
 * The range an IP literal falls in. Text that is not an IP literal is "reserved", so
 * that a caller that forgets to check never lets it through.
 */
export const classifyAddress = (ip: string): AddressClass => {
  const unbracketed = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip
  const v4 = parseIPv4(unbracketed)
  if (v4 !== null) return classifyIPv4(v4)
  const v6 = parseIPv6(unbracketed)
  return v6 === null ? "reserved" : classifyIPv6(v6)
}

// ---------------------------------------------------------------- URLs

export interface WebhookUrlOptions {
  readonly allowPrivateNetworks: boolean
}

/** What the address check needs from a syntactically valid receiver URL. */
export interface ReceiverTarget {
  /** The host without IPv6 brackets, lower case. */
  readonly host: string
  /** True when the host is an IP literal: its address is the host itself, no lookup. */
  readonly isAddress: boolean
}

export type UrlSyntaxCheck =
  | { readonly _tag: "Valid"; readonly target: ReceiverTarget }
  | { readonly _tag: "Invalid"; readonly issues: ReadonlyArray<ValidationIssue> }

const syntaxIssue = (message: string): UrlSyntaxCheck => ({
  _tag: "Invalid",
  issues: [{ path: "url", message }]
})

const hasSpaceOrControl = (text: string): boolean =>
  /\s/.test(text) || [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)

/** The 400 rules of a receiver URL. */
export const checkUrlSyntax = (raw: string, options: WebhookUrlOptions): UrlSyntaxCheck => {
  if (raw.length > URL_MAX_LENGTH) return syntaxIssue(`must be at most ${URL_MAX_LENGTH} characters`)
  // The URL parser would silently drop them, and the stored URL would not be the one parsed.
  if (hasSpaceOrControl(raw)) return syntaxIssue("must not contain spaces or control characters")
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return syntaxIssue("must be an absolute URL")
  }
  const schemeAllowed =
    url.protocol === "https:" || (options.allowPrivateNetworks && url.protocol === "http:")
  if (!schemeAllowed)
    return syntaxIssue(options.allowPrivateNetworks ? "must use https or http" : "must use https")
  if (url.username !== "" || url.password !== "") return syntaxIssue("must not contain a user or password")
  if (url.hostname === "") return syntaxIssue("must name a host")
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  return { _tag: "Valid", target: { host: host.toLowerCase(), isAddress: isIpLiteral(host) } }
}

/** True when a receiver at this address may be called under `options`. */
export const isAllowedAddress = (ip: string, options: WebhookUrlOptions): boolean =>
  options.allowPrivateNetworks || classifyAddress(ip) === "public"

/** Names that are loopback by definition (RFC 6761), refused without a lookup. */
export const isLoopbackName = (host: string): boolean => {
  const name = host.toLowerCase().replace(/\.$/, "")
  return name === "localhost" || name.endsWith(".localhost")
}

/** The 422 issue for a receiver whose address is refused, naming the range. */
export const forbiddenAddressIssue = (host: string, ip: string): ValidationIssue => ({
  path: "url",
  message:
    host === ip
      ? `points to a ${classifyAddress(ip)} address, which is not allowed`
      : `resolves to a ${classifyAddress(ip)} address (${ip}), which is not allowed`
})

export const unresolvableIssue = (host: string): ValidationIssue => ({
  path: "url",
  message: `host ${host} does not resolve to an address`
})
