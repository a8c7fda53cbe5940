import { describe, expect, it } from "@effect/vitest"
import { AddressResolver, WebhookUrl } from "@intake/domain/internal"
import { Effect } from "effect"
import { NodeAddressResolver } from "../src/platform.js"

describe("NodeAddressResolver", () => {
  it.live("answers the addresses of a name, here the loopback of localhost", () =>
    Effect.gen(function* () {
      const resolver = yield* AddressResolver
      const addresses = yield* resolver.resolve("localhost")
      expect(addresses.length).toBeGreaterThan(0)
      for (const address of addresses) expect(WebhookUrl.classifyAddress(address)).toBe("loopback")
    }).pipe(Effect.provide(NodeAddressResolver))
  )

  it.live("answers an IP literal as itself", () =>
    Effect.gen(function* () {
      const resolver = yield* AddressResolver
      expect(yield* resolver.resolve("10.1.2.3")).toEqual(["10.1.2.3"])
    }).pipe(Effect.provide(NodeAddressResolver))
  )

  it.live("answers no address for a name that cannot exist (.invalid, RFC 6761)", () =>
    Effect.gen(function* () {
      const resolver = yield* AddressResolver
      expect(yield* resolver.resolve("no-such-receiver.invalid")).toEqual([])
    }).pipe(Effect.provide(NodeAddressResolver))
  )
})
