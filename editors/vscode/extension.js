// Starts `idemgen lsp` over stdio for every YAML and JSON document; the
// server itself decides which of them are OpenAPI specs.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function startClient() {
  const command = vscode.workspace.getConfiguration("idemgen").get("path") || "idemgen";
  const server = { command, args: ["lsp"], transport: TransportKind.stdio };
  client = new LanguageClient(
    "idemgen",
    "idemgen",
    { run: server, debug: server },
    {
      documentSelector: [
        { scheme: "file", language: "yaml" },
        { scheme: "file", language: "json" },
        { scheme: "untitled", language: "yaml" },
        { scheme: "untitled", language: "json" },
      ],
    },
  );
  return client.start();
}

async function activate(context) {
  // A new binary path takes effect by restarting the server.
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("idemgen.path")) {
        await deactivate();
        await startClient();
      }
    }),
  );
  await startClient();
}

async function deactivate() {
  if (client) {
    const running = client;
    client = undefined;
    await running.stop();
  }
}

module.exports = { activate, deactivate };
