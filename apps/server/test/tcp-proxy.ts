/**
 * A TCP proxy between the server under test and the shared PostgreSQL, so a test can take
 * "the database" away without stopping the server others use. `cut("refuse")` and
 * `cut("silent")` drop every open connection and then either close each new one at once (a
 * stopped database) or hold it silent (a network that swallows packets). `cut("freeze")`
 * drops nothing: the open connections stay open but nothing crosses them any more, either
 * way, and new ones are held silent. `resume` lets new connections through again; frozen
 * connections stay frozen (like those a NAT reset or a failover leaves behind: only the
 * client giving them up helps) until the proxy closes.
 */
import * as Net from "node:net"
import { Effect } from "effect"

export type OutageMode = "refuse" | "silent" | "freeze"

export interface TcpProxy {
  readonly port: number
  readonly cut: (mode: OutageMode) => void
  readonly resume: () => void
  /** Frozen connections the server has not closed yet. */
  readonly frozenOpen: () => number
}

/** Stops forwarding on a connection and swallows whatever arrives on it; the socket stays open. */
const freeze = (socket: Net.Socket) => {
  socket.unpipe()
  socket.removeAllListeners("data")
  socket.on("data", () => {})
  // unpipe left the stream paused: reading on is what lets its end (and close) be seen.
  socket.resume()
}

export const tcpProxy = (upstream: { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ proxy: TcpProxy; close: () => void }>((resume) => {
      let outage: OutageMode | null = null
      const open = new Set<Net.Socket>()
      /** The server's side of each proxied connection, to its database side. */
      const pairs = new Map<Net.Socket, Net.Socket>()
      const frozen = new Set<Net.Socket>()
      const track = (socket: Net.Socket) => {
        open.add(socket)
        socket.on("close", () => {
          open.delete(socket)
          frozen.delete(socket)
        })
        // A reset is what the test provokes; the other side learns of it by its own close.
        socket.on("error", () => socket.destroy())
      }
      const dropAll = () => {
        for (const socket of open) if (!frozen.has(socket)) socket.destroy()
      }
      const server = Net.createServer((client) => {
        track(client)
        if (outage === "refuse") return client.destroy()
        if (outage !== null) return
        const database = Net.connect(upstream.port, upstream.host)
        track(database)
        pairs.set(client, database)
        client.on("close", () => {
          pairs.delete(client)
          // A frozen connection the server gives up stays frozen on the database's side.
          if (!frozen.has(database)) database.destroy()
        })
        database.on("close", () => client.destroy())
        client.pipe(database)
        database.pipe(client)
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address() as Net.AddressInfo
        resume(
          Effect.succeed({
            proxy: {
              port: address.port,
              cut: (mode) => {
                outage = mode
                if (mode !== "freeze") return dropAll()
                for (const [client, database] of pairs) {
                  for (const socket of [client, database]) {
                    freeze(socket)
                    frozen.add(socket)
                  }
                }
              },
              resume: () => {
                outage = null
                // Connections held silent are useless now; their clients have given up on them.
                dropAll()
              },
              frozenOpen: () => [...pairs.keys()].filter((client) => frozen.has(client)).length
            },
            close: () => {
              frozen.clear()
              dropAll()
              server.close()
            }
          })
        )
      })
    }),
    ({ close }) => Effect.sync(close)
  ).pipe(Effect.map(({ proxy }) => proxy))
