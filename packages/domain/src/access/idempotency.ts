/**
 * Idempotent POSTs (docs/rules.md, Idempotency). The claim, the operation's writes and the
 * stored response share one unit of work, so a crash never leaves one without the other.
 * Nothing runs in a savepoint (each would cost a round trip on every request): when the
 * operation fails with an error worth replaying (404, 409, quota), its whole unit of work
 * is rolled back, and a second one claims the key again and stores the response. When
 * `complete` finds a record the claim could not see (a duplicate that committed while the
 * claim ran), that unit of work is rolled back too and the key claimed again: now it
 * replays (or conflicts), and the operation's writes never commit twice. The first claim
 * only claims a fresh key (`claimFresh`), which a store may send with the operation's
 * first statement; a key held or with a record fails it, and the unit of work is rolled
 * back and a claim that reads the record answers (a replay, a conflict). An operation that
 * calls out (test, redeliver) runs outside any unit of work instead, under a reservation
 * of the key (runOutsideTransaction).
 */
import { Cause, Clock, Data, Effect, Exit, Layer, Option } from "effect"
import { canonicalJson } from "../shared/canonical-json.js"
import { IdempotencyConflict, StorageUnavailable } from "../shared/errors.js"
import { withLastSteps } from "../shared/last-steps.js"
import { Crypto, UnitOfWork } from "../shared/ports.js"
import {
  type IdempotencyClaim,
  IdempotencyClaimNotFresh,
  IdempotencyRecordExists,
  IdempotencyStore,
  type StoredResponse
} from "./ports.js"
import { Idempotency, type IdempotentOutcome } from "./services.js"

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000

const FRESH: IdempotencyClaim = { _tag: "Fresh" }

/**
 * How long a key stays reserved for an operation outside a unit of work when its process
 * dies before completing or releasing it: well past the 10 s send and the request deadline.
 */
export const IDEMPOTENCY_RESERVATION_MS = 2 * 60 * 1000

/**
 * Only a plain failure of the operation may be stored: not a defect, an interruption or a
 * storage fault, nor the stored response's or the fresh claim's own failure, which on
 * PostgreSQL a step of the operation may report (it carries that statement:
 * IdempotencyStore.complete, IdempotencyStore.claimFresh).
 */
const storableFailure = <E>(cause: Cause.Cause<E>): Option.Option<E> => {
  const failure = Cause.failureOption(cause)
  return Option.isSome(failure) &&
    !(failure.value instanceof StorageUnavailable) &&
    !(failure.value instanceof IdempotencyRecordExists) &&
    !(failure.value instanceof IdempotencyClaimNotFresh) &&
    !Cause.isDie(cause) &&
    !Cause.isInterrupted(cause)
    ? failure
    : Option.none()
}

