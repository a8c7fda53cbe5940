/**
 * Idempotent POSTs (decisions.md section 6). The claim, the operation's writes and the
 * stored response share one unit of work, so a crash never leaves one without the other.
 * The operation runs in a nested unit of work (a savepoint): when it fails with an error
 * worth replaying (404, 409, quota), its writes are undone but the response is stored.
 */
import { Cause, Clock, Effect, Exit, Layer, Option } from "effect"
import { StorageUnavailable } from "../errors.js"
import { canonicalJson } from "../policies/canonical-json.js"
import { Crypto, IdempotencyStore, UnitOfWork } from "../ports.js"
import { Idempotency, type IdempotentOutcome } from "./services.js"

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

export const IdempotencyLive = Layer.effect(
  Idempotency,
  Effect.gen(function* () {
    const crypto = yield* Crypto
    const uow = yield* UnitOfWork
    const store = yield* IdempotencyStore

    return Idempotency.of({
      fingerprint: (method, path, body) =>
        crypto.sha256Hex(`${method.toUpperCase()}\n${path}\n${canonicalJson(body)}`),

      run: (request, operation, responses) => {
        const scope = { apiKeyId: request.apiKeyId, key: request.key }
        type A = Effect.Effect.Success<typeof operation>
        type E = Effect.Effect.Error<typeof operation>
        const unit = Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const claim = yield* store.claim(scope, request.fingerprint, now)
          if (claim._tag === "Replay")
            return Exit.succeed<IdempotentOutcome<A>>({ _tag: "Replayed", response: claim.response })
          const store_ = (response: Parameters<typeof store.complete>[2]) =>
            store.complete(scope, request.fingerprint, response, now, now + IDEMPOTENCY_TTL_MS)

          const exit = yield* Effect.exit(uow.transaction(operation))
          if (Exit.isSuccess(exit)) {
            yield* store_(responses.onSuccess(exit.value))
            return Exit.succeed<IdempotentOutcome<A>>({ _tag: "Fresh", value: exit.value })
          }
          // Only a plain failure of the operation may be stored: defects, interruptions
          // and storage faults roll the whole unit of work back, claim included.
          const failure = Cause.failureOption(exit.cause)
          const error =
            Option.isSome(failure) &&
            !(failure.value instanceof StorageUnavailable) &&
            !Cause.isDie(exit.cause) &&
            !Cause.isInterrupted(exit.cause)
              ? Option.some(failure.value as E)
              : Option.none()
          const response = Option.isSome(error) ? responses.onFailure(error.value) : undefined
          if (response === undefined || Option.isNone(error)) return yield* Effect.failCause(exit.cause)
          yield* store_(response)
          // Commit the stored response, then answer with the failure.
          return Exit.fail(error.value)
        })
        return Effect.flatten(uow.transaction(unit))
      }
    })
  })
)
