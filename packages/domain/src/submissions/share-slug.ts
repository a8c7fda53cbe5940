/**
 * The bot's share slug: 8 letters and digits drawn uniformly from random bytes. Bytes at
 * or above 248 (the largest multiple of 62 under 256) are skipped, so that no character
 * is likelier than another (no modulo bias).
 */
export const SLUG_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
export const SLUG_LENGTH = 8
const ACCEPT_BELOW = 256 - (256 % SLUG_ALPHABET.length)

export const isShareSlug = (value: string): boolean => /^[A-Za-z0-9]{8}$/.test(value)

/** The slug these bytes give, or null when too few of them are usable. */
export const slugFromBytes = (bytes: Uint8Array): string | null => {
  let slug = ""
  for (const byte of bytes) {
    if (byte >= ACCEPT_BELOW) continue
    slug += SLUG_ALPHABET[byte % SLUG_ALPHABET.length]
    if (slug.length === SLUG_LENGTH) return slug
  }
  return null
}

/** A slug from a source of random bytes (the Crypto port's `randomBytes`). */
export const generateSlug = (randomBytes: (size: number) => Uint8Array): string => {
  for (;;) {
    // 16 bytes leave 8 usable ones with overwhelming probability (each is usable with p = 248/256).
    const slug = slugFromBytes(randomBytes(16))
    if (slug !== null) return slug
  }
}
