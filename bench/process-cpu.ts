/** What /proc says of a process, for the benchmarks (`pnpm bench`, bench/at-once.ts). */
import { readFileSync } from "node:fs"

/**
 * CPU time a process has used, in microseconds (user + system, from /proc; Linux counts it
 * in USER_HZ ticks of 10 ms). NaN elsewhere.
 */
export const cpuMicros = (pid: number | undefined) => {
  try {
    // The fields after the command name, which may hold spaces, start after its ")".
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * 10_000
  } catch {
    return Number.NaN
  }
}
