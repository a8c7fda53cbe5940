/**
 * Platform services every runtime uses: node:crypto behind the Crypto port, and
 * time-sortable identifiers (ULID layout: 10 characters of milliseconds, 16 random).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { Crypto, Ids } from "@intake/domain"
import { Clock, Effect, Layer } from "effect"

export const NodeCryptoLive = Layer.succeed(Crypto, {
  sha256Hex: (input) => createHash("sha256").update(input).digest("hex"),
  hmacSha256: (key, message) => new Uint8Array(createHmac("sha256", key).update(message).digest()),
  randomBytes: (size) => new Uint8Array(randomBytes(size)),
  constantTimeEqual: (a, b) => {
    const left = Buffer.from(a)
    const right = Buffer.from(b)
    // Compare against itself on a length mismatch so the time does not reveal the length.
    return left.length === right.length ? timingSafeEqual(left, right) : !timingSafeEqual(left, left)
  }
})

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

const encodeTime = (millis: number): string => {
  let out = ""
  let rest = millis
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[rest % 32] + out
    rest = Math.floor(rest / 32)
  }
  return out
}

export const IdsLive = Layer.effect(
  Ids,
  Effect.gen(function* () {
    const crypto = yield* Crypto
    return {
      next: (prefix) =>
        Effect.map(Clock.currentTimeMillis, (millis) => {
          const random = crypto.randomBytes(16)
          let tail = ""
          for (const byte of random) tail += CROCKFORD[byte & 31]
          return `${prefix}_${encodeTime(millis)}${tail}`.toLowerCase()
        })
    }
  })
)

export const PlatformLive = IdsLive.pipe(Layer.provideMerge(NodeCryptoLive))
