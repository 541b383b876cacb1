-- The shared store of the example: GET and SET ... EX on Redis over a cosocket (a few lines
-- instead of a Redis library, which Debian does not package for nginx).
local store = {}

local function call(url, ...)
  local host, port = url:match("^redis://([^:/]+):(%d+)")
  local sock = ngx.socket.tcp()
  sock:settimeouts(1000, 1000, 1000)
  local ok, err = sock:connect(host, tonumber(port))
  if not ok then return nil, err end
  local args = { ... }
  local parts = { "*" .. #args .. "\r\n" }
  for _, a in ipairs(args) do
    a = tostring(a)
    parts[#parts + 1] = "$" .. #a .. "\r\n" .. a .. "\r\n"
  end
  ok, err = sock:send(parts)
  if not ok then return nil, err end
  local line = sock:receive("*l")
  if not line then return nil, "no answer" end
  local value
  if line:sub(1, 1) == "$" then
    local n = tonumber(line:sub(2))
    value = n >= 0 and sock:receive(n + 2):sub(1, n) or nil
  elseif line:sub(1, 1) == "-" then
    return nil, line:sub(2)
  else
    value = line:sub(2)
  end
  sock:setkeepalive(60000, 32)
  return value
end

function store.get(url, key) return call(url, "GET", key) end
function store.set(url, key, value, ttl) return call(url, "SET", key, value, "EX", ttl) end
function store.incr(url, key) return call(url, "INCR", key) end

return store
