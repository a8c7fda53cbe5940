/**
 * What the client needs of `fetch`, and how a call waits, times out and is cancelled: timers
 * and signals that let go of what they listen to once the call is over.
 */

/** The part of a fetch answer the client reads. */
export interface FetchResponse {
  readonly status: number
  readonly headers: { readonly get: (name: string) => string | null }
  readonly text: () => Promise<string>
}

/** What the client passes to fetch. */
export interface FetchInit {
  readonly method: string
  readonly headers: Record<string, string>
  readonly body?: string
  /** Aborted on the call's timeout or on the caller's signal. */
  readonly signal: AbortSignal
}

/**
 * The global fetch, or any function of the same shape (a test double, a proxy agent). One
 * that ignores `init.signal` is not waited for past the timeout or an abort all the same.
 */
export type Fetch = (url: string, init: FetchInit) => Promise<FetchResponse>

/** The longest delay setTimeout keeps (about 24.8 days): a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export const timerSleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const aborted = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(
      () => {
        signal.removeEventListener("abort", aborted)
        resolve()
      },
      Math.min(ms, MAX_TIMER_MS)
    )
    signal.addEventListener("abort", aborted, { once: true })
  })

/**
 * A signal that aborts when any of `signals` does (with its reason), and `release` to stop
 * listening to them: a client's signal outlives its calls, so each call must let go of it.
 */
export const linkedSignal = (signals: ReadonlyArray<AbortSignal | undefined>) => {
  const controller = new AbortController()
  const sources = signals.filter((signal): signal is AbortSignal => signal !== undefined)
  const listeners = sources.map((source) => {
    const listener = () => controller.abort(source.reason)
    if (source.aborted) controller.abort(source.reason)
    else source.addEventListener("abort", listener, { once: true })
    return [source, listener] as const
  })
  return {
    controller,
    signal: controller.signal,
    release: () => {
      for (const [source, listener] of listeners) source.removeEventListener("abort", listener)
    }
  }
}

/** Settles as `work` does, or rejects with the signal's reason when it aborts first. */
export const unlessAborted = <A>(work: Promise<A>, signal: AbortSignal): Promise<A> =>
  new Promise<A>((resolve, reject) => {
    const aborted = () => reject(signal.reason)
    if (signal.aborted) aborted()
    else signal.addEventListener("abort", aborted, { once: true })
    // Settled either way, so a rejection after the abort is not left unhandled.
    work.then(
      (value) => {
        signal.removeEventListener("abort", aborted)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener("abort", aborted)
        reject(error)
      }
    )
  })
