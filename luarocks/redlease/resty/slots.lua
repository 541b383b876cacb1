-- Redis Cluster arithmetic for the OpenResty backend, no I/O: a key's hash slot (CRC16/XMODEM of
-- the key or of its first non-empty {hash tag}, as Redis and csrc/core/topology/slots.c compute
-- it), the redis+cluster:// URL's seeds, CLUSTER SLOTS answers and MOVED/ASK errors.
local bit = require "bit"

local band, bxor, lshift, rshift = bit.band, bit.bxor, bit.lshift, bit.rshift
local byte = string.byte

local slots = {}
slots.COUNT = 16384

local CRC = {}
for i = 0, 255 do
  local crc = lshift(i, 8)
  for _ = 1, 8 do
    if band(crc, 0x8000) ~= 0 then
      crc = bxor(lshift(crc, 1), 0x1021)
    else
      crc = lshift(crc, 1)
    end
  end
  CRC[i] = band(crc, 0xffff)
end

local function crc16(s, i, j)
  local crc = 0
  for k = i, j do
    crc = band(bxor(lshift(crc, 8), CRC[bxor(band(rshift(crc, 8), 0xff), byte(s, k))]), 0xffff)
  end
  return crc
end

-- The hash slot of key.
function slots.of(key)
  local i, j = 1, #key
  local open = key:find("{", 1, true)
  if open then
    local close = key:find("}", open + 1, true)
    if close and close > open + 1 then i, j = open + 1, close - 1 end
  end
  return crc16(key, i, j) % slots.COUNT
end

-- Whether every key derived from `name` (Redisson's "prefix:{name}" or the name's own tag)
-- falls in the name's slot (csrc/core/names.c, rl_name_fits_one_slot).
function slots.name_fits(name)
  local channel = name:find("{", 1, true) and "p:" .. name or "p:{" .. name .. "}"
  return slots.of(channel) == slots.of(name)
end

-- "host:port" (or "[v6]:port") -> host, port | nil
local function host_port(s)
  local host, port
  if s:sub(1, 1) == "[" then
    host, port = s:match("^%[(.-)%]:?(%d*)$")
  else
    host, port = s:match("^([^:]*):?(%d*)$")
  end
  if not host or host == "" then return nil end
  port = port == "" and 6379 or tonumber(port)
  if not port or port < 1 or port > 65535 then return nil end
  return host, port
end

-- redis+cluster://[user[:password]@]host1:port1[,host2:port2...] (rediss+cluster:// for TLS)
-- -> endpoint {cluster = true, seeds = {{host, port}...}, host, port (the first seed's), tls,
-- user, password} | nil, why. `userinfo(ep, text)` decodes the user and password (url.lua's).
function slots.parse_url(s, userinfo)
  local ep = { cluster = true, db = 0 }
  local rest = s:match("^redis%+cluster://(.*)$")
  if not rest then
    rest = s:match("^rediss%+cluster://(.*)$")
    ep.tls = true
  end
  if rest:find("[/?]") then
    return nil, "a redis+cluster:// URL takes no database or path (a cluster has only database 0)"
  end
  local at = rest:match(".*()@")
  if at then
    if not userinfo(ep, rest:sub(1, at - 1)) then
      return nil, "bad percent-escape in the URL's user or password"
    end
    rest = rest:sub(at + 1)
  end
  ep.seeds = {}
  for part in (rest .. ","):gmatch("([^,]*),") do
    local host, port = host_port(part)
    if not host then return nil, ('bad seed "%s" in the redis+cluster:// URL'):format(part) end
    ep.seeds[#ep.seeds + 1] = { host = host, port = port }
  end
  ep.host, ep.port = ep.seeds[1].host, ep.seeds[1].port
  return ep
end

-- A CLUSTER SLOTS answer -> list of {first, last, host, port} (host nil: "the node that
-- answered", a nil or empty host in Redis 7's unknown-endpoint mode) | nil.
function slots.ranges(reply)
  if type(reply) ~= "table" then return nil end
  local out = {}
  for _, r in ipairs(reply) do
    local master = type(r) == "table" and r[3]
    if type(master) ~= "table" or type(r[1]) ~= "number" or type(r[2]) ~= "number" then
      return nil
    end
    local host = master[1]
    if type(host) ~= "string" or host == "" or host == "?" then host = nil end
    out[#out + 1] = { first = r[1], last = r[2], host = host, port = tonumber(master[2]) }
  end
  return out
end

-- "MOVED 3999 127.0.0.1:6381" / "ASK ..." -> "MOVED"|"ASK", slot, host (nil: the node that
-- answered), port | nil
function slots.redirect(msg)
  local kind, slot, host, port = msg:match("^(%u+) (%d+) (.*):(%d+)$")
  if kind ~= "MOVED" and kind ~= "ASK" then return nil end
  if host:sub(1, 1) == "[" then host = host:sub(2, -2) end
  return kind, tonumber(slot), host ~= "" and host or nil, tonumber(port)
end

return slots
