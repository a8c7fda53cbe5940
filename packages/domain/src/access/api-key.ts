/**
 * API key format (docs/rules.md, API keys): `svc_live_` + 32 random base62 characters + a
 * 6-character base62 checksum (CRC32 of the random part). The checksum lets a mistyped or
 * made-up key be refused without a lookup, and gives secret scanners a pattern to match.
 */
import { Either } from "effect"

export const LIVE_KEY_PREFIX = "svc_live_"
export const TEST_KEY_PREFIX = "svc_test_"
export const RANDOM_PART_LENGTH = 32
export const CHECKSUM_LENGTH = 6
export const API_KEY_LENGTH = LIVE_KEY_PREFIX.length + RANDOM_PART_LENGTH + CHECKSUM_LENGTH

export const BASE62_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ---------------------------------------------------------------- CRC32 (IEEE 802.3)

const CRC32_TABLE: ReadonlyArray<number> = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

/** CRC32 of the UTF-8 bytes of `text`, as an unsigned 32-bit integer. */
export const crc32 = (text: string): number => {
  let crc = 0xffffffff
  for (const byte of new TextEncoder().encode(text)) crc = CRC32_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

/** Base62 of a non-negative integer, left-padded with "0" to `width`. */
export const toBase62 = (value: number, width: number): string => {
  let out = ""
  let rest = value
  do {
    out = BASE62_ALPHABET[rest % 62]! + out
    rest = Math.floor(rest / 62)
  } while (rest > 0)
  return out.padStart(width, "0")
}

/** The checksum of a key's random part: base62 of its CRC32, 6 characters. */
export const checksumOf = (randomPart: string): string => toBase62(crc32(randomPart), CHECKSUM_LENGTH)

// ---------------------------------------------------------------- generation

/** The largest multiple of 62 a byte can hold (4 * 62): bytes at or above it are rejected. */
const UNBIASED_BYTE_LIMIT = 248

/**
 * A new live key. `randomBytes` is the Crypto port's; bytes are mapped to base62 by
 * rejection sampling so that every character is equally likely.
 */
export const generateApiKey = (randomBytes: (size: number) => Uint8Array): string => {
  let randomPart = ""
  while (randomPart.length < RANDOM_PART_LENGTH) {
    // About 3% of bytes are rejected; ask for a few more than needed.
    for (const byte of randomBytes(RANDOM_PART_LENGTH - randomPart.length + 4)) {
      if (byte >= UNBIASED_BYTE_LIMIT) continue
      randomPart += BASE62_ALPHABET[byte % 62]!
      if (randomPart.length === RANDOM_PART_LENGTH) break
    }
  }
  return `${LIVE_KEY_PREFIX}${randomPart}${checksumOf(randomPart)}`
}

// ---------------------------------------------------------------- parsing

/** Why an Authorization header does not carry a usable live key, judged without a lookup. */
export type KeyRejection = "missing" | "not_bearer" | "test_key" | "malformed" | "bad_checksum"

const BASE62_ONLY = /^[0-9A-Za-z]+$/

/** Checks a key's shape and checksum; answers the key itself when it may exist. */
export const checkKeyFormat = (key: string): Either.Either<string, KeyRejection> => {
  if (key.startsWith(TEST_KEY_PREFIX)) return Either.left("test_key")
  if (!key.startsWith(LIVE_KEY_PREFIX) || key.length !== API_KEY_LENGTH) return Either.left("malformed")
  const body = key.slice(LIVE_KEY_PREFIX.length)
  if (!BASE62_ONLY.test(body)) return Either.left("malformed")
  const randomPart = body.slice(0, RANDOM_PART_LENGTH)
  return body.slice(RANDOM_PART_LENGTH) === checksumOf(randomPart)
    ? Either.right(key)
    : Either.left("bad_checksum")
}

/**
 * Extracts the live key from an Authorization header. The scheme is matched
 * case-insensitively (RFC 9110 section 11.1); exactly one token must follow it.
 */
export const parseBearer = (authorization: string | undefined): Either.Either<string, KeyRejection> => {
  if (authorization === undefined || authorization.trim() === "") return Either.left("missing")
  const match = /^Bearer +(\S+) *$/i.exec(authorization)
  if (match === null) return Either.left("not_bearer")
  return checkKeyFormat(match[1]!)
}
