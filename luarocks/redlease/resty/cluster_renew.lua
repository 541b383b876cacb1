-- The watchdog's rounds on a cluster (cluster.lua): the holds grouped by the master of their
-- slot, one renew call per slot (a script's keys must share a slot), every node's calls
-- pipelined on its own connection and all nodes at once (light threads of the watchdog's
-- timer): a round costs one round trip per node, about the slowest node's time.
local conn = require "redlease.resty.conn"
local now_ms = require("redlease.resty.cluster").now_ms
local resp = require "redlease.resty.resp"
local runner = require "redlease.resty.runner"
local slots = require "redlease.resty.slots"

local cluster_renew = {}
local PER_CALL = 1000 -- keys per renew call, as the watchdog's
local is_error = resp.is_error

-- One node's part of a renewal round: its calls pipelined on one connection; a call the node
-- redirects or cannot take whole (MOVED: again at the slot's master; ASK, TRYAGAIN: one key at a
-- time) or whose node failed is sent again alone, following the cluster, until the deadline.
local function renew_node(self, node, items, deadline, answers, servers, counts)
  local parts = {}
  for _, item in ipairs(items) do runner.encode_call(parts, item.call) end
  local left = deadline - now_ms()
  local replies, err
  local c
  if left >= 1 then c, err = conn.open(self.client, left, node) end
  if c then
    replies, err = c:exchange(parts, #items)
    if replies then
      local missing = false
      for i = 1, #items do missing = missing or runner.is_noscript(replies[i]) end
      if missing then
        local ok, lerr = runner.load_all(c)
        replies, err = nil, lerr
        if ok then replies, err = c:exchange(parts, #items) end
      end
    end
    counts.trips = counts.trips + c.exchanges
    if replies then c:done() else c.sock:close() end
  end
  if not replies then self.stale = true end
  for k, item in ipairs(items) do
    local r = replies and replies[k]
    local e = r ~= nil and is_error(r)
    if type(r) == "table" and not e then
      for j, i in ipairs(item.index) do answers[i], servers[i] = r[j], node.server end
    else
      local kind = e and slots.redirect(e)
      local split = e and (kind == "ASK" or e:sub(1, 8) == "TRYAGAIN")
      local call = item.call
      if split then -- one key at a time: {renew, 1, name, lease, field, read holds}
        local n = call[2]
        for j = 1, n do
          local one = { "renew", 1, call[2 + j], call[3 + n], call[4 + n + 2 * (j - 1)],
            call[5 + n + 2 * (j - 1)] }
          local a, _, t, _, at = self:exec(item.slot, runner.encode_call({}, one), true, deadline,
            true)
          counts.trips, counts.calls = counts.trips + (t or 0), counts.calls + 1
          if type(a) == "table" and not is_error(a) then
            answers[item.index[j]], servers[item.index[j]] = a[1], at.server
          end
        end
      elseif kind == "MOVED" or not replies then
        local a, _, t, _, at = self:exec(item.slot, runner.encode_call({}, call), true, deadline,
          true)
        counts.trips, counts.calls = counts.trips + (t or 0), counts.calls + 1
        if type(a) == "table" and not is_error(a) then
          for j, i in ipairs(item.index) do answers[i], servers[i] = a[j], at.server end
        end
      end
      if e and not kind and not split then counts.err = "server: renewal refused: " .. e end
    end
  end
  if not replies then counts.err = err end
end

-- The watchdog's round on a cluster. holds: the holds to renew; `batch_of(holds)` the renew
-- calls of holds of one slot (calls.renew_batch). -> answers (by the holds' index; none where
-- the cluster did not answer), err (nil: every node answered), round trips, calls sent, the
-- identity of the server that answered each (conn.identity; by the holds' index).
function cluster_renew.round(self, holds, batch_of, timeout_ms)
  local deadline = now_ms() + timeout_ms
  local counts = { trips = 0, calls = 0 }
  local by_slot, answers, servers = {}, {}, {}
  for i, h in ipairs(holds) do
    local slot = slots.of(h.name)
    local g = by_slot[slot]
    if not g then
      g = { holds = {}, index = {} }
      by_slot[slot] = g
    end
    g.holds[#g.holds + 1], g.index[#g.index + 1] = h, i
  end
  local by_node, order = {}, {}
  for slot, g in pairs(by_slot) do
    local node, err = self:node_of(slot, deadline)
    if node then
      local items = by_node[node]
      if not items then
        items = {}
        by_node[node], order[#order + 1] = items, node
      end
      for k, call in ipairs(batch_of(g.holds)) do
        local index = {}
        for j = (k - 1) * PER_CALL + 1, math.min(k * PER_CALL, #g.index) do
          index[#index + 1] = g.index[j]
        end
        items[#items + 1] = { call = call, slot = slot, index = index }
        counts.calls = counts.calls + 1
      end
    else
      counts.err = err
    end
  end
  local threads = {}
  for k, node in ipairs(order) do
    if k < #order then -- the others in light threads, this one here: all at once
      threads[#threads + 1] = ngx.thread.spawn(renew_node, self, node, by_node[node], deadline,
        answers, servers, counts)
    else
      renew_node(self, node, by_node[node], deadline, answers, servers, counts)
    end
  end
  for _, t in ipairs(threads) do
    local ok, err = ngx.thread.wait(t)
    if not ok then counts.err = tostring(err) end
  end
  return answers, counts.err, counts.trips, counts.calls, servers
end

return cluster_renew
