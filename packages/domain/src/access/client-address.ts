/**
 * Who the client is, for the per-address rate limits (docs/choices.md, Access): the socket's
 * peer, unless that peer is a trusted proxy (INTAKE_TRUSTED_PROXIES). Then X-Forwarded-For
 * is read from the right, skipping trusted hops only: the first address a trusted hop did
 * not write about itself is the client. Entries to its left were written by the client
 * (or whoever it talked to) and are never believed.
 */
import { Either } from "effect"
import { parseIPv4, parseIPv6 } from "../shared/ip-address.js"

/** An address range: sixteen bytes (IPv4 as `::ffff:a.b.c.d`) and how many leading bits count. */
export interface AddressRange {
  readonly bytes: ReadonlyArray<number>
  readonly prefixBits: number
}

const V4_MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]

/** Sixteen bytes for an IPv4 or IPv6 literal (IPv4 mapped, so both forms match alike), or null. */
const addressBytes = (
  text: string
): { readonly bytes: ReadonlyArray<number>; readonly v4: boolean } | null => {
  const v4 = parseIPv4(text)
  if (v4 !== null) return { bytes: [...V4_MAPPED, ...v4], v4: true }
  // A zone (`fe80::1%eth0`) names an interface, not a range: refused rather than ignored.
  if (text.includes("%")) return null
  const v6 = parseIPv6(text)
  return v6 === null ? null : { bytes: v6, v4: false }
}

/** `10.0.0.0/8`, `192.168.1.7`, `2001:db8::/32`, `::1`: one range, or why not. */
export const parseRange = (text: string): AddressRange | string => {
  const [address = "", prefix, ...extra] = text.split("/")
  const parsed = addressBytes(address)
  if (parsed === null || extra.length > 0) return `"${text}" is not an IP address or CIDR range`
  const width = parsed.v4 ? 32 : 128
  if (prefix === undefined) return { bytes: parsed.bytes, prefixBits: 128 }
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > width)
    return `"${text}" has a prefix length outside 0 to ${width}`
  return { bytes: parsed.bytes, prefixBits: Number(prefix) + (parsed.v4 ? 96 : 0) }
}

/** A comma-separated list of ranges (spaces allowed); empty means none. */
export const parseTrustedProxies = (text: string): Either.Either<ReadonlyArray<AddressRange>, string> => {
  const ranges: Array<AddressRange> = []
  for (const item of text.split(",")) {
    const trimmed = item.trim()
    if (trimmed === "") continue
    const range = parseRange(trimmed)
    if (typeof range === "string") return Either.left(range)
    ranges.push(range)
  }
  return Either.right(ranges)
}

const inRange = (bytes: ReadonlyArray<number>, range: AddressRange): boolean => {
  for (let bit = 0; bit < range.prefixBits; bit++) {
    const mask = 0x80 >> (bit & 7)
    if ((bytes[bit >> 3]! & mask) !== (range.bytes[bit >> 3]! & mask)) return false
  }
  return true
}

const isTrusted = (address: string, trusted: ReadonlyArray<AddressRange>): boolean => {
  const parsed = addressBytes(address)
  return parsed !== null && trusted.some((range) => inRange(parsed.bytes, range))
}

/**
 * One X-Forwarded-For entry as an address: trimmed, without brackets or a port
 * (`1.2.3.4:5678`, `[2001:db8::1]:443`, which some proxies append); null when it is none.
 */
const forwardedAddress = (entry: string): string | null => {
  const text = entry.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text)
  const candidate = bracketed?.[1] ?? /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(text)?.[1] ?? text
  return addressBytes(candidate) === null ? null : candidate
}

/**
 * The client's address: `socketAddress` unless it is a trusted proxy; then the rightmost
 * X-Forwarded-For entry that is not a trusted proxy. Every entry trusted (or none sent):
 * the leftmost one reached. An entry that is not an address stops the walk at the last
 * trusted hop, which is then the address: what lies beyond it cannot be believed.
 */
export const clientAddress = (
  socketAddress: string,
  forwardedFor: string | undefined,
  trusted: ReadonlyArray<AddressRange>
): string => {
  if (trusted.length === 0 || forwardedFor === undefined || !isTrusted(socketAddress, trusted))
    return socketAddress
  const hops = forwardedFor.split(",")
  let client = socketAddress
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = hops[index]!
    const address = forwardedAddress(hop)
    if (address === null) return client
    client = address
    if (!isTrusted(address, trusted)) return address
  }
  return client
}
