-- Parses a Redis URL the way the C core does (csrc/core/transport/url.c):
-- redis://[user[:password]@]host[:port][/db], rediss://... (TLS through the cosocket's
-- sslhandshake), unix://[user[:password]@]/path[?db=N]. Returns the endpoint table or nil and
-- why.
local url = {}

local function decode(s)
  local out, i = {}, 1
  while i <= #s do
    local c = s:sub(i, i)
    if c == "%" then
      local hex = s:sub(i + 1, i + 2)
      if not hex:match("^%x%x$") then return nil end
      c, i = string.char(tonumber(hex, 16)), i + 2
    end
    out[#out + 1] = c
    i = i + 1
  end
  return table.concat(out)
end

local function whole(s, lo, hi)
  if not s:match("^%d+$") or #s > 9 then return nil end
  local n = tonumber(s)
  if n < lo or n > hi then return nil end
  return n
end

local function userinfo(ep, s)
  local colon = s:find(":", 1, true)
  local user = colon and s:sub(1, colon - 1) or s
  if user ~= "" then
    ep.user = decode(user)
    if not ep.user then return nil end
  end
  if colon then
    ep.password = decode(s:sub(colon + 1))
    if not ep.password then return nil end
  end
  return true
end

local function tcp(ep, rest)
  local path_at = rest:find("/", 1, true) or #rest + 1
  local authority, path = rest:sub(1, path_at - 1), rest:sub(path_at)
  local at = authority:match(".*()@") -- the last '@' ends the userinfo
  if at then
    if not userinfo(ep, authority:sub(1, at - 1)) then
      return nil, "bad percent-escape in the URL's user or password"
    end
    authority = authority:sub(at + 1)
  end
  local host, port
  if authority:sub(1, 1) == "[" then
    local close = authority:find("]", 1, true)
    if not close then return nil, "unterminated '[' in the URL's host" end
    host = authority:sub(2, close - 1)
    local after = authority:sub(close + 1)
    if after ~= "" then
      if after:sub(1, 1) ~= ":" then return nil, "junk after ']' in URL" end
      port = after:sub(2)
    end
  else
    local colon = authority:find(":", 1, true)
    host = colon and authority:sub(1, colon - 1) or authority
    port = colon and authority:sub(colon + 1)
  end
  if host == "" then return nil, "the URL has no host" end
  ep.host, ep.port = host, 6379
  if port then
    ep.port = whole(port, 1, 65535)
    if not ep.port then return nil, "the URL's port must be a number from 1 to 65535" end
  end
  if #path > 1 then
    ep.db = whole(path:sub(2), 0, 1000000)
    if not ep.db then return nil, "the URL's database (after '/') must be a number" end
  end
  return ep
end

local function unix(ep, rest)
  ep.unix = true
  local slash = rest:find("/", 1, true)
  if not slash then return nil, "unix:// URL needs an absolute path" end
  if slash > 1 then
    if rest:sub(slash - 1, slash - 1) ~= "@" then
      return nil, "unix:// URL: write unix:///path or unix://user:pass@/path"
    end
    if not userinfo(ep, rest:sub(1, slash - 2)) then
      return nil, "bad percent-escape in the URL's user or password"
    end
  end
  local path = rest:sub(slash)
  local q = path:find("?", 1, true)
  local query = q and path:sub(q) or nil
  path = q and path:sub(1, q - 1) or path
  if #path < 2 then return nil, "unix:// URL has an empty path" end
  if query then
    local db = query:match("^%?db=(.*)$")
    ep.db = db and whole(db, 0, 1000000)
    if not ep.db then return nil, "unix:// URL accepts only ?db=N" end
  end
  ep.path = decode(path)
  if not ep.path then return nil, "bad unix socket path" end
  return ep
end

function url.parse(s)
  local ep = { db = 0 }
  if s:sub(1, 8) == "redis://" then return tcp(ep, s:sub(9)) end
  if s:sub(1, 9) == "rediss://" then
    ep.tls = true
    return tcp(ep, s:sub(10))
  end
  if s:sub(1, 7) == "unix://" then return unix(ep, s:sub(8)) end
  if s:find("^rediss?%+sentinel://") then return require("redlease.resty.sentinel").parse(s) end
  if s:match("^rediss?%+cluster://") then
    return require("redlease.resty.slots").parse_url(s, userinfo)
  end
  -- the core's words; only the scheme is quoted: the rest may hold a password
  local scheme = s:match("^([^:/]*)://")
  local got = scheme and #scheme <= 16 and scheme .. "://" or "no scheme"
  return nil, ("URL must start with redis://, rediss://, unix://, redis+sentinel:// or "
    .. "redis+cluster:// (got %s)"):format(got)
end

-- "host:port" or the socket path, for messages (never the password).
function url.where(ep)
  if ep.unix then return ep.path end
  return (ep.host:find(":", 1, true) and "[" .. ep.host .. "]" or ep.host) .. ":" .. ep.port
end

return url
