-- Drives `idemgen lsp` through Neovim's own LSP client (0.7 API), run as
--   nvim --headless --clean -u NONE -c "luafile tests/editors/neovim_lsp.lua"
-- Environment: IDEMGEN_BIN (the binary), IDEMGEN_SPEC (the file to open),
-- IDEMGEN_OUT (where the JSON result goes). The result names the first
-- diagnostic (rule, 0-based line and column) and the titles of the code
-- actions offered at its range; on failure, `error` says what went wrong
-- and Neovim exits non-zero.

local out_path = assert(os.getenv("IDEMGEN_OUT"), "IDEMGEN_OUT is not set")

local function finish(result, code)
  local file = assert(io.open(out_path, "w"))
  file:write(vim.fn.json_encode(result))
  file:close()
  vim.cmd((code == 0) and "qall!" or "cquit " .. code)
end

local function run()
  local bin = assert(os.getenv("IDEMGEN_BIN"), "IDEMGEN_BIN is not set")
  local spec = assert(os.getenv("IDEMGEN_SPEC"), "IDEMGEN_SPEC is not set")

  -- The diagnostics exactly as the server sent them (LSP ranges, `code`),
  -- captured before Neovim converts them for display.
  local published = nil
  local client_id = vim.lsp.start_client({
    name = "idemgen",
    cmd = { bin, "lsp" },
    root_dir = vim.fn.fnamemodify(spec, ":h"),
    handlers = {
      ["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
        if result and #result.diagnostics > 0 then
          published = result
        end
        return vim.lsp.handlers["textDocument/publishDiagnostics"](err, result, ctx, config)
      end,
    },
  })
  assert(client_id, "vim.lsp.start_client returned nil")

  vim.cmd("edit " .. vim.fn.fnameescape(spec))
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].filetype = "yaml"
  vim.lsp.buf_attach_client(buf, client_id)

  if not vim.wait(20000, function() return published ~= nil end, 50) then
    error("no diagnostics within 20 s")
  end
  local diagnostic = published.diagnostics[1]

  local answers, request_err = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", {
    textDocument = vim.lsp.util.make_text_document_params(buf),
    range = diagnostic.range,
    context = { diagnostics = { diagnostic } },
  }, 20000)
  if not answers then
    error("textDocument/codeAction: " .. tostring(request_err))
  end
  local titles = {}
  for _, answer in pairs(answers) do
    if answer.error then
      error("textDocument/codeAction: " .. vim.inspect(answer.error))
    end
    for _, action in ipairs(answer.result or {}) do
      table.insert(titles, action.title)
    end
  end

  return {
    nvim = tostring(vim.version().major) .. "." .. tostring(vim.version().minor),
    client = vim.lsp.get_client_by_id(client_id).name,
    diagnostics = #published.diagnostics,
    rule = diagnostic.code,
    line = diagnostic.range.start.line,
    character = diagnostic.range.start.character,
    actions = titles,
  }
end

local ok, result = pcall(run)
if ok then
  finish(result, 0)
else
  finish({ error = tostring(result) }, 1)
end
