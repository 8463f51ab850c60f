// What a person may type into the address bar, read leniently: a value that is not one is
// dropped (or said so in one line), never sent on to the API to be refused in its words.

/** The largest id or offset the API takes (its databases' 32-bit integers). */
export const INT_MAX = 2 ** 31 - 1;

/** `text` as an id: digits only (not `1e3`, `-1` or `0x10`) and no larger than INT_MAX. */
export function parseId(text: string | null | undefined): number | null {
  if (!text || !/^[0-9]{1,10}$/.test(text)) return null;
  const id = Number(text);
  return id <= INT_MAX ? id : null;
}

/** Why `text` names no `what` ("experiment", "trial", "job"), in one line. */
export function badId(what: string, text: string | undefined): string {
  const article = /^[aeiou]/.test(what) ? "an" : "a";
  return `no ${what} '${text ?? ""}': ${article} ${what} id is a whole number (0 to ${INT_MAX})`;
}

/** The values of `asked` that name one of `allowed`, in any case, each once. */
export function pickEnum<T extends string>(asked: string[], allowed: readonly T[]): T[] {
  const out: T[] = [];
  for (const value of asked) {
    const found = allowed.find((a) => a === value.trim().toUpperCase());
    if (found && !out.includes(found)) out.push(found);
  }
  return out;
}

/** The ids of a comma-separated list (`?trials=3,5`), leaving out what is not an id. */
export function idList(text: string | null): number[] {
  const out: number[] = [];
  for (const part of (text ?? "").split(",")) {
    const id = parseId(part.trim());
    if (id !== null && !out.includes(id)) out.push(id);
  }
  return out;
}

/** An offset into a list: a whole number, 0 when it is not one. */
export function parseOffset(text: string | null): number {
  return parseId(text) ?? 0;
}
