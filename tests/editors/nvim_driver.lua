-- Drives Neovim's built-in LSP client on the buffer given on the command
-- line, as a user would: wait for gradlint's diagnostics, ask for the code
-- actions at the first one, apply the quick fix through the client's own
-- workspace-edit code, wait for the re-check.  Writes what it saw as JSON
-- to $GRADLINT_NVIM_OUT and quits; any Lua error is written there too.
local out_path = os.getenv("GRADLINT_NVIM_OUT")
local timeout = tonumber(os.getenv("GRADLINT_NVIM_TIMEOUT_MS") or "20000")

local function finish(result)
  local handle = io.open(out_path, "w")
  handle:write(vim.fn.json_encode(result))
  handle:close()
  vim.cmd("qall!")
end

local function diagnostics(bufnr)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(found, {
      lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      message = d.message, code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code),
      source = d.source,
    })
  end
  return found
end

local function run()
  local bufnr = vim.api.nvim_get_current_buf()
  local result = { filetype = vim.bo[bufnr].filetype }
  if not vim.wait(timeout, function() return #vim.lsp.buf_get_clients(bufnr) > 0 end, 50) then
    return finish({ error = "no LSP client attached (filetype " .. vim.bo[bufnr].filetype .. ")" })
  end
  if not vim.wait(timeout, function() return #vim.diagnostic.get(bufnr) > 0 end, 50) then
    return finish({ error = "no diagnostics within the timeout" })
  end
  result.before = diagnostics(bufnr)

  local client = vim.lsp.buf_get_clients(bufnr)[next(vim.lsp.buf_get_clients(bufnr))]
  local first = vim.diagnostic.get(bufnr)[1]
  local range = {
    start = { line = first.lnum, character = first.col },
    ["end"] = { line = first.end_lnum, character = first.end_col },
  }
  -- the diagnostic in LSP form, as the client's own code_action() sends it
  local lsp_diagnostic = {
    range = range, message = first.message, severity = first.severity, source = first.source, code = first.code,
  }
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = range,
    context = { diagnostics = { lsp_diagnostic } },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, timeout) or {}
  local actions = {}
  result.request_errors = {}
  for _, response in pairs(responses) do
    if response.err then
      table.insert(result.request_errors, tostring(response.err.message or response.err))
    end
    for _, action in ipairs(response.result or {}) do
      table.insert(actions, action)
    end
  end
  result.actions = {}
  for _, action in ipairs(actions) do
    table.insert(result.actions, { title = action.title, kind = action.kind, preferred = action.isPreferred })
  end
  local chosen = actions[1]  -- the server offers the rule's fix first
  if chosen == nil or chosen.edit == nil then
    result.error = "no code action with an edit"
    return finish(result)
  end
  result.applied = chosen.title
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding or "utf-16")
  result.buffer = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  -- the edit is a didChange; the server re-checks after its debounce
  vim.wait(timeout, function() return #vim.diagnostic.get(bufnr) == 0 end, 50)
  result.after = diagnostics(bufnr)
  finish(result)
end

vim.defer_fn(function()
  local ok, err = pcall(run)
  if not ok then
    finish({ error = tostring(err) })
  end
end, 10)
