-- redlease for OpenResty / lua-nginx-module: the same API as the Lua rock (docs/lua.md), on
-- cosockets, ngx.semaphore and ngx.timer, so that a waiting request never blocks its worker.
-- `require "redlease"` inside nginx returns this module; `require "redlease.resty"` names it.
local args = require "redlease.args"
local Client = require "redlease.resty.client"
local inspect = require "redlease.resty.inspect"
local MultiLock = require "redlease.resty.multilock"
local tls = require "redlease.resty.tls"
local url = require "redlease.resty.url"

-- the version and the options catalogue are generated with the scripts, from the core that this
-- backend speaks for
local generated = require "redlease.resty.scripts"
local OPTIONS = generated._OPTIONS
local redlease = { _VERSION = generated._VERSION, backend = "resty" }

-- connect(url, {watchdog_timeout=, connect_timeout=, command_timeout=, max_hold=,
-- handover_grace= in seconds; tls_server_name=, tls_cert_file=, tls_key_file= strings and
-- tls_insecure_skip_verify= a boolean, for rediss://, rediss+sentinel:// and rediss+cluster://:
-- see resty/tls.lua; client_name=, how its connections name themselves to Redis, default
-- "<host>:<pid>"})
-- -> client. Nothing connects here (any phase, init_by_lua and init_worker_by_lua included);
-- each worker gets its own client identity on first use.
function redlease.connect(u, opts)
  local o, bad, refusal = args.connect(u, opts, OPTIONS)
  if not o then error(("bad argument '%s' to 'connect' (%s)"):format(bad, refusal), 2) end
  for _, row in ipairs(OPTIONS) do -- the bounds the core holds them to (rl_client_new)
    local v = row.bounds and o[row.name]
    if v and (v < row.min or (row.max and v > row.max)) then
      error(("bad argument '%s' to 'connect' (%s %s)"):format(row.name, row.name, row.bounds), 2)
    end
  end
  local name = o.client_name -- as rl_client_name_check (csrc/core/conn_name.c) holds it
  if name and (#name > 64) then
    error("bad argument 'client_name' to 'connect' (client_name must be 1 to 64 characters long)",
      2)
  end
  local at = name and name:find("[^!-~]")
  if at then
    error(("bad argument 'client_name' to 'connect' (client_name must be printable ASCII without "
      .. "spaces (as Redis takes in a client name): character %d is not)"):format(at), 2)
  end
  if (o.sync_replicas or 0) > 0 then
    return nil, "unsupported: sync_replicas is not available in the OpenResty backend"
  end
  if o.sync_aof then
    return nil, "unsupported: sync_aof is not available in the OpenResty backend"
  end
  local ep, why = url.parse(u)
  if not ep then error(("bad argument 'url' to 'connect' (%s)"):format(why), 2) end
  ep.tls_settings, name, why = tls.settings(ep, o)
  if name then error(("bad argument '%s' to 'connect' (%s)"):format(name, why), 2) end
  return Client.public(Client.new(ep, o))
end

-- A RedLock over locks of independent Redis servers (one client each): held once a majority is
-- taken within the lease's validity; released on every server (multilock.lua).
function redlease.red_lock(...) return MultiLock.new("red_lock", true, ...) end

-- What the key `name` holds, decoded (the facts `redlease inspect` shows, as the rock's
-- redlease.inspect): a table with kind ("none", "reentrant", "fenced", "fair", "read_write",
-- "counter", "other"), type, mode, lease (seconds; false: no key), count, last_token,
-- subscribers, owners and queue; or nil, err.
function redlease.inspect(client, name)
  local c = Client.of(client)
  if not c then
    error("bad argument #1 to 'inspect' (client expected, got " .. type(client) .. ")", 2)
  end
  args.name(name, "inspect")
  local ok, err = c:ready("inspect")
  if not ok then return nil, err end
  return inspect.key(c, name)
end

return redlease
