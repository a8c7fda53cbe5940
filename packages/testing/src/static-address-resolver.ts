/** A DNS test double: answers from a fixed table; a name not in it does not resolve. */
import { AddressResolver } from "@intake/domain"
import { Effect, Layer } from "effect"

export const StaticAddressResolver = (
  addresses: Readonly<Record<string, ReadonlyArray<string>>>
): Layer.Layer<AddressResolver> => {
  const table = new Map(Object.entries(addresses).map(([host, ips]) => [host.toLowerCase(), ips]))
  return Layer.succeed(AddressResolver, {
    resolve: (host) => Effect.succeed(table.get(host.toLowerCase()) ?? [])
  })
}
