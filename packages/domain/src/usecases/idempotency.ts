/**
 * Idempotent POSTs (decisions.md section 6). The claim, the operation's writes and the
 * stored response share one unit of work, so a crash never leaves one without the other.
 * The operation runs in a nested unit of work (a savepoint): when it fails with an error
 * worth replaying (404, 409, quota), its writes are undone but the response is stored.
 * An operation that calls out runs outside any unit of work instead, under a reservation
 * of the key (runOutsideTransaction).
 */
import { Cause, Clock, Effect, Exit, Layer, Option } from "effect"
import { StorageUnavailable } from "../errors.js"
import { canonicalJson } from "../policies/canonical-json.js"
import { Crypto, IdempotencyStore, UnitOfWork } from "../ports.js"
import { Idempotency, type IdempotentOutcome } from "./services.js"

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

/**
 * How long a key stays reserved for an operation outside a unit of work when its process
 * dies before completing or releasing it: well past the 10 s send and the request deadline.
 */
export const IDEMPOTENCY_RESERVATION_MS = 2 * 60 * 1000

/** Only a plain failure of the operation may be stored: not a defect, an interruption or a storage fault. */
const storableFailure = <E>(cause: Cause.Cause<E>): Option.Option<E> => {
  const failure = Cause.failureOption(cause)
  return Option.isSome(failure) &&
    !(failure.value instanceof StorageUnavailable) &&
    !Cause.isDie(cause) &&
    !Cause.isInterrupted(cause)
    ? failure
    : Option.none()
}

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
          // Defects, interruptions and storage faults roll the whole unit of work back, claim included.
          const error = storableFailure(exit.cause) as Option.Option<E>
          const response = Option.isSome(error) ? responses.onFailure(error.value) : undefined
          if (response === undefined || Option.isNone(error)) return yield* Effect.failCause(exit.cause)
          yield* store_(response)
          // Commit the stored response, then answer with the failure.
          return Exit.fail(error.value)
        })
        return Effect.flatten(uow.transaction(unit))
      },

      runOutsideTransaction: (request, operation, responses) => {
        const scope = { apiKeyId: request.apiKeyId, key: request.key }
        type A = Effect.Effect.Success<typeof operation>
        return Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const claim = yield* uow.transaction(
            store.reserve(scope, request.fingerprint, now, now + IDEMPOTENCY_RESERVATION_MS)
          )
          if (claim._tag === "Replay")
            return { _tag: "Replayed", response: claim.response } as IdempotentOutcome<A>
          const store_ = (response: Parameters<typeof store.complete>[2]) =>
            uow.transaction(
              store.complete(scope, request.fingerprint, response, now, now + IDEMPOTENCY_TTL_MS)
            )
          const release = Effect.ignore(uow.transaction(store.release(scope, request.fingerprint)))
          // Uninterruptible from the reservation on, so the key is always completed or released;
          // the operation itself stays interruptible (a request's deadline cuts it).
          return yield* Effect.uninterruptibleMask((restore) =>
            Effect.gen(function* () {
              const exit = yield* Effect.exit(restore(operation))
              if (Exit.isSuccess(exit)) {
                yield* Effect.onError(store_(responses.onSuccess(exit.value)), () => release)
                return { _tag: "Fresh", value: exit.value } as IdempotentOutcome<A>
              }
              const error = storableFailure(exit.cause)
              const response = Option.isSome(error) ? responses.onFailure(error.value) : undefined
              if (response === undefined) return yield* Effect.zipRight(release, Effect.failCause(exit.cause))
              yield* Effect.onError(store_(response), () => release)
              return yield* Effect.failCause(exit.cause)
            })
          )
        })
      }
    })
  })
)
