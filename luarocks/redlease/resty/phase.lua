-- Where the backend may talk to Redis: nginx gives cosockets (and ngx.semaphore waits) only to
-- the request phases that can yield and to timers. Elsewhere a call answers an error that names
-- the phase instead of failing inside nginx.
local phase = {}

local get_phase = ngx.get_phase

local YIELDABLE = {
  rewrite = true, access = true, content = true, timer = true,
  ssl_cert = true, ssl_session_fetch = true, ssl_client_hello = true, preread = true,
}

-- The phase (a true value: its name), or nil and "unsupported: ..." naming the phase.
function phase.check(what)
  local p = get_phase()
  if YIELDABLE[p] then return p end
  return nil, ("unsupported: %s cannot reach Redis in the %s phase (nginx disables cosockets "
    .. "there): call it from rewrite, access or content, or from an ngx.timer callback")
    :format(what, p)
end

return phase
