import { describe, expect, it } from "@effect/vitest"
import { ApiKeyFormat } from "@intake/domain/internal"
import { Either } from "effect"

const { generateApiKey, parseBearer, checksumOf, crc32, toBase62, BASE62_ALPHABET } = ApiKeyFormat

/** A byte source that hands out `bytes` in order, then zeros. */
const bytesFrom = (bytes: ReadonlyArray<number>) => {
  const queue = [...bytes]
  return (size: number) => Uint8Array.from({ length: size }, () => queue.shift() ?? 0)
}

const randomBytes = (size: number) => crypto.getRandomValues(new Uint8Array(size))

const RANDOM_PART = "abcdefghijklmnopqrstuvwxyz012345"
const KNOWN_KEY = `svc_live_${RANDOM_PART}1nc0VA`

describe("API key format", () => {
  it("CRC32 is the IEEE polynomial (check value of '123456789')", () => {
    expect(crc32("123456789")).toBe(0xcbf43926)
    expect(crc32("")).toBe(0)
    expect(crc32(RANDOM_PART)).toBe(1649231692)
  })

  it("base62 encodes left-padded to the width", () => {
    expect(toBase62(0, 6)).toBe("000000")
    expect(toBase62(61, 6)).toBe("00000z")
    expect(toBase62(62, 6)).toBe("000010")
    expect(toBase62(0xffffffff, 6)).toBe("4gfFC3")
    expect(checksumOf(RANDOM_PART)).toBe("1nc0VA")
  })

  it("a generated key is svc_live_, 32 base62 characters and their checksum", () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey(randomBytes)
      expect(key).toMatch(/^svc_live_[0-9A-Za-z]{38}$/)
      expect(key.slice(-6)).toBe(checksumOf(key.slice(9, 41)))
      expect(parseBearer(`Bearer ${key}`)).toEqual(Either.right(key))
    }
  })

  it("generated keys differ", () => {
    const keys = new Set(Array.from({ length: 500 }, () => generateApiKey(randomBytes)))
    expect(keys.size).toBe(500)
  })

  it("maps each byte below 248 to alphabet[byte % 62] and skips bytes of 248 and above (no modulo bias)", () => {
    for (let byte = 0; byte < 256; byte++) {
      const first = generateApiKey(bytesFrom([byte, 1]))[9]
      expect(first).toBe(byte < 248 ? BASE62_ALPHABET[byte % 62] : BASE62_ALPHABET[1])
    }
    // Each character is reached by exactly 4 of the 248 accepted byte values.
    const reach = new Map<string, number>()
    for (let byte = 0; byte < 248; byte++) {
      const char = generateApiKey(bytesFrom([byte]))[9]!
      reach.set(char, (reach.get(char) ?? 0) + 1)
    }
    expect(reach.size).toBe(62)
    expect([...reach.values()].every((n) => n === 4)).toBe(true)
  })

  it("keeps asking for bytes while too many are rejected", () => {
    const key = generateApiKey(bytesFrom([...Array(100).fill(255), 10]))
    expect(key.slice(9, 11)).toBe("A0")
    expect(parseBearer(`Bearer ${key}`)._tag).toBe("Right")
  })
})

describe("parseBearer", () => {
  const rejection = (header: string | undefined) => Either.flip(parseBearer(header)).pipe(Either.getOrNull)

  it("answers the key of a well-formed header", () => {
    expect(parseBearer(`Bearer ${KNOWN_KEY}`)).toEqual(Either.right(KNOWN_KEY))
    expect(parseBearer(`bearer ${KNOWN_KEY}`)).toEqual(Either.right(KNOWN_KEY))
    expect(parseBearer(`BEARER  ${KNOWN_KEY} `)).toEqual(Either.right(KNOWN_KEY))
  })

  it("refuses a missing or empty header", () => {
    expect(rejection(undefined)).toBe("missing")
    expect(rejection("")).toBe("missing")
    expect(rejection("   ")).toBe("missing")
  })

  it("refuses other schemes and a Bearer without exactly one token", () => {
    expect(rejection(`Basic ${KNOWN_KEY}`)).toBe("not_bearer")
    expect(rejection(KNOWN_KEY)).toBe("not_bearer")
    expect(rejection("Bearer")).toBe("not_bearer")
    expect(rejection("Bearer ")).toBe("not_bearer")
    expect(rejection(`Bearer ${KNOWN_KEY} extra`)).toBe("not_bearer")
    expect(rejection(`Bearer\t${KNOWN_KEY}`)).toBe("not_bearer")
  })

  it("refuses test keys, even well-formed ones", () => {
    expect(rejection(`Bearer svc_test_${RANDOM_PART}1nc0VA`)).toBe("test_key")
    expect(rejection("Bearer svc_test_x")).toBe("test_key")
  })

  it("refuses keys of the wrong prefix, length or alphabet", () => {
    expect(rejection(`Bearer svc_prod_${RANDOM_PART}1nc0VA`)).toBe("malformed")
    expect(rejection(`Bearer ${KNOWN_KEY}0`)).toBe("malformed")
    expect(rejection(`Bearer ${KNOWN_KEY.slice(0, -1)}`)).toBe("malformed")
    expect(rejection(`Bearer svc_live_${RANDOM_PART.slice(0, -1)}-1nc0VA`)).toBe("malformed")
    expect(rejection(`Bearer svc_live_${RANDOM_PART.slice(0, -1)}é1nc0VA`)).toBe("malformed")
    expect(rejection("Bearer sk_live_abc")).toBe("malformed")
  })

  it("refuses every single-character typo of a key by its checksum", () => {
    const typos: Array<string> = []
    for (let position = 9; position < KNOWN_KEY.length; position++) {
      for (const replacement of ["0", "a", "Z", "9"]) {
        if (KNOWN_KEY[position] === replacement) continue
        typos.push(KNOWN_KEY.slice(0, position) + replacement + KNOWN_KEY.slice(position + 1))
      }
    }
    expect(typos.length).toBeGreaterThan(140)
    for (const typo of typos) expect([typo, rejection(`Bearer ${typo}`)]).toEqual([typo, "bad_checksum"])
  })

  it("refuses two swapped neighbouring characters", () => {
    const swapped = `svc_live_${RANDOM_PART.slice(0, 4)}${RANDOM_PART[5]}${RANDOM_PART[4]}${RANDOM_PART.slice(6)}1nc0VA`
    expect(rejection(`Bearer ${swapped}`)).toBe("bad_checksum")
  })
})
