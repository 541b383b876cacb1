-- The waiters' side of a cluster: one sharded subscriber (subscriber.lua: SSUBSCRIBE, as
-- Redisson on Redis 7) per node that has waiters. A waiter joins at the node serving its
-- channel's slot (a lock's channel shares the lock's slot); when that node stops serving it
-- (MOVED, the SUNSUBSCRIBE a node sends when the slot migrates away, the node unreachable) the
-- waiter wakes, tries again, and joins again where the slot map says now.
local slots = require "redlease.resty.slots"

local cluster_sub = {}
local Facade = {}
local MT = {
  __index = function(self, k)
    if k == "subscriptions" then -- (the client's stats, and a release's hand-over bookkeeping)
      local n = 0
      for _, s in pairs(self.subs) do n = n + s.subscriptions end
      return n
    end
    return Facade[k]
  end,
}

function cluster_sub.new(client, Sub)
  local self = setmetatable({ client = client, Sub = Sub, subs = {} }, MT)
  -- client:close() posts `wake`: every node's subscriber hears it
  self.wake = { post = function()
    for _, s in pairs(self.subs) do s.wake:post(1) end
  end }
  return self
end

local function sub_at(self, channel)
  local node, err = self.client.cluster:node_of(slots.of(channel))
  if not node then return nil, err end
  local s = self.subs[node]
  if not s then
    s = self.Sub.new(self.client, node)
    self.subs[node] = s
  end
  return s
end

-- A waiter's own entry: the node's entry it is in now (cur); a flag its user sets on it (a
-- latch's wake_all) goes to that entry, and to the next one it follows.
local WAITER = { __newindex = function(w, k, v)
  rawset(w, k, v)
  w.cur[k] = v
end }

-- As Sub:join; the entry it answers is the waiter's own (it follows the channel's node).
function Facade:join(channel, run, gone)
  local s, err = sub_at(self, channel)
  if not s then return nil, err end
  local e
  e, err = s:join(channel, run, gone)
  if not e then return nil, err end
  return setmetatable({ cur = e, moves = e.moves, channel = channel, run = run, gone = gone },
    WAITER)
end

-- The node's subscription of the waiter's channel moved: leave it, join where the map says.
local function follow(self, w)
  local e = w.cur
  if e.moves == w.moves then return true end
  e.sub:leave(e, w.run)
  local s, err = sub_at(self, w.channel)
  local joined
  if s then joined, err = s:join(w.channel, w.run, w.gone) end
  if not joined then -- back where it was: leave() finds it there
    e.sub:join(w.channel, w.run, w.gone)
    return nil, err
  end
  if rawget(w, "wake_all") then joined.wake_all = true end
  w.cur, w.moves = joined, joined.moves
  return true
end

function Facade:wait(w, until_ms)
  local ok, err = follow(self, w)
  if not ok then return nil, err end
  return w.cur.sub:wait(w.cur, until_ms)
end

function Facade.observe(_, w, until_ms, floor, run)
  return w.cur.sub:observe(w.cur, until_ms, floor, run)
end

function Facade.leave(_, w, run)
  return w.cur.sub:leave(w.cur, run)
end

function Facade:messages_read(channel)
  local node = self.client.cluster.map[slots.of(channel)]
  local s = node and self.subs[node]
  return s and s:messages_read(channel) or nil
end

return cluster_sub
