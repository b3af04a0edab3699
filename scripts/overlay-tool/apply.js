// Applies an OpenAPI Overlay document to a spec with openapi-format's
// overlay implementation and writes the result as JSON:
//   node apply.js SPEC OVERLAY OUT.json
// Exit 1 when an action is refused or the overlay does not apply.
const fs = require('fs');
const {parseFile, openapiOverlay} = require('openapi-format');

async function main() {
  const [spec, overlay, out] = process.argv.slice(2);
  const document = await parseFile(spec);
  const overlaySet = await parseFile(overlay);
  const errors = [];
  const log = console.error;
  console.error = (...args) => errors.push(args.join(' '));
  const result = await openapiOverlay(document, {overlaySet});
  console.error = log;
  if (errors.length > 0) {
    console.error(errors.join('\n'));
    process.exit(1);
  }
  fs.writeFileSync(out, JSON.stringify(result.data, null, 2) + '\n');
  const {totalActions, totalUsedActions} = result.resultData;
  console.log(`${totalUsedActions}/${totalActions} actions applied`);
}

main().catch(error => {
  console.error(error.stack || String(error));
  process.exit(1);
});
