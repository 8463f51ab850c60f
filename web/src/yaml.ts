// A JSON value written as block YAML, for showing a config as a person would write it. Strings
// that YAML would read as something else (a number, a boolean, null, or with special characters)
// are quoted, so what is shown reads back as the same value.

const PLAIN = /^[A-Za-z_/][\w./ -]*$/;
const NOT_PLAIN = /^(?:true|false|yes|no|on|off|null|~|y|n)$/i;

function scalar(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  const text = String(value);
  if (PLAIN.test(text) && !NOT_PLAIN.test(text) && !text.endsWith(" ") && !text.includes(": ") && !text.includes(" #"))
    return text;
  return JSON.stringify(text);
}

function isBranch(value: unknown): value is Record<string, unknown> | unknown[] {
  if (Array.isArray(value)) return value.length > 0;
  return typeof value === "object" && value !== null && Object.keys(value).length > 0;
}

function empty(value: unknown): string | null {
  if (Array.isArray(value) && value.length === 0) return "[]";
  if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0) return "{}";
  return null;
}

function lines(value: unknown, indent: string): string[] {
  const out: string[] = [];
  if (Array.isArray(value)) {
    for (const item of value) {
      if (isBranch(item)) {
        const inner = lines(item, indent + "  ");
        out.push(`${indent}- ${inner[0].trimStart()}`, ...inner.slice(1));
      } else out.push(`${indent}- ${empty(item) ?? scalar(item)}`);
    }
    return out;
  }
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    const name = scalar(key);
    if (isBranch(item)) out.push(`${indent}${name}:`, ...lines(item, Array.isArray(item) ? indent : indent + "  "));
    else out.push(`${indent}${name}: ${empty(item) ?? scalar(item)}`);
  }
  return out;
}

/** `value` as block YAML, ending with a newline. */
export function toYaml(value: unknown): string {
  if (!isBranch(value)) return `${empty(value) ?? scalar(value)}\n`;
  return `${lines(value, "").join("\n")}\n`;
}
