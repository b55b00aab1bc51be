// plain turns the values the JavaScript readers decode (Arrow vectors and structs, typed
// arrays, BigInt) into JSON-ready values, for read.mjs and columns.mjs alike. 64-bit
// integers become numbers when they are exact in a double, else decimal strings; the Go
// tests decode the same way.

// int turns a 64-bit integer into a number when exact, else into its decimal string.
function int(v) {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

export function plain(v) {
  if (v === null || v === undefined) return null;
  if (typeof v === "bigint") return int(v);
  if (Array.isArray(v)) return v.map(plain);
  if (ArrayBuffer.isView(v)) return Array.from(v, plain);
  if (typeof v === "object") {
    if (typeof v.toArray === "function" && !(v.constructor && v.constructor.name === "Object")) {
      if (typeof v.toJSON === "function" && !Array.isArray(v.toJSON())) return plain(v.toJSON());
      return Array.from(v.toArray(), plain);
    }
    const out = {};
    for (const [k, x] of Object.entries(typeof v.toJSON === "function" ? v.toJSON() : v)) out[k] = plain(x);
    return out;
  }
  return v;
}
