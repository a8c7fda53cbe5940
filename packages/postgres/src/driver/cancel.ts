/** The protocol's CancelRequest, for a unit of work interrupted mid-statement (directTransaction). */
import { connect } from "node:net"
import { Effect } from "effect"
import type { PoolClient } from "pg"
import { serialize } from "pg-protocol"
import "./pg-internals.js"

/** How long a cancel request may take to be delivered (connect, send, PostgreSQL closes). */
const CANCEL_TIMEOUT_MS = 5_000

/**
 * PostgreSQL ends the statement a transaction's client still runs (best effort): its answer
 * comes, and the ROLLBACK queued behind it runs. The cancel goes as the protocol's
 * CancelRequest on a connection of its own, never as a statement on a session of the pool:
 * when every session of the pool is held by a unit of work being interrupted (a burst of
 * clients gone, of deadlines passed), a cancel that needed one would wait for the
 * statements it should end, and their locks with them. Settled when PostgreSQL closes that
 * connection (it has signalled the session), on an error, or after CANCEL_TIMEOUT_MS.
 */
export const cancelStatement = (client: PoolClient) =>
  Effect.async<void>((resume) => {
    const { processID, secretKey, host, port } = client
    // pg's client has them once connected; host and port as they were configured.
    if (processID == null || secretKey == null || host === undefined || port === undefined)
      return resume(Effect.void)
    const socket = host.startsWith("/") ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host)
    let settled = false
    const settle = () => {
      if (settled) return
      settled = true
      socket.destroy()
      resume(Effect.void)
    }
    socket.setTimeout(CANCEL_TIMEOUT_MS, settle)
    socket.once("error", settle)
    socket.once("close", settle)
    socket.once("connect", () => socket.end(serialize.cancel(processID, secretKey)))
    return Effect.sync(settle)
  })
