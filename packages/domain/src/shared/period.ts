/** The quota period of an instant: its calendar month in UTC, "YYYY-MM". */
export const periodOf = (millis: number): string => {
  const date = new Date(millis)
  return `${String(date.getUTCFullYear()).padStart(4, "0")}-${String(date.getUTCMonth() + 1).padStart(2, "0")}`
}
