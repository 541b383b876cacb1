-- RESP2, both ways: commands out as arrays of bulk strings, replies in through a buffer filled
-- by receiveany (so that a read timeout loses nothing: the subscriber reads in slices).
local resp = {}

local find, sub, byte, tostring, tonumber = string.find, string.sub, string.byte, tostring, tonumber
local concat = table.concat

-- A nil reply ($-1 or *-1).
resp.null = setmetatable({}, { __tostring = function() return "null" end })

-- An error reply: resp.is_error(v) -> its text.
local Err = {}
Err.__index = Err
Err.__tostring = function(e) return e.msg end
function resp.is_error(v) return getmetatable(v) == Err and v.msg end

-- The headers "*<n>\r\n" and "$<n>\r\n", made once per length: a command goes out as pieces
-- (a header, the argument itself, "\r\n"), so that encoding builds no string per argument.
local HEADS_KEPT = 4096
local function head_cache(prefix)
  return setmetatable({}, { __index = function(t, n)
    local h = prefix .. n .. "\r\n"
    if n <= HEADS_KEPT then t[n] = h end
    return h
  end })
end
local ARRAY, BULK = head_cache("*"), head_cache("$")
resp.ARRAY, resp.BULK = ARRAY, BULK

-- Appends one command (a list of strings or numbers) to the parts list `out`.
function resp.encode(out, args, n)
  n = n or #args
  local k = #out
  out[k + 1] = ARRAY[n]
  k = k + 1
  for i = 1, n do
    local a = tostring(args[i])
    out[k + 1] = BULK[#a]
    out[k + 2] = a
    out[k + 3] = "\r\n"
    k = k + 3
  end
  return out
end

local Reader = {}
Reader.__index = Reader
resp.Reader = Reader -- (a connection is its own reader: conn.lua)

-- timeout_ms: the socket's read timeout now, when known (a read then sets it only to shorten it).
function resp.reader(sock, timeout_ms)
  return setmetatable({ sock = sock, buf = "", pos = 1, mark = 1, timeout_ms = timeout_ms },
    Reader)
end

-- Whether bytes are left unread (a connection with leftovers is not reused).
function Reader:pending() return self.pos <= #self.buf end

-- Keeps the bytes from the start of the reply being read (self.mark) on. With self.deadline
-- (ngx.now() seconds) set, each read may wait only for what is left of it: a cosocket's read
-- timeout starts again at every byte, so a peer that trickles bytes would hold it for ever.
local function fill(self)
  local deadline = self.deadline
  if deadline then
    -- (no ngx.update_time(): a read that waited was resumed by nginx's event loop, which updated
    -- the time; one that did not wait took no time to speak of)
    local left_ms = math.floor((deadline - ngx.now()) * 1000)
    if left_ms <= 0 then return nil, "timeout" end
    if not self.timeout_ms or left_ms < self.timeout_ms then
      self.sock:settimeout(left_ms)
      self.timeout_ms = left_ms
    end
  end
  local data, err = self.sock:receiveany(65536)
  if not data then return nil, err end
  local mark = self.mark
  if mark > #self.buf then
    self.buf = data
  else
    self.buf = sub(self.buf, mark) .. data
  end
  self.pos = self.pos - mark + 1
  self.mark = 1
  return true
end

-- The index of the "\r\n" that ends the line at self.pos, reading more as needed.
local function line_end_slow(self)
  while true do
    local e = find(self.buf, "\r\n", self.pos, true)
    if e then return e end
    local ok, err = fill(self)
    if not ok then return nil, err end
  end
end

-- As line_end_slow, with no loop for a line already read or that one read completes (what
-- replies here are): a loop would stop the JIT from compiling a reply's read as a whole.
local function line_end(self)
  local e = find(self.buf, "\r\n", self.pos, true)
  if e then return e end
  local ok, err = fill(self)
  if not ok then return nil, err end
  e = find(self.buf, "\r\n", self.pos, true)
  if e then return e end
  return line_end_slow(self)
end

-- The integer written in buf from i to e - 1 when it has one or two digits (what lengths,
-- counts and script answers have here), read in place: no string made, and no loop (a loop
-- would stop the JIT from compiling the read as a whole); else nil (tonumber then reads it).
local function int_at(buf, i, e)
  local neg = byte(buf, i) == 45 -- -
  if neg then i = i + 1 end
  local digits, d = e - i, byte(buf, i) - 48
  if digits == 2 then
    local d2 = byte(buf, i + 1) - 48
    if d2 < 0 or d2 > 9 then return nil end
    d = d * 10 + d2
    if d < 0 or d > 99 then return nil end
  elseif digits ~= 1 or d < 0 or d > 9 then
    return nil
  end
  return neg and -d or d
end

local function exact(self, n)
  while #self.buf - self.pos + 1 < n + 2 do
    local ok, err = fill(self)
    if not ok then return nil, err end
  end
  local s = sub(self.buf, self.pos, self.pos + n - 1)
  self.pos = self.pos + n + 2
  return s
end

local read

-- One reply: a string, a number, a table (array), resp.null, an error object; or nil and the
-- socket's error ("timeout", "closed", ...). After a timeout the reader is as it was before the
-- call (the bytes of a partly received reply are kept), so reading again is safe.
function Reader:read()
  self.mark = self.pos
  local v, err = read(self)
  if v == nil then self.pos = self.mark end
  return v, err
end

-- The line's text is taken from the buffer only where a reply is made of it (a status, an
-- error): a length or an integer is read in place.
read = function(self)
  local e, err = line_end(self)
  if not e then return nil, err end
  local buf, pos = self.buf, self.pos
  local kind = byte(buf, pos)
  self.pos = e + 2
  if kind == 36 then -- $
    local n = int_at(buf, pos + 1, e) or tonumber(sub(buf, pos + 1, e - 1))
    if not n then return nil, "protocol error: " .. sub(buf, pos, e - 1) end
    if n < 0 then return resp.null end
    return exact(self, n)
  elseif kind == 58 then -- :
    return int_at(buf, pos + 1, e) or tonumber(sub(buf, pos + 1, e - 1))
  elseif kind == 43 then -- +
    return sub(buf, pos + 1, e - 1)
  elseif kind == 45 then -- -
    return setmetatable({ msg = sub(buf, pos + 1, e - 1) }, Err)
  elseif kind == 42 then -- *
    local n = int_at(buf, pos + 1, e) or tonumber(sub(buf, pos + 1, e - 1))
    if not n then return nil, "protocol error: " .. sub(buf, pos, e - 1) end
    if n < 0 then return resp.null end
    local t = {}
    for i = 1, n do
      local v, verr = read(self)
      if v == nil then return nil, verr end
      t[i] = v
    end
    return t
  end
  return nil, "protocol error: " .. sub(buf, pos, e - 1)
end

resp.concat = concat
return resp
