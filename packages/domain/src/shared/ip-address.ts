/** IP literals as bytes, for the receiver-address rule (webhooks/webhook-url.ts) and the client address (access/client-address.ts). */
/** The four bytes of a dotted-quad IPv4 literal, or null. */
export const parseIPv4 = (text: string): ReadonlyArray<number> | null => {
  const parts = text.split(".")
  if (parts.length !== 4) return null
  const bytes: Array<number> = []
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return null
    const value = Number(part)
    if (value > 255) return null
    bytes.push(value)
  }
  return bytes
}

/**
 * The sixteen bytes of an IPv6 literal (without brackets; a zone such as `%eth0` is
 * ignored), including the forms with a trailing dotted quad (`::ffff:127.0.0.1`), or null.
 */
export const parseIPv6 = (input: string): ReadonlyArray<number> | null => {
  const text = input.replace(/%[^%]+$/, "")
  if (!/^[0-9A-Fa-f:.]+$/.test(text)) return null
  const halves = text.split("::")
  if (halves.length > 2) return null
  const groupsOf = (part: string): Array<number> | null => {
    if (part === "") return []
    const out: Array<number> = []
    const pieces = part.split(":")
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!
      if (i === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseIPv4(piece)
        if (v4 === null) return null
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!)
      } else {
        if (!/^[0-9A-Fa-f]{1,4}$/.test(piece)) return null
        out.push(Number.parseInt(piece, 16))
      }
    }
    return out
  }
  const head = groupsOf(halves[0]!)
  const tail = halves.length === 2 ? groupsOf(halves[1]!) : []
  if (head === null || tail === null) return null
  // A dotted quad may only end the address.
  if (halves.length === 2 && halves[0]!.includes(".")) return null
  const missing = 8 - head.length - tail.length
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null
  const groups = [...head, ...Array<number>(halves.length === 2 ? missing : 0).fill(0), ...tail]
  return groups.flatMap((group) => [group >> 8, group & 0xff])
}
