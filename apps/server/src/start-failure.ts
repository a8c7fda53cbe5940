/** The one line `pnpm start` prints when the server cannot listen. */

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

/** What stopped the server from listening on `port`, and what to do about it. */
export const describeListenFailure = (cause: unknown, port: number): string => {
  switch (codeOf(cause)) {
    case "EADDRINUSE":
      return `Port ${port} is already in use (EADDRINUSE): stop what is listening on it, or start on another port, e.g. PORT=${port + 1} pnpm start`
    case "EACCES":
      return `Port ${port} needs privileges this process does not have (EACCES): use a port above 1023, e.g. PORT=3000 pnpm start`
    default:
      return `Failed to listen on port ${port}: ${cause instanceof Error ? cause.message : String(cause)}`
  }
}
