import { describe, expect, it } from "@effect/vitest"
import { Crypto, Ids } from "@intake/domain"
import { Effect } from "effect"
import { PlatformLive } from "../src/platform.js"

describe("the platform's random bytes", () => {
  it.effect("hand out every byte once: many draws across pool refills never repeat", () =>
    Effect.gen(function* () {
      const crypto = yield* Crypto
      const seen = new Set<string>()
      // 20,000 draws of 16 bytes: about 80 refills of the 4 KB pool, and a draw larger than it.
      for (let i = 0; i < 20_000; i++) seen.add(Buffer.from(crypto.randomBytes(16)).toString("hex"))
      expect(seen.size).toBe(20_000)
      const large = crypto.randomBytes(10_000)
      expect(large.length).toBe(10_000)
      expect(new Set(large).size).toBeGreaterThan(200)
    }).pipe(Effect.provide(PlatformLive))
  )

  it.effect("ids keep their layout: prefix, 10 time and 16 random characters", () =>
    Effect.gen(function* () {
      const ids = yield* Ids
      const id = yield* ids.next("sub")
      expect(id).toMatch(/^sub_[0-9a-hjkmnp-tv-z]{26}$/)
    }).pipe(Effect.provide(PlatformLive))
  )

  it.effect("ids sort by their time: the time part is the millisecond in base 32, whatever came before", () =>
    Effect.gen(function* () {
      const ids = yield* Ids
      const timeOf = (id: string) => id.slice(4, 14)
      const decode = (time: string) =>
        [...time].reduce((value, char) => value * 32 + "0123456789abcdefghjkmnpqrstvwxyz".indexOf(char), 0)
      const at = 1_790_000_000_123
      const first = ids.at("sub", at)
      const second = ids.at("evt", at)
      const later = ids.at("con", at + 1)
      const earlier = ids.at("msg", at - 40_000)
      expect(decode(timeOf(first))).toBe(at)
      expect(timeOf(second)).toBe(timeOf(first))
      expect(first.slice(14)).not.toBe(second.slice(14))
      expect(decode(timeOf(later))).toBe(at + 1)
      expect(decode(timeOf(earlier))).toBe(at - 40_000)
      expect([later, first, earlier].map(timeOf).sort()).toEqual([earlier, first, later].map(timeOf))
    }).pipe(Effect.provide(PlatformLive))
  )
})
