// Test vectors for tests/canonical_json.rs: a double as toExponential() writes
// it, and as JSON.stringify (ECMAScript, which JCS follows) writes it.
// node scripts/jcs-numbers.js > tests/data/jcs-numbers.txt
const buf = new DataView(new ArrayBuffer(8));
let s = 0x2545F491n;
const out = [];
function next() { s ^= (s << 13n) & 0xffffffffffffffffn; s ^= s >> 7n; s ^= (s << 17n) & 0xffffffffffffffffn; return s; }
while (out.length < 1200) {
  buf.setBigUint64(0, next());
  let x = buf.getFloat64(0);
  if (!isFinite(x)) continue;
  if (out.length % 3 == 1) x = Math.round(x % 1e6 * 1000) / 1000;   // everyday amounts
  if (out.length % 3 == 2) x = Number((x % 1).toPrecision(1 + out.length % 17)) * 10 ** (out.length % 40 - 20);
  if (!isFinite(x)) continue;
  out.push([x.toExponential(), JSON.stringify(x)]);
}
console.log(out.map(([a, b]) => a + " " + b).join("\n"));