/** The operation failed with an error worth replaying: roll its writes back, then store `response`. */
class UndoThenStore extends Data.TaggedError("IdempotencyUndoThenStore")<{
  readonly error: unknown
  readonly response: StoredResponse
}> {}

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
        type Answer = Exit.Exit<IdempotentOutcome<A>, E>
        const replayed = (response: StoredResponse): Answer => Exit.succeed({ _tag: "Replayed", response })

        /** Stores `response` unless a record the claim did not see is there (then IdempotencyRecordExists). */
        const complete = (response: StoredResponse, now: number) =>
          store.complete(scope, request.fingerprint, response, now, now + IDEMPOTENCY_TTL_MS)

        /** A failure worth replaying is undone, then stored (UndoThenStore); any other rolls back as it is. */
        const failed = (cause: Cause.Cause<E>): Effect.Effect<never, E | UndoThenStore> => {
          // Only a plain failure of the operation may be stored: defects, interruptions
          // and storage faults roll the whole unit of work back, claim included.
          const failure = storableFailure(cause)
          const response = Option.isSome(failure) ? responses.onFailure(failure.value) : undefined
          if (response === undefined || Option.isNone(failure)) return Effect.failCause(cause)
          return Effect.fail(new UndoThenStore({ error: failure.value, response }))
        }

        /**
         * The operation's outcome: its response stored, then the steps it left for last (a
         * create's quota reservation: shared/last-steps.ts), so their locks are held for the COMMIT
         * only. A last step that fails fails the operation: the whole unit of work, response
         * included, is undone, and the failure is stored as the operation's own would be.
         */
        const settle = (
          exit: Exit.Exit<A, E>,
          now: number,
          lastSteps: ReadonlyArray<Effect.Effect<void, unknown>>
        ): Effect.Effect<Answer, E | UndoThenStore | Effect.Effect.Error<ReturnType<typeof complete>>> => {
          if (Exit.isFailure(exit)) return failed(exit.cause)
          const fresh = Exit.succeed<IdempotentOutcome<A>>({ _tag: "Fresh", value: exit.value })
          const stored = complete(responses.onSuccess(exit.value), now)
          if (lastSteps.length === 0) return Effect.as(stored, fresh)
          return Effect.zipRight(
            stored,
            Effect.flatMap(
              // In order, as a chain (a create leaves one): Effect.forEach costs a loop and regions of its own.
              Effect.exit(lastSteps.reduce((earlier, step) => Effect.zipRight(earlier, step))),
              (done) => (Exit.isSuccess(done) ? Effect.succeed(fresh) : failed(done.cause as Cause.Cause<E>))
            )
          )
        }

        /** A claim of a fresh key only: it answers Fresh or fails (IdempotencyClaimNotFresh). */
        const claimFresh = (now: number) =>
          Effect.as(store.claimFresh(scope, request.fingerprint, now), FRESH)
        /** A claim that reads the record: Fresh, Replay, or a conflict. */
        const claimReading = (now: number) => store.claim(scope, request.fingerprint, now)

        // The claim, the operation and its response: one unit of work, as a chain of steps
        // (a generator would cost a step of the fiber per yield on every create).
        const attempt = <C>(claimed: (now: number) => Effect.Effect<IdempotencyClaim, C>) =>
          uow.transaction(
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.flatMap(claimed(now), (claim) => {
                if (claim._tag === "Replay") return Effect.succeed(replayed(claim.response))
                const lastSteps: Array<Effect.Effect<void, unknown>> = []
                const taken = {
                  add: (step: Effect.Effect<void, unknown>) => {
                    lastSteps.push(step)
                  }
                }
                // The operation leaves its last steps to this unit of work (shared/last-steps.ts).
                return withLastSteps(operation, taken, (exit) => settle(exit, now, lastSteps))
              })
            )
          )

        // The failure's response, in a unit of work of its own (the operation's was rolled back).
        const storeFailure = ({ error, response }: UndoThenStore) =>
          uow.transaction(
            Effect.gen(function* () {
              const now = yield* Clock.currentTimeMillis
              const claim = yield* store.claim(scope, request.fingerprint, now)
              if (claim._tag === "Replay") return replayed(claim.response)
              yield* complete(response, now)
              // Committed with the response; the failure is answered after the commit.
              return Exit.fail(error as E) as Answer
            })
          )

        const once = <C>(claimed: (now: number) => Effect.Effect<IdempotencyClaim, C>) =>
          Effect.catchIf(attempt(claimed), (error) => error instanceof UndoThenStore, storeFailure)
        const reading = once(claimReading)
        // Not fresh: the key is held or has a record, which a claim that reads it tells.
        const first = Effect.catchIf(
          once(claimFresh),
          (error) => error instanceof IdempotencyClaimNotFresh,
          () => reading
        )
        const raced = (error: unknown) => error instanceof IdempotencyRecordExists
        // Raced: the record is there now, so a second claim replays it (or conflicts).
        return Effect.flatten(
          Effect.catchIf(first, raced, () =>
            Effect.catchIf(reading, raced, () =>
              Effect.fail(
                new IdempotencyConflict({
                  message: "A request with this Idempotency-Key is still in progress."
                })
              )
            )
          )
        )
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
          // A record that replaced this reservation once it ran out stays; this operation is still answered.
          const store_ = (response: Parameters<typeof store.complete>[2]) =>
            Effect.catchIf(
              uow.transaction(
                store.complete(scope, request.fingerprint, response, now, now + IDEMPOTENCY_TTL_MS)
              ),
              (error) => error instanceof IdempotencyRecordExists,
              () => Effect.void
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
