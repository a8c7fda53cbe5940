/**
 * The address half of the receiver-URL rule: a host that is, or resolves to, a
 * forbidden address is refused (422). Creation uses it, and the dispatcher will call
 * `verifyReceiverUrl` before every delivery (DNS rebinding).
 */
import { Effect } from "effect"
import {
  invalid,
  type StorageUnavailable,
  type ValidationFailed,
  type ValidationIssue
} from "../shared/errors.js"
import { AddressResolver } from "./ports.js"
import type { WebhookSettingsValues } from "./webhook-settings.js"
import {
  checkUrlSyntax,
  forbiddenAddressIssue,
  isAllowedAddress,
  isLoopbackName,
  type ReceiverTarget,
  unresolvableIssue
} from "./webhook-url.js"

/** The 422 issues of a syntactically valid receiver (none when it may be called). */
export const receiverAddressIssues = (
  target: ReceiverTarget,
  settings: WebhookSettingsValues
): Effect.Effect<ReadonlyArray<ValidationIssue>, StorageUnavailable, AddressResolver> =>
  Effect.gen(function* () {
    // With private networks allowed every address passes: no lookup needed.
    if (settings.allowPrivateNetworks) return []
    if (target.isAddress)
      return isAllowedAddress(target.host, settings) ? [] : [forbiddenAddressIssue(target.host, target.host)]
    if (isLoopbackName(target.host))
      return [{ path: "url", message: "points to a loopback host, which is not allowed" }]
    const resolver = yield* AddressResolver
    const addresses = yield* resolver.resolve(target.host)
    if (addresses.length === 0) return [unresolvableIssue(target.host)]
    const refused = addresses.find((address) => !isAllowedAddress(address, settings))
    return refused === undefined ? [] : [forbiddenAddressIssue(target.host, refused)]
  })

/** The whole receiver rule for one URL: 400 for its syntax, 422 for its address. */
export const verifyReceiverUrl = (
  url: string,
  settings: WebhookSettingsValues
): Effect.Effect<void, ValidationFailed | StorageUnavailable, AddressResolver> =>
  Effect.gen(function* () {
    const syntax = checkUrlSyntax(url, settings)
    if (syntax._tag === "Invalid") return yield* Effect.fail(invalid(syntax.issues))
    const issues = yield* receiverAddressIssues(syntax.target, settings)
    if (issues.length > 0) return yield* Effect.fail(invalid(issues, { status: 422 }))
  })
